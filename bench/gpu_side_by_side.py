#!/usr/bin/env python3
"""The GPU side by side: dtl against a hand-written LibTorch loop and a plain PyTorch loop (the
same torch), each contender a fresh process, rounds interleaved with the order rotated, on two
workloads: the deep MLP with Adam (48 parameter tensors: where per-tensor optimizers lose) and the
flagship CNN with SGD momentum (launch-bound). Prints the median ms/step per contender with its
range, and each contender's speed relative to the plain PyTorch loop's default and to the PyTorch
loop captured as one CUDA graph (>1: faster).

    gpu_side_by_side.py --build BUILD [--python PY] [--rounds R] [--batches N] [--markdown FILE]

BUILD holds bench/gpu_step (meson -Dbenchmarks=true). --markdown writes the table (device, torch,
date, commit) as docs/benchmarks.md's "On a GPU" section body. Determined's Trainer runs when
`determined` imports in PY; otherwise the table says it did not run.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

WORKLOADS = [("mlp", "adam", "deep MLP (24 x Linear 512, batch 256), Adam"),
             ("cnn", "sgd", "flagship CNN (batch 64), SGD momentum")]


def contenders(build, python):
    step = os.path.join(build, "bench", "gpu_step")
    py = [python, os.path.join(HERE, "gpu_step.py")]
    return [
        ("dtl (default: foreach on CUDA)", [step, "--runner=dtl", "--impl=default"]),
        ("dtl fused", [step, "--runner=dtl", "--impl=fused"]),
        ("dtl with cuda_graphs", [step, "--runner=dtl", "--impl=graphs"]),
        ("dtl single-tensor", [step, "--runner=dtl", "--impl=single"]),
        ("LibTorch hand loop (LibTorch's optimizer)", [step, "--runner=hand"]),
        ("PyTorch loop, torch.optim default", py + ["--impl", "default"]),
        ("PyTorch loop, fused=True", py + ["--impl", "fused"]),
        ("PyTorch loop, foreach=False", py + ["--impl", "single"]),
        ("PyTorch loop as one CUDA graph", py + ["--impl", "graph"]),
    ]


def run_one(cmd, model, optimizer, batches, warmup):
    if cmd[0].endswith(".py") or cmd[1].endswith(".py"):
        args = cmd + ["--model", model, "--optimizer", optimizer, "--batches", str(batches), "--warmup", str(warmup)]
    else:
        args = cmd + [f"--model={model}", f"--optimizer={optimizer}", f"--batches={batches}", f"--warmup={warmup}"]
    r = subprocess.run(args, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        return None, (r.stderr or r.stdout).strip().splitlines()[-1:] or ["exit %d" % r.returncode]
    for line in reversed(r.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)["ms_per_step"], None
    return None, ["no result line"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", required=True)
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--batches", type=int, default=500)
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--markdown")
    args = p.parse_args()

    info = subprocess.run([args.python, "-c", "import torch; print(torch.__version__, torch.version.cuda, "
                           "torch.cuda.get_device_name(0))"], capture_output=True, text=True).stdout.strip()
    commit = subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or "unknown"
    has_det = subprocess.run([args.python, "-c", "import determined"], capture_output=True).returncode == 0
    cs = contenders(args.build, args.python)
    lines = [f"device and torch: {info}; commit {commit}; {time.strftime('%Y-%m-%d', time.gmtime())}; "
             f"{args.rounds} rounds of {args.batches} steps after {args.warmup}, each a fresh process, order rotated"]
    for model, optimizer, title in WORKLOADS:
        times = {name: [] for name, _ in cs}
        errors = {}
        for r in range(args.rounds):
            order = cs[r % len(cs):] + cs[:r % len(cs)]
            if r % 2:
                order = list(reversed(order))
            for name, cmd in order:
                ms, err = run_one(cmd, model, optimizer, args.batches, args.warmup)
                if ms is None:
                    errors[name] = err
                else:
                    times[name].append(ms)
        base = statistics.median(times["PyTorch loop, torch.optim default"]) if times[
            "PyTorch loop, torch.optim default"] else None
        graph = statistics.median(times["PyTorch loop as one CUDA graph"]) if times[
            "PyTorch loop as one CUDA graph"] else None
        lines.append("")
        lines.append(f"**{title}**")
        lines.append("")
        lines.append("| contender | ms/step (median) | range | steps/s | vs PyTorch default | vs PyTorch CUDA graph |")
        lines.append("| --- | --- | --- | --- | --- | --- |")
        for name, _ in cs:
            t = times[name]
            if not t:
                lines.append(f"| {name} | did not run: {' '.join(errors.get(name, ['?']))} | | | | |")
                continue
            med = statistics.median(t)
            rel = f"{base / med:.2f}x" if base else "-"
            rel_graph = f"{graph / med:.2f}x" if graph else "-"
            lines.append(f"| {name} | {med:.3f} | {min(t):.3f}..{max(t):.3f} | {1e3 / med:.0f} | {rel} | {rel_graph} |")
        if not has_det:
            lines.append("| Determined's Trainer | did not run: `determined` is not installed for this Python | | | | |")
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
