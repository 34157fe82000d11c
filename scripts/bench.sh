#!/usr/bin/env bash
# Benchmarks, in optimized builds of their own: build-bench-torch2/ against the pinned LibTorch 2.x
# (.venv) and build-bench/ against Debian's 1.13. Every benchmark measures its baseline in the same
# run; tools/bench_table.py runs them all, measures the compile-time cost of <dtl/trainer.hpp>
# and a trial's rebuild from a precompiled <dtl/pch.hpp>, and writes one Markdown table per
# LibTorch (with the machine and its load) into docs/benchmarks.md. Full output:
# build-bench*/bench.log. About 25 minutes per LibTorch, 18 of them the compile-time rows.
#   scripts/bench.sh                     both LibTorch versions, the tables written into docs/
#   scripts/bench.sh --libtorch wheel    one of them (wheel or debian)
#   scripts/bench.sh --quick             fewer rounds, the tables printed only (a smoke run)
#   scripts/bench.sh --only trainer_overhead compile_time               printed only
#   scripts/bench.sh --libtorch wheel --only compile_time --rows-only   these rows written into the table
set -euo pipefail
cd "$(dirname "$0")/.."
which=(wheel debian)
if [ "${1:-}" = --libtorch ]; then
  which=("${2:?--libtorch takes wheel or debian}")
  shift 2
fi
bash scripts/setup.sh
for lt in "${which[@]}"; do
  case $lt in
    wheel) build=build-bench-torch2; torch=(-Dtorch_prefix=.venv/bin/python3) ;;
    debian) build=build-bench; torch=(-Dtorch_prefix=/usr) ;;
    *) echo "bench.sh: --libtorch takes wheel or debian, not $lt" >&2; exit 2 ;;
  esac
  if [ ! -f "$build/build.ninja" ]; then
    meson setup "$build" --buildtype=release -Dtests=false -Dexamples=false -Dbenchmarks=true "${torch[@]}" >/dev/null
  fi
  ninja -C "$build"
  /usr/bin/python3 tools/bench_table.py --libtorch "$lt" "$@"
done
