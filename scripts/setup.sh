#!/usr/bin/env bash
# Installs the Debian packages dtl needs to build, test (with --tests) and run its examples. Idempotent: it only
# asks apt for what `dpkg` does not already report as installed. As root it runs apt-get itself;
# otherwise it prints the command to run and fails, so nothing half-installed is built on.
set -euo pipefail

packages=(
  g++-12 meson ninja-build pkg-config     # build (g++ 12 is the only compiler that takes torch.h in C++20)
  libtorch-dev libgloo-dev                # LibTorch 1.13 (CPU) and c10d's Gloo backend
  libopenblas0-openmp                     # without it LibTorch runs the reference BLAS, ~15x slower
  nlohmann-json3-dev libyaml-cpp-dev      # hparams, metrics, experiment configs
  doctest-dev                             # tests
  dataset-fashion-mnist                   # real data for the flagship example
  python3-torch                           # interop tests and torchrun
  mkdocs                                  # the docs site (scripts/docs.sh)
  cmake zlib1g-dev                        # the CMake consumer test; zlib's crc32 checks checkpoints
)
# --tests: what only the test suite needs besides. A headless browser opens metrics.html at
# 1200x900 and checks its screenshot as a person would look (tests/tools/plot_metrics_test.sh).
if [ "${1:-}" = --tests ]; then
  packages+=(chromium-headless-shell)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} Debian packages present"
  exit 0
fi

cmd=(apt-get install -y --no-install-recommends "${missing[@]}")
if [ "$(id -u)" -ne 0 ]; then
  echo "setup: missing Debian packages: ${missing[*]}" >&2
  echo "setup: run as root:  sudo apt-get update && sudo ${cmd[*]}" >&2
  exit 1
fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
"${cmd[@]}"
