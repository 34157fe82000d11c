#!/usr/bin/env bash
# Benchmarks, in an optimized build of their own. Prints ratios against baselines measured in
# the same run; results are recorded in docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ ! -f build-bench/build.ninja ]; then
  meson setup build-bench --buildtype=release -Dtests=false -Dexamples=false -Dbenchmarks=true >/dev/null
fi
ninja -C build-bench
for b in build-bench/bench/*; do
  [ -x "$b" ] && [ -f "$b" ] || continue
  echo "== $(basename "$b")"
  "$b" "$@"
done
