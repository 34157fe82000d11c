#!/usr/bin/env python3
"""PyTorch's DistributedDataParallel over Gloo on the CPU, for tests/distributed/distributed_test.cpp:
the same steps dist_child takes with DTL_TEST_DDP_PARITY set (an MLP 784-256-10, each rank its own
batch, SGD lr 0.1, three steps). Rank 0 writes every parameter's float32 bytes after each step to
the file named by the first argument. Launch with torchrun (python3 -m torch.distributed.run
--nproc_per_node=N ddp_reference.py OUT); the C++ side must write the same bytes.
"""
import sys

import torch
import torch.distributed as dist
from torch import nn

torch.set_num_threads(1)
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10)))
torch.manual_seed(100 + rank)
x = torch.randn(8, 784)
y = torch.randint(0, 10, (8,))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
out = open(sys.argv[1], "wb") if rank == 0 else None
for _ in range(3):
    opt.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
    if out:
        for p in model.parameters():
            out.write(p.detach().contiguous().numpy().tobytes())
if out:
    out.close()
dist.destroy_process_group()
