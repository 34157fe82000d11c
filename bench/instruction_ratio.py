#!/usr/bin/env python3
"""The Trainer's overhead over a hand-written LibTorch loop in instructions, not time: each loop
of bench/trainer_overhead (--only=hand|dtl) runs under valgrind's callgrind for N1 and for N2
batches, and the instructions per batch are (I(N2) - I(N1)) / (N2 - N1), so everything that does
not grow with the batches (LibTorch's start-up, dtl::init, the final validation and checkpoint)
cancels out. Instruction counts do not move with this shared machine's load, which moves the
timed ratio by ±2-4% (docs/benchmarks.md); they are not time either: cache misses and branch
mispredictions are not counted. Prints one line per loop and the ratio.
--sim adds valgrind's simulated caches and branch predictor (--cache-sim=yes --branch-sim=yes) and
prints every event per batch, differenced the same way: data and instruction cache misses (D1, I1,
last level) and mispredicted branches, the costs an instruction count does not see. A simulation
of a generic cache, not this CPU's, so compare the two loops, not the figures with a timer.

    bench/instruction_ratio.py BUILD/bench/trainer_overhead [--shape tiny|784] [--n1 200] [--n2 600] [--sim]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile


def events(binary, only, shape, batches, sim):
    """valgrind's event totals for one run, by name: {"Ir": instructions, ...}."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "callgrind.out")
        env = dict(os.environ, OMP_NUM_THREADS="1")
        extra = ["--cache-sim=yes", "--branch-sim=yes"] if sim else []
        p = subprocess.run(["valgrind", "--tool=callgrind", *extra, f"--callgrind-out-file={out}", binary,
                            f"--only={only}", f"--shape={shape}", f"--batches={batches}", "--warmup=0"], env=env, capture_output=True,
                           text=True)
        if p.returncode != 0:
            sys.exit(f"{binary} --only={only} failed under valgrind:\n{p.stderr[-3000:]}")
        names = re.search(r"Events\s*: ([A-Za-z0-9 ]+)", p.stderr)
        counts = re.search(r"Collected : ([0-9 ]+)", p.stderr)
        if not names or not counts:
            sys.exit(f"no event counts in valgrind's output:\n{p.stderr[-2000:]}")
        return dict(zip(names.group(1).split(), map(int, counts.group(1).split())))


# valgrind's event names, for the --sim table
EVENT_NAMES = {"Ir": "instructions", "Dr": "data reads", "Dw": "data writes", "I1mr": "I1 misses",
               "D1mr": "D1 read misses", "D1mw": "D1 write misses", "ILmr": "LL instruction misses",
               "DLmr": "LL data read misses", "DLmw": "LL data write misses", "Bc": "conditional branches",
               "Bcm": "mispredicted conditional", "Bi": "indirect branches", "Bim": "mispredicted indirect"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binary")
    ap.add_argument("--shape", default="tiny")
    ap.add_argument("--n1", type=int, default=200)
    ap.add_argument("--n2", type=int, default=600)
    ap.add_argument("--sim", action="store_true", help="also simulate caches and branch prediction")
    a = ap.parse_args()
    per = {}
    for only in ("hand", "dtl"):
        e1 = events(a.binary, only, a.shape, a.n1, a.sim)
        e2 = events(a.binary, only, a.shape, a.n2, a.sim)
        per[only] = {k: (e2[k] - e1[k]) / (a.n2 - a.n1) for k in e1}
        print(f"{only:5s} {a.shape}: {per[only]['Ir']:12.0f} instructions/batch  (I({a.n1}) = {e1['Ir']}, "
              f"I({a.n2}) = {e2['Ir']})")
    if a.sim:
        print(f"\nper batch ({a.shape})         hand          dtl    dtl-hand")
        for k in per["hand"]:
            h, d = per["hand"][k], per["dtl"][k]
            print(f"{EVENT_NAMES.get(k, k):24s} {h:12.1f} {d:12.1f} {d - h:+11.1f}")
    print(f"ratio dtl/hand ({a.shape}): {per['dtl']['Ir'] / per['hand']['Ir']:.4f}")


if __name__ == "__main__":
    main()
