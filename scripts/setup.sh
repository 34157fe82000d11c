#!/usr/bin/env bash
# Installs what dtl needs to build, test (with --tests) and run its examples, idempotently:
#   1. Debian packages: it only asks apt for what `dpkg` does not already report as installed. As
#      root it runs apt-get itself; otherwise it prints the command to run and fails, so nothing
#      half-installed is built on.
#   2. The pinned LibTorch 2.x (scripts/requirements.txt: PyPI's torch wheel, numpy) in a virtual
#      environment inside the checkout, .venv/ (ignored by git), from Debian's python3; with
#      --tests also scripts/requirements-tests.txt. pip only runs when a pin is not yet met.
# --debian-only skips step 2 (a build on Debian's LibTorch 1.13 alone needs no download).
set -euo pipefail
cd "$(dirname "$0")/.."
tests=false
venv=true
for arg in "$@"; do
  case $arg in
    --tests) tests=true ;;
    --debian-only) venv=false ;;
    *) echo "setup: unknown argument $arg (--tests, --debian-only)" >&2; exit 2 ;;
  esac
done

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
  python3-venv                            # .venv/ for the pinned LibTorch 2.x wheel
  libcurl4-openssl-dev                    # the Determined cluster client (docs/cluster.md)
)
# --tests: what only the test suite needs besides. A headless browser opens metrics.html at
# 1200x900 and checks its screenshot as a person would look (tests/tools/plot_metrics_test.sh);
# Universal Ctags lists dtl's classes and functions (tests/tools/ctags_test.sh).
if $tests; then
  packages+=(chromium-headless-shell universal-ctags)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} Debian packages present"
else
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
fi

$venv || exit 0
# The virtual environment: Debian's python3 (on any machine the README's commands run on), pins
# from the requirement files. `pip install -r` of pins that are all met downloads nothing, but
# still takes seconds to resolve, so a stamp holding the files' checksum skips it when unchanged.
requirements=(scripts/requirements.txt)
$tests && requirements+=(scripts/requirements-tests.txt)
stamp=.venv/.dtl-requirements
want=$(cat "${requirements[@]}" | sha256sum | cut -d' ' -f1)
if [ -x .venv/bin/python3 ] && [ -f "$stamp" ] && grep -qx "$want" "$stamp"; then
  echo "setup: .venv has $(.venv/bin/python3 -c 'import torch; print("torch", torch.__version__)')"
  exit 0
fi
[ -x .venv/bin/python3 ] || /usr/bin/python3 -m venv .venv
echo "setup: installing ${requirements[*]} into .venv (the first time: ~5.5 GB, the torch wheel and its CUDA libraries)"
start=$(date +%s)
.venv/bin/python3 -m pip install --quiet --disable-pip-version-check "${requirements[@]/#/-r}"
cat "${requirements[@]}" | sha256sum | cut -d' ' -f1 >>"$stamp"
echo "setup: .venv ready in $(( $(date +%s) - start )) s: $(.venv/bin/python3 -c 'import torch; print("torch", torch.__version__)')"
