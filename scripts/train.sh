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
exec ./build-release/examples/fashion_mnist "$@"
