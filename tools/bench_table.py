#!/usr/bin/env python3
"""Runs every benchmark in build-bench/bench and writes one Markdown table into docs/benchmarks.md.

Each benchmark measures its baseline in the same run and prints its headline rows as lines that
start with "ROW |" (bench/table_row.hpp); this collects them in order, adds the compile-time rows
(measured here, interleaved: the cost of `#include <dtl/trainer.hpp>` over `<torch/torch.h>`
alone, and a trial's rebuild with a precompiled <dtl/pch.hpp> against libdtl), and writes the
table, the machine and its load between the markers in docs/benchmarks.md. The whole output of
every benchmark goes to build-bench/bench.log.

    tools/bench_table.py [--libtorch wheel|debian] [--quick] [--no-write] [--only NAME ...] [--rows-only]

--only runs some benchmarks and prints their rows; with --rows-only it also writes them into the
page's table, each replacing the row with the same first cell (a new row goes at the table's end),
and notes under the table when, on which commit and at what load they were measured.

--libtorch picks the build: build-bench-torch2/ against the pinned LibTorch 2.x in .venv (its
Python loop on that torch), or build-bench/ against Debian's 1.13 (Debian's python3-torch). Each
writes its own table into docs/benchmarks.md.
"""
import argparse
import datetime
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "benchmarks.md"
# Per LibTorch: the build directory, the Python whose torch it is, its include flags, the table's markers.
LIBTORCH = {
    "debian": dict(build=ROOT / "build-bench", python="/usr/bin/python3",
                   includes=["-isystem", "/usr/include/torch/csrc/api/include"],
                   begin="<!-- bench-table:begin (written by scripts/bench.sh; do not edit by hand) -->",
                   end="<!-- bench-table:end -->"),
    "wheel": dict(build=ROOT / "build-bench-torch2", python=str(ROOT / ".venv" / "bin" / "python3"),
                  includes=None,  # from the wheel, below
                  begin="<!-- bench-table-torch2:begin (written by scripts/bench.sh --libtorch wheel; do not edit by hand) -->",
                  end="<!-- bench-table-torch2:end -->"),
}
BUILD = None  # set by main() from --libtorch
BEGIN = END = None

# The same allocator settings for every contender: glibc's heap layout alone moves a GEMM step by
# +-30% on this VM (shared/reference/performance-notes.md).
BENCH_ENV = {
    "OMP_NUM_THREADS": "1",
    "GLIBC_TUNABLES": "glibc.malloc.trim_threshold=2000000000:glibc.malloc.mmap_threshold=1000000000:"
    "glibc.malloc.top_pad=67108864",
}

# name, arguments (full, quick), pinned to one core? A name ending in .py is a script in bench/
# run by this Python ({build}: the build directory); it pins its own processes.
BENCHES = [
    ("trainer_overhead", (["9", "--python=bench/python_loop.py", "--interpreter={python}"],
                          ["3", "--python=bench/python_loop.py", "--interpreter={python}"]), True),
    ("process_ratio.py", (["{build}/bench/trainer_overhead", "--rounds=15"],
                          ["{build}/bench/trainer_overhead", "--rounds=3"]), False),
    ("loader_bench", (["9"], ["3"]), False),
    ("sampler_bench", ([], []), True),
    ("checkpoint_bench", (["--rounds=7"], ["--rounds=3"]), True),
    ("lr_scheduler_bench", ([], []), True),
    ("amp_bench", (["7", "40"], ["3", "20"]), True),
    ("distributed_bench", (["3", "40"], ["1", "20"]), False),
]

COMPILE_FLAGS = ["-std=c++20", "-O2", "-D_GLIBCXX_USE_CXX11_ABI=1", "-DUSE_DISTRIBUTED", "-DUSE_C10D_GLOO",
                 "-I" + str(ROOT / "include")]
# The trial whose rebuild the precompiled-header row times: a small one (Determined's OneVar).
PCH_TRIAL = ROOT / "examples" / "onevar.cpp"
# The same trial with its bodies in a file of their own: what an edit of train_batch recompiles.
SPLIT_TRIAL = ROOT / "examples" / "onevar_split" / "onevar_trial.cpp"
# The same bodies written against LibTorch alone: what any LibTorch translation unit pays at -O2.
HAND_BODY = ROOT / "bench" / "onevar_libtorch_body.cpp"


def wheel_includes(python):
    """The wheel's LibTorch include dirs, plus dtl's Gloo declarations (the wheel has no Gloo headers)."""
    prefix = subprocess.run([python, "-c", "import os, torch; print(os.path.dirname(torch.__file__))"],
                            capture_output=True, text=True, check=True).stdout.strip()
    return ["-isystem", f"{prefix}/include", "-isystem", f"{prefix}/include/torch/csrc/api/include",
            "-isystem", str(ROOT / "include" / "dtl" / "detail" / "gloo_declarations")]


def machine(libtorch):
    cpu = "unknown CPU"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem = 0
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal"):
            mem = int(line.split()[1]) / 1024 / 1024
    gxx = subprocess.run(["g++-12", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    blas = "?"
    if libtorch == "wheel":
        blas = "the wheel's own (MKL)"  # torch wheels link MKL statically; the system BLAS is unused
    else:
        for cand in Path("/etc/alternatives").glob("libblas.so.3*"):
            blas = os.path.realpath(cand)
            break
    return f"{cpu}, {os.cpu_count()} cores, {mem:.0f} GiB; {platform.platform()}; {gxx}; BLAS {blas}"


def torch_version(python):
    return subprocess.run([python, "-c", "import torch; print(torch.__version__)"], capture_output=True,
                          text=True).stdout.strip() or "?"


def load():
    return "%.2f %.2f %.2f" % os.getloadavg()


def compile_seconds(source, includes, extra=(), output=os.devnull):
    """CPU seconds (user + system) of one g++ run: less sensitive to a shared machine than wall time.
    A source ending in .hpp is compiled as a precompiled header into `output`."""
    what = ["-x", "c++-header", str(source)] if str(source).endswith(".hpp") else ["-c", str(source)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(["g++-12", *COMPILE_FLAGS, *includes, *extra, *what, "-o", str(output)], check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def compile_time_rows(rounds, includes, log):
    """An empty main with <torch/torch.h> alone, with <dtl/trainer.hpp> header-only, and with it
    against libdtl (DTL_COMPILED_LIB: the headers declare, src/dtl.cpp defines); and a trial
    (PCH_TRIAL) rebuilt against libdtl with <dtl/pch.hpp> precompiled once, before the rounds, with
    the same flags; and the yardstick under them at -O2, the same bodies written against LibTorch
    alone (HAND_BODY) from a precompiled <torch/torch.h>. Interleaved, the order rotating each round."""
    work = BUILD / "compile-time"
    work.mkdir(parents=True, exist_ok=True)
    torch_only = work / "torch_only.cpp"
    trainer = work / "trainer.cpp"
    torch_only.write_text("#include <torch/torch.h>\nint main() {}\n")
    trainer.write_text("#include <dtl/trainer.hpp>\nint main() {}\n")
    # The .gch alone, without the header beside it: a PCH that g++ rejects (flags that differ)
    # fails the compile, instead of timing one that parses the headers.
    gch = work / "pch" / "dtl" / "pch.hpp.gch"
    gch.parent.mkdir(parents=True, exist_ok=True)
    compiled_lib = ("-DDTL_COMPILED_LIB",)
    pch_build = compile_seconds(ROOT / "include" / "dtl" / "pch.hpp", includes, compiled_lib, output=gch)
    pch_mb = gch.stat().st_size / 1e6
    log.write(f"== compile time: the precompiled <dtl/pch.hpp> (DTL_COMPILED_LIB) took {pch_build:.1f} s, "
              f"{pch_mb:.0f} MB\n")
    with_pch = compiled_lib + ("-Winvalid-pch", "-include", str(gch.with_suffix("")))
    # The edit loop at -O0 (a debug build): the same split trial from a .gch built at -O0, against the
    # empty torch.h main at -O0 (a later -O overrides COMPILE_FLAGS' -O2).
    o0 = ("-O0",)
    gch0 = work / "pch-O0" / "dtl" / "pch.hpp.gch"
    gch0.parent.mkdir(parents=True, exist_ok=True)
    pch0_build = compile_seconds(ROOT / "include" / "dtl" / "pch.hpp", includes, o0 + compiled_lib, output=gch0)
    log.write(f"== compile time: the precompiled <dtl/pch.hpp> at -O0 took {pch0_build:.1f} s\n")
    with_pch0 = o0 + compiled_lib + ("-Winvalid-pch", "-include", str(gch0.with_suffix("")))
    # The yardstick's precompiled header: <torch/torch.h> alone, at -O2.
    torch_header = work / "torch_pch.hpp"
    torch_header.write_text("#include <torch/torch.h>\n")
    torch_gch = work / "pch-torch" / "torch_pch.hpp.gch"
    torch_gch.parent.mkdir(parents=True, exist_ok=True)
    torch_pch_build = compile_seconds(torch_header, includes, output=torch_gch)
    with_torch_pch = ("-Winvalid-pch", "-include", str(torch_gch.with_suffix("")))
    contenders = [(torch_only, ()), (trainer, ()), (trainer, compiled_lib), (PCH_TRIAL, with_pch),
                  (SPLIT_TRIAL, with_pch), (torch_only, o0), (SPLIT_TRIAL, with_pch0), (HAND_BODY, with_torch_pch)]
    times = [[] for _ in contenders]
    for r in range(rounds):
        for k in range(len(contenders)):
            i = (k + r) % len(contenders)
            times[i].append(compile_seconds(contenders[i][0], includes, contenders[i][1]))
    med = lambda v: sorted(v)[len(v) // 2]  # noqa: E731
    base, header, compiled, trial, split, base0, split0, hand = (med(t) for t in times)
    log.write(f"== compile time, {rounds} rounds: torch.h {times[0]} s, trainer.hpp {times[1]} s, "
              f"trainer.hpp with DTL_COMPILED_LIB {times[2]} s, {PCH_TRIAL.name} with the PCH {times[3]} s, "
              f"onevar_split/{SPLIT_TRIAL.name} with the PCH {times[4]} s; at -O0: torch.h {times[5]} s, "
              f"onevar_split/{SPLIT_TRIAL.name} with the -O0 PCH {times[6]} s; {HAND_BODY.name} with the "
              f"precompiled torch.h (built in {torch_pch_build:.1f} s) {times[7]} s\n")
    def row(what, t, yardstick, target=None):
        """One table row in CPU seconds; `target` ("< 1.15", "<= 0.5") bounds the ratio, None: no target."""
        ratio = t / yardstick
        met = ""
        if target:
            op, bound = target.split()
            met = "yes" if (ratio < float(bound) if op == "<" else ratio <= float(bound)) else "**no**"
        return f"| {what} (CPU s) | {t:.1f} s | {yardstick:.1f} s | {ratio:.3f} | {target or '—'} | {met} |"

    torch_main = "an empty `main` with `<torch/torch.h>`"
    split_name = f"`examples/onevar_split/{SPLIT_TRIAL.name}`"
    hand_name = f"`bench/{HAND_BODY.name}`"
    rows = [row(f"Compile an empty `main` at -O2: `#include <dtl/trainer.hpp>` {what} vs `<torch/torch.h>` alone",
                t, base, "< 1.15")
            for what, t in (("header-only", header), ("with libdtl (`DTL_COMPILED_LIB`)", compiled))]
    rows += [
        row(f"Rebuild a trial at -O2 (`examples/{PCH_TRIAL.name}`) against libdtl with a precompiled "
            f"`<dtl/pch.hpp>` vs {torch_main}", trial, base, "<= 0.5"),
        row(f"Rebuild a trial at -O2 after an edit of `train_batch`, its bodies in a file of their own "
            f"({split_name}), against libdtl with a precompiled `<dtl/pch.hpp>` vs {torch_main}",
            split, base, "<= 0.5"),
        row(f"The same rebuild at -O0, the edit loop of a debug build ({split_name} with `<dtl/pch.hpp>` "
            f"precompiled at -O0, against libdtl) vs {torch_main} at -O0", split0, base0, "<= 0.5"),
        row(f"The -O2 yardstick: the same bodies written against LibTorch alone ({hand_name}), from a "
            f"precompiled `<torch/torch.h>`, vs {torch_main}", hand, base),
        row(f"dtl's share of the -O2 rebuild: {split_name} from `<dtl/pch.hpp>` against libdtl vs the same "
            f"bodies by hand ({hand_name}) from `<torch/torch.h>`", split, hand),
    ]
    return rows, (f"the precompiled `<dtl/pch.hpp>` took {pch_build:.1f} s once ({pch_mb:.0f} MB), "
                  f"{pch0_build:.1f} s at -O0; the precompiled `<torch/torch.h>` {torch_pch_build:.1f} s")


def run_bench(name, args, pinned, python, log):
    args = [a.format(python=python, build=BUILD) for a in args]
    exe = [sys.executable, str(ROOT / "bench" / name)] if name.endswith(".py") else [str(BUILD / "bench" / name)]
    cmd = (["taskset", "-c", "1"] if pinned and os.cpu_count() > 1 else []) + [*exe, *args]
    env = dict(os.environ, **BENCH_ENV)
    log.write(f"== {' '.join(cmd)}\n")
    log.flush()
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    log.write(proc.stdout)
    log.write(proc.stderr)
    log.write(f"== {name}: exit {proc.returncode}, {time.monotonic() - t0:.0f} s\n")
    log.flush()
    sys.stdout.write(proc.stdout)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        raise SystemExit(f"{name} failed with exit status {proc.returncode}; see {BUILD / 'bench.log'}")
    return [line[len("ROW "):] for line in proc.stdout.splitlines() if line.startswith("ROW |")]


def write_doc(block):
    text = DOC.read_text()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{DOC} has no {BEGIN} ... {END} markers")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    DOC.write_text(head + BEGIN + "\n" + block + END + tail)


def first_cell(row):
    return row.split("|")[1].strip()


def write_rows(rows, note, stale=()):
    """--rows-only: each row replaces the table's row with the same first cell (a new one goes at the
    end of the table); `note` replaces the note a --rows-only run left under the table before, and
    the lines starting with one of `stale` go (what a full run wrote of the rows measured again)."""
    text = DOC.read_text()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{DOC} has no {BEGIN} ... {END} markers")
    head, rest = text.split(BEGIN, 1)
    block, tail = rest.split(END, 1)
    lines = block.split("\n")
    table = [n for n, line in enumerate(lines) if line.startswith("| ")]
    if not table:
        raise SystemExit(f"{DOC}: no table between {BEGIN} and {END}; run a full scripts/bench.sh first")
    for row in rows:
        same = [n for n in table if first_cell(lines[n]) == first_cell(row)]
        if same:
            lines[same[0]] = row
        else:
            table.append(table[-1] + 1)
            lines.insert(table[-1], row)
    lines = [line for line in lines if not line.startswith((ROWS_NOTE, *stale))]
    end = max(n for n, line in enumerate(lines) if line.startswith("| "))
    after = [line for line in lines[end + 1:] if line.strip()]
    # (a blank line ends the table: a line right below it would be read as one more row)
    lines = lines[:end + 1] + [""] + [f"{ROWS_NOTE} {note}"] + after + [""]
    DOC.write_text(head + BEGIN + "\n".join(lines) + END + tail)


ROWS_NOTE = "Rows re-measured alone (--rows-only):"
COMPILE_NOTE = "Compile time:"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer rounds (a smoke run; not for the docs)")
    ap.add_argument("--no-write", action="store_true", help="print the table, leave docs/ alone")
    ap.add_argument("--only", nargs="*", help="benchmarks to run (names as in build-bench/bench)")
    ap.add_argument("--libtorch", choices=sorted(LIBTORCH), default="wheel",
                    help="which build: the pinned LibTorch 2.x (wheel, default) or Debian's 1.13")
    ap.add_argument("--rows-only", action="store_true",
                    help="with --only: write the rows measured into the page's table, the other rows left as they are")
    opts = ap.parse_args()
    global BUILD, BEGIN, END
    lt = LIBTORCH[opts.libtorch]
    BUILD, BEGIN, END = lt["build"], lt["begin"], lt["end"]
    python = lt["python"]
    includes = lt["includes"] or wheel_includes(python)

    started = datetime.datetime.now(datetime.timezone.utc)
    load_before = load()
    rows = []
    compile_note = ""
    with open(BUILD / "bench.log", "w") as log:
        for name, (full, quick), pinned in BENCHES:
            if opts.only and name not in opts.only:
                continue
            print(f"== {name}", flush=True)
            rows += run_bench(name, quick if opts.quick else full, pinned, python, log)
        if not opts.only or "compile_time" in opts.only:
            print("== compile time", flush=True)
            compile_rows, compile_note = compile_time_rows(1 if opts.quick else 5, includes, log)
            rows += compile_rows
    load_after = load()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip() or "?"
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                           text=True).stdout.strip()
    minutes = (datetime.datetime.now(datetime.timezone.utc) - started).total_seconds() / 60
    block = "\n".join([
        f"Measured {started:%Y-%m-%d %H:%M} UTC on commit `{commit}`{' (with local changes)' if dirty else ''}"
        f"{' — a --quick run, fewer rounds' if opts.quick else ''}, in {minutes:.0f} min.",
        f"LibTorch {torch_version(python)} ({'PyPI wheel, .venv' if opts.libtorch == 'wheel' else 'Debian'}); "
        f"the Python loop on that torch.",
        f"Machine: {machine(opts.libtorch)}.",
        f"Load average (1, 5, 15 min) before: {load_before}; after: {load_after}.",
        "Benchmarks pinned to one core where marked in tools/bench_table.py; 1 intra-op thread; the same glibc "
        "malloc tunables for every contender.",
        "",
        "| benchmark | dtl | baseline | ratio | target | met |",
        "| --- | --- | --- | --- | --- | --- |",
        *rows,
        *(["", f"{COMPILE_NOTE} {compile_note}."] if compile_note else []),
        "",
    ])
    print()
    print(block)
    if opts.rows_only and not opts.no_write and not opts.quick and opts.only:
        note = (f"{', '.join(opts.only)}, {started:%Y-%m-%d %H:%M} UTC on commit `{commit}`"
                f"{' (with local changes)' if dirty else ''}, load before {load_before}, after {load_after}"
                f"{'; ' + compile_note if compile_note else ''}.")
        write_rows(rows, note, (COMPILE_NOTE,) if compile_note else ())
        print(f"{len(rows)} rows written into {DOC.relative_to(ROOT)}")
    elif not opts.no_write and not opts.quick and not opts.only:
        write_doc(block)
        print(f"written into {DOC.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
