#!/usr/bin/env python3
"""The GPU side by side's Python contenders: bench/gpu_step.cpp's models, data and optimizers in a
plain PyTorch loop (bench/gpu_side_by_side.py runs each as a fresh process).

    gpu_step.py --model mlp|cnn --optimizer adam|sgd --impl default|fused|single|graph
                [--batches N] [--warmup W]

--impl: torch.optim's default (foreach on CUDA), fused=True, foreach=False, or `graph`: the whole
step (forward, backward, optimizer) captured once as a CUDA graph after warm-up iterations on a
side stream, batches copied into static input buffers and the graph replayed (torch.cuda.graphs'
whole-network recipe; Adam with capturable=True). The loss is kept on the device and its mean read
every 100 batches, as the C++ loops do. Prints one JSON line with ms_per_step.
"""
import argparse
import json
import time

import torch
import torch.nn.functional as F


class Cnn(torch.nn.Module):  # examples/fashion_mnist.cpp's Net(16, 32, 0.25)
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 16, 3)
        self.conv2 = torch.nn.Conv2d(16, 32, 3)
        self.fc1 = torch.nn.Linear(32 * 5 * 5, 128)
        self.fc2 = torch.nn.Linear(128, 10)
        self.drop = torch.nn.Dropout(0.25)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = self.drop(F.relu(self.fc1(x.flatten(1))))
        return F.log_softmax(self.fc2(x), 1)


def make(args, dev):
    torch.manual_seed(1)
    if args.model == "cnn":
        model = Cnn().to(dev)
        loss_fn = lambda x, y: F.nll_loss(model(x), y)  # noqa: E731
        batch = 64
    else:
        layers = []
        for i in range(24):
            layers.append(torch.nn.Linear(512, 512))
            if i + 1 < 24:
                layers.append(torch.nn.ReLU())
        model = torch.nn.Sequential(*layers).to(dev)
        loss_fn = lambda x, y: F.cross_entropy(model(x)[:, :10], y)  # noqa: E731
        batch = 256
    kw = {}
    if args.impl == "fused":
        kw["fused"] = True
    elif args.impl == "single":
        kw["foreach"] = False
    elif args.impl == "graph" and args.optimizer == "adam":
        kw["capturable"] = True
    if args.optimizer == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, **kw)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, **kw)
    torch.manual_seed(0)
    n = 8 * batch
    x = torch.randn(n, 1, 28, 28) if args.model == "cnn" else torch.randn(n, 512)
    y = torch.randint(10, (n,))
    return model, loss_fn, opt, x.to(dev), y.to(dev), batch


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="mlp", choices=["mlp", "cnn"])
    p.add_argument("--optimizer", default="adam", choices=["adam", "sgd"])
    p.add_argument("--impl", default="default", choices=["default", "fused", "single", "graph"])
    p.add_argument("--batches", type=int, default=400)
    p.add_argument("--warmup", type=int, default=100)
    args = p.parse_args()
    dev = torch.device("cuda")
    model, loss_fn, opt, x, y, batch = make(args, dev)
    per_epoch = x.shape[0] // batch

    step = None
    if args.impl == "graph":
        static_x = x[:batch].clone()
        static_y = y[:batch].clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                opt.zero_grad(set_to_none=True)
                loss_fn(static_x, static_y).backward()
                opt.step()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(graph):
            static_loss = loss_fn(static_x, static_y)
            static_loss.backward()
            opt.step()

        def step(xb, yb):
            static_x.copy_(xb)
            static_y.copy_(yb)
            graph.replay()
            return static_loss.detach().clone()
    else:
        def step(xb, yb):
            loss = loss_fn(xb, yb)
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss.detach()

    losses = []
    t0 = None
    for b in range(args.warmup + args.batches):
        if b == args.warmup:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
        first = (b % per_epoch) * batch
        losses.append(step(x[first:first + batch], y[first:first + batch]))
        if len(losses) == 100:
            torch.stack(losses).mean().item()
            losses.clear()
    torch.cuda.synchronize()
    ms = (time.perf_counter() - t0) * 1e3 / args.batches
    print(json.dumps({"runner": "python", "model": args.model, "optimizer": args.optimizer, "impl": args.impl,
                      "ms_per_step": ms, "steps": args.batches}))


if __name__ == "__main__":
    main()
