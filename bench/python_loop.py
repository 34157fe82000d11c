#!/usr/bin/env python3
"""The hand-written training loop of bench/trainer_overhead.cpp, in Python on the torch beside the
benchmark's LibTorch (Debian's python3-torch, or the wheel in .venv).

Same model (Linear-ReLU-Linear), same data shapes and sizes (randn inputs, randint labels, 100
batches per epoch), same batches (slices of the data, in order: views, no copy), same optimizer
(SGD lr 0.01, momentum 0.9), the loss kept on the device and its mean logged every 100 batches.
Prints the time per batch in microseconds of one run after a warm-up of a quarter of it.

    python_loop.py IN HIDDEN OUT BATCH BATCHES
"""
import sys
import time

import torch

# What LibTorch's C++ zero_grad() does in this version: 1.13 zeroes in place, 2.x sets to None.
SET_TO_NONE = int(torch.__version__.split(".")[0]) >= 2


def run(model, opt, x_all, y_all, batch, batches):
    n = x_all.shape[0]
    per_epoch = (n + batch - 1) // batch
    losses = []
    t0 = time.perf_counter()
    for b in range(batches):
        first = (b % per_epoch) * batch
        length = min(batch, n - first)
        x = x_all[first:first + length]
        y = y_all[first:first + length]
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=SET_TO_NONE)
        losses.append(loss.detach())
        if len(losses) == 100:
            sink = torch.stack(losses).mean().item()  # noqa: F841 -- logged, as the C++ loop does
            losses.clear()
    return (time.perf_counter() - t0) * 1e6 / batches


def main():
    d_in, hidden, d_out, batch, batches = (int(a) for a in sys.argv[1:6])
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(d_in, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, d_out))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    torch.manual_seed(1)
    n = batch * 100
    x_all = torch.randn(n, d_in)
    y_all = torch.randint(d_out, (n,))
    run(model, opt, x_all, y_all, batch, max(1, batches // 4))  # warm-up
    print(f"{run(model, opt, x_all, y_all, batch, batches):.3f}")


if __name__ == "__main__":
    main()
