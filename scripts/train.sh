#!/usr/bin/env bash
# The main job: install what is missing, build the flagship example optimized, and train it on
# Fashion-MNIST (Debian's dataset-fashion-mnist) with validation, metrics and checkpoints.
# Extra arguments go to the program (see --help), e.g.  scripts/train.sh --max-length batches=300
# `--nproc N` (first) trains data-parallel on N processes through torchrun (docs/distributed.md).
set -euo pipefail
cd "$(dirname "$0")/.."
nproc=1
if [ "${1:-}" = "--nproc" ]; then
  nproc=${2:?"--nproc needs a number of processes"}
  shift 2
fi
bash scripts/setup.sh
if [ ! -f build-release/build.ninja ]; then
  meson setup build-release --buildtype=release -Dtests=false -Dexamples=true >/dev/null
fi
ninja -C build-release examples/fashion_mnist
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if [ "$nproc" -gt 1 ]; then
  # Debian's torchrun crashes with its default --redirects/--tee on Python 3.11: a per-rank map
  # that names no existing rank keeps every rank's output on the console.
  torchrun --redirects 9:1 --tee 9:1 --nproc_per_node="$nproc" --master_port="${MASTER_PORT:-29500}" \
    --no_python ./build-release/examples/fashion_mnist "$@" | tee "$log"
else
  ./build-release/examples/fashion_mnist "$@" | tee "$log"
fi
status=${PIPESTATUS[0]}
# Curves for people who would rather look than read: metrics.jsonl -> a self-contained HTML chart.
run_dir=$(sed -n 's/^run directory: //p' "$log" | tail -n1)
if [ "$status" -eq 0 ] && [ -n "$run_dir" ] && [ -f "$run_dir/metrics.jsonl" ]; then
  python3 tools/plot_metrics.py "$run_dir/metrics.jsonl" -o "$run_dir/metrics.html" || true
  echo "TensorBoard: tensorboard --logdir $run_dir/tensorboard"
fi
exit "$status"
