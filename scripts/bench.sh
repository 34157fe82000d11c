#!/usr/bin/env bash
# Benchmarks, in an optimized build of their own (build-bench/). Every benchmark measures its
# baseline in the same run; tools/bench_table.py runs them all, measures the compile-time cost of
# <dtl/trainer.hpp>, and writes one Markdown table (with the machine and its load) into
# docs/benchmarks.md. Full output: build-bench/bench.log. About 15 minutes.
#   scripts/bench.sh            all benchmarks, the table written into docs/
#   scripts/bench.sh --quick    fewer rounds, the table printed only (a smoke run)
#   scripts/bench.sh --only trainer_overhead compile_time
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ ! -f build-bench/build.ninja ]; then
  meson setup build-bench --buildtype=release -Dtests=false -Dexamples=false -Dbenchmarks=true >/dev/null
fi
ninja -C build-bench
exec /usr/bin/python3 tools/bench_table.py "$@"
