#!/usr/bin/env python3
"""The Trainer's overhead over a hand-written LibTorch loop, timed one process per run: the method
of shared/reference/performance-notes.md. Every round runs `trainer_overhead --only=hand` and
`--only=dtl` as two fresh processes (who goes first alternates), each pinned to the same core,
with one intra-op thread and the same glibc malloc settings (tools/bench_table.py's), each timing
its own loop after a warm-up of the same loop. A process of its own gives each loop a heap and an
address layout (ASLR) of its own, drawn anew every round, where trainer_overhead's in-process
rounds give the second loop whatever the first one left: on this VM the layout alone moves a
step by several per cent, so one process's layout is a sample, not a property of the code.

Prints every round and, per model, the median of the per-round ratios dtl/hand with min..max,
the ratio of the medians, and the load average before and after; then one "ROW |" line per model
for tools/bench_table.py (target: the median per-round ratio <= 1.02).

    bench/process_ratio.py BUILD/bench/trainer_overhead [--shape tiny 784] [--rounds 15] [--core 1] [--metrics 1]

--metrics 0 has dtl's train_batch return no metrics (nothing to collect or report), 5 five: with 1
(the default, as the hand-written loop keeps its loss) the difference is the cost of reporting.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
from bench_table import BENCH_ENV  # noqa: E402  the one definition of the allocator settings



def per_batch(binary, only, shape, core, metrics):
    """(the model's name, µs per batch) of one process: trainer_overhead's own batches and warm-up."""
    cmd = ["taskset", "-c", str(core), binary, f"--only={only}", f"--shape={shape}"] + \
        ([f"--metrics={metrics}"] if only == "dtl" else [])
    p = subprocess.run(cmd, env=dict(os.environ, **BENCH_ENV), capture_output=True, text=True)
    m = re.match(rf"{only} (.+) \d+ batches: ([0-9.]+) us/batch", p.stdout)
    if p.returncode != 0 or not m:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
    return m.group(1), float(m.group(2))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binary")
    ap.add_argument("--shape", nargs="+", default=["tiny", "784"], choices=("tiny", "784"))
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--metrics", type=int, default=1, choices=(0, 1, 5), help="metrics dtl's train_batch returns")
    ap.add_argument("--core", type=int, default=min(1, os.cpu_count() - 1), help="the core every process is pinned to")
    a = ap.parse_args()
    if a.metrics != 1:
        print(f"dtl's train_batch returns {a.metrics} metrics")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    summary, rows = [], []
    for shape in a.shape:
        hand, dtl, ratios = [], [], []
        for r in range(a.rounds):
            order = ("hand", "dtl") if r % 2 == 0 else ("dtl", "hand")
            got = {}
            for only in order:
                name, got[only] = per_batch(a.binary, only, shape, a.core, a.metrics)
            hand.append(got["hand"])
            dtl.append(got["dtl"])
            ratios.append(got["dtl"] / got["hand"])
            print(f"{shape:4s} round {r + 1:2d} ({order[0]} first): hand {got['hand']:8.2f}  dtl {got['dtl']:8.2f}"
                  f"  us/batch  ratio {ratios[-1]:.3f}", flush=True)
        med = statistics.median(ratios)
        line = (f"{shape}: median of {a.rounds} per-round ratios dtl/hand {med:.3f} [{min(ratios):.3f}..{max(ratios):.3f}];"
                f" medians {statistics.median(dtl):.2f} / {statistics.median(hand):.2f} us/batch"
                f" = {statistics.median(dtl) / statistics.median(hand):.3f}")
        summary.append(line)
        if a.metrics != 1:
            continue  # the table's rows are the default comparison's
        rows.append(f"ROW | Trainer vs hand-written LibTorch loop, {name}, one process per run "
                    f"(median of {a.rounds} paired rounds; rounds {min(ratios):.3f}..{max(ratios):.3f}) | "
                    f"{statistics.median(dtl):.2f} µs/batch | {statistics.median(hand):.2f} µs/batch | {med:.3f} | "
                    f"<= 1.02 | {'yes' if med <= 1.02 else '**no**'} |")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("\n".join(summary + rows))


if __name__ == "__main__":
    main()
