#!/usr/bin/env bash
# The main job: install what is missing, build the flagship example optimized, and train it on
# Fashion-MNIST (Debian's dataset-fashion-mnist) with validation, metrics and checkpoints.
# It builds against the pinned LibTorch 2.x (PyPI's torch wheel in .venv, scripts/requirements.txt)
# in the CUDA configuration: it trains on cuda:0 where there is a GPU, else on the CPU.
# Options first, then arguments for the program (see --help), e.g.
#   scripts/train.sh --max-length batches=300
#   scripts/train.sh --nproc 2                # data-parallel on 2 processes through torchrun (docs/distributed.md)
#   scripts/train.sh --libtorch debian        # Debian's LibTorch 1.13 instead (no .venv download)
set -euo pipefail
cd "$(dirname "$0")/.."
nproc=1
libtorch=wheel
while [ $# -gt 0 ]; do
  case $1 in
    --nproc) nproc=${2:?"--nproc needs a number of processes"}; shift 2 ;;
    --libtorch) libtorch=${2:?"--libtorch needs wheel or debian"}; shift 2 ;;
    *) break ;;
  esac
done
case $libtorch in
  wheel) bash scripts/setup.sh; build=build-release; torch=(-Dtorch_prefix=.venv/bin/python3 -Dcuda=true)
         python=.venv/bin/python3 ;;
  debian) bash scripts/setup.sh --debian-only; build=build-release-debian; torch=(-Dtorch_prefix=/usr)
          python=/usr/bin/python3 ;;
  *) echo "train.sh: --libtorch takes wheel or debian, not $libtorch" >&2; exit 2 ;;
esac
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" --buildtype=release -Dtests=false -Dexamples=true "${torch[@]}" >/dev/null
fi
ninja -C "$build" examples/fashion_mnist
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if [ "$nproc" -gt 1 ]; then
  # torchrun of the same torch (its agent's store speaks this LibTorch's protocol). Debian's
  # crashes with its default --redirects/--tee on Python 3.11: a per-rank map that names no
  # existing rank keeps every rank's output on the console.
  "$python" -m torch.distributed.run --redirects 9:1 --tee 9:1 --nproc_per_node="$nproc" \
    --master_port="${MASTER_PORT:-29500}" --no_python "./$build/examples/fashion_mnist" "$@" | tee "$log"
else
  "./$build/examples/fashion_mnist" "$@" | tee "$log"
fi
status=${PIPESTATUS[0]}
# Curves for people who would rather look than read: metrics.jsonl -> a self-contained HTML chart.
run_dir=$(sed -n 's/^run directory: //p' "$log" | tail -n1)
if [ "$status" -eq 0 ] && [ -n "$run_dir" ] && [ -f "$run_dir/metrics.jsonl" ]; then
  python3 tools/plot_metrics.py "$run_dir/metrics.jsonl" -o "$run_dir/metrics.html" || true
  echo "TensorBoard: tensorboard --logdir $run_dir/tensorboard"
fi
exit "$status"
