#!/usr/bin/env bash
# The main job: install what is missing, build the flagship example optimized, and train it on
# Fashion-MNIST (Debian's dataset-fashion-mnist) with validation, metrics and checkpoints.
# Extra arguments go to the program (see --help), e.g.  scripts/train.sh --max-length batches=300
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ ! -f build-release/build.ninja ]; then
  meson setup build-release --buildtype=release -Dtests=false -Dexamples=true >/dev/null
fi
ninja -C build-release examples/fashion_mnist
log=$(mktemp)
trap 'rm -f "$log"' EXIT
./build-release/examples/fashion_mnist "$@" | tee "$log"
status=${PIPESTATUS[0]}
# Curves for people who would rather look than read: metrics.jsonl -> a self-contained HTML chart.
run_dir=$(sed -n 's/^run directory: //p' "$log" | tail -n1)
if [ "$status" -eq 0 ] && [ -n "$run_dir" ] && [ -f "$run_dir/metrics.jsonl" ]; then
  python3 tools/plot_metrics.py "$run_dir/metrics.jsonl" -o "$run_dir/metrics.html" || true
  echo "TensorBoard: tensorboard --logdir $run_dir/tensorboard"
fi
exit "$status"
