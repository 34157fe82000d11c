#!/usr/bin/env python3
"""The Trainer's overhead over a hand-written LibTorch loop in instructions, not time: each loop
of bench/trainer_overhead (--only=hand|dtl) runs under valgrind's callgrind for N1 and for N2
batches, and the instructions per batch are (I(N2) - I(N1)) / (N2 - N1), so everything that does
not grow with the batches (LibTorch's start-up, dtl::init, the final validation and checkpoint)
cancels out. Instruction counts do not move with this shared machine's load, which moves the
timed ratio by ±2-4% (docs/benchmarks.md); they are not time either: cache misses and branch
mispredictions are not counted. Prints one line per loop and the ratio.

    bench/instruction_ratio.py BUILD/bench/trainer_overhead [--shape tiny|784] [--n1 200] [--n2 600]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile


def instructions(binary, only, shape, batches):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "callgrind.out")
        env = dict(os.environ, OMP_NUM_THREADS="1")
        p = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", binary, f"--only={only}",
                            f"--shape={shape}", f"--batches={batches}"], env=env, capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"{binary} --only={only} failed under valgrind:\n{p.stderr[-3000:]}")
        m = re.search(r"Collected : (\d+)", p.stderr)
        if not m:
            sys.exit(f"no instruction count in valgrind's output:\n{p.stderr[-2000:]}")
        return int(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binary")
    ap.add_argument("--shape", default="tiny")
    ap.add_argument("--n1", type=int, default=200)
    ap.add_argument("--n2", type=int, default=600)
    a = ap.parse_args()
    per = {}
    for only in ("hand", "dtl"):
        i1 = instructions(a.binary, only, a.shape, a.n1)
        i2 = instructions(a.binary, only, a.shape, a.n2)
        per[only] = (i2 - i1) / (a.n2 - a.n1)
        print(f"{only:5s} {a.shape}: {per[only]:12.0f} instructions/batch  (I({a.n1}) = {i1}, I({a.n2}) = {i2})")
    print(f"ratio dtl/hand ({a.shape}): {per['dtl'] / per['hand']:.4f}")


if __name__ == "__main__":
    main()
