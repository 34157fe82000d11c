#!/usr/bin/env bash
# The GPU check: builds dtl's CUDA configuration against this machine's CUDA LibTorch and runs
# what only a GPU can run (docs/building.md, "The GPU check"):
#   1. tests/dtl_cuda_tests: the model and batches on cuda:0, pinned batches; autocast in float16
#      and bfloat16; GradScaler skipping a real float16 overflow; a checkpoint written on the GPU
#      resuming bit for bit (the CUDA generator included); NCCL on one rank; the gradient
#      all-reduce on CUDA tensors; Kineto traces holding the GPU's kernels;
#   2. the flagship (Fashion-MNIST) on cuda:0, and resumed there from its checkpoint;
#   3. the flagship on two ranks sharing the GPU over Gloo (torchrun);
#   4. (--bench) bench/gpu_side_by_side.py (dtl, a LibTorch loop and PyTorch loops on the deep MLP
#      and the flagship CNN; written into docs/benchmarks.md's "On a GPU" section) and
#      bench/trainer_overhead on cuda:0 (the Trainer against a hand-written loop);
#   5. the CPU suite of the same build (dtl_tests with CUDA hidden: it asserts CPU arithmetic),
#      built while 1.-3. run, and run last.
# It needs a GPU, a Python whose torch has CUDA, meson, ninja, g++ >= 12, and nlohmann-json,
# yaml-cpp, doctest and zlib where the compiler finds them; it downloads nothing.
#
# usage: scripts/gpu-check.sh [--python PY] [--data DIR] [--out DIR] [--build DIR]
#                             [--bench] [--bench-only] [--no-cpu-suite] [--cuda-tests-only]
#   --python PY  the Python whose torch to build against (default: .venv/bin/python3, else python3)
#   --data DIR   Fashion-MNIST's four .gz files (default: Debian's /usr/share/datasets/fashion-mnist)
#   --out DIR    where logs and the summary go (default: build-gpu/check)
#   --bench      also run bench/trainer_overhead --device=cuda
#   --no-cpu-suite   skip 5.
#   --cuda-tests-only   build and run tests/dtl_cuda_tests alone (1.); with --bench, the benchmarks
#                  after them, all built at once (one short device call)
#   --bench-only   build and run the benchmarks alone (4.); with --cuda-tests-only first, in the same
#                  --build directory, this splits the check into two shorter calls
# Ends with "gpu-check: N passed, N failed"; exit status 0 if nothing failed, 2 without a GPU.
set -uo pipefail
cd "$(dirname "$0")/.."
python=
data=/usr/share/datasets/fashion-mnist
out=
build=build-gpu
bench=false
cpu_suite=true
cuda_only=false
bench_only=false
while [ $# -gt 0 ]; do
  case $1 in
    --python) python=$2; shift 2 ;;
    --data) data=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --bench) bench=true; shift ;;
    --no-cpu-suite) cpu_suite=false; shift ;;
    --cuda-tests-only) cuda_only=true; cpu_suite=false; shift ;;
    --bench-only) bench_only=true; bench=true; cpu_suite=false; shift ;;
    *) echo "gpu-check: unknown argument $1 (see the top of $0)" >&2; exit 2 ;;
  esac
done
if [ -z "$python" ]; then
  if [ -x .venv/bin/python3 ]; then python=$PWD/.venv/bin/python3; else python=$(command -v python3); fi
fi
out=${out:-$build/check}
mkdir -p "$out"
summary=$out/summary.txt
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }

if ! "$python" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo "gpu-check: no CUDA device for $python's torch on this machine; run this where there is a GPU" >&2
  exit 2
fi
say "gpu-check on $(hostname) at $(date -u +%FT%TZ)"
say "GPU: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -n1)"
say "torch: $("$python" -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda)')"
cxx=${CXX:-$(command -v g++-12 || command -v g++)}
say "compiler: $("$cxx" --version | head -n1)"

start=$(date +%s)
if [ ! -f "$build/build.ninja" ]; then
  CXX=$cxx meson setup "$build" -Dtorch_prefix="$python" -Dcuda=true -Dtests=true -Dexamples=true \
    -Dbenchmarks=true -Dbuildtype=release >"$out/setup.log" 2>&1 ||
    { tail -n 30 "$out/setup.log"; say "gpu-check: 0 passed, 1 failed (meson setup)"; exit 1; }
fi
build_targets() {  # log, target...: builds them, or says so and exits
  local log=$1
  shift
  if ! ninja -C "$build" "$@" >"$out/$log" 2>&1; then
    grep -E "error|FAILED" "$out/$log" | head -n 40
    say "gpu-check: 0 passed, 1 failed (build: $*)"
    exit 1
  fi
}
targets=()
$bench_only || targets+=(tests/dtl_cuda_tests)
$cuda_only || $bench_only || targets+=(examples/fashion_mnist)
$bench && targets+=(bench/trainer_overhead bench/gpu_step)
build_targets build.log "${targets[@]}"
say "built ${targets[*]} in $(( $(date +%s) - start )) s"

passed=0
failed=0
check() {  # name, command...: one case, passed when the command succeeds
  local name=$1 t0=$(date +%s)
  shift
  if "$@" >"$out/$name.log" 2>&1; then
    say "PASS $name ($(( $(date +%s) - t0 )) s)"
    passed=$((passed + 1))
  else
    say "FAIL $name ($(( $(date +%s) - t0 )) s)"
    tail -n 30 "$out/$name.log"
    failed=$((failed + 1))
  fi
}
doctest_summary() {  # the doctest summary lines of a log, into the summary
  grep -E '^\[doctest\] (test cases|assertions)' "$1" | sed 's/^/    /' | tee -a "$summary"
}

# The benchmarks (with --bench): on a quiet machine, so before the CPU suite's build starts, or
# after the CUDA tests with --cuda-tests-only (the tests first: they decide whether it landed).
run_bench() {
  if $bench; then
    # The side by side (bench/gpu_side_by_side.py): dtl, a LibTorch hand loop and plain PyTorch loops
    # (default, fused, foreach=False, one CUDA graph), fresh processes, rounds interleaved; its table
    # becomes docs/benchmarks.md's "On a GPU" section (tools/write_gpu_table.py).
    check bench_side_by_side "$python" bench/gpu_side_by_side.py --build "$build" --python "$python" \
      --rounds "${DTL_GPU_BENCH_ROUNDS:-3}" --markdown "$out/gpu_side_by_side.md"
    sed 's/^/    /' "$out/bench_side_by_side.log" | tee -a "$summary" >/dev/null
    [ -f "$out/gpu_side_by_side.md" ] && python3 tools/write_gpu_table.py "$out/gpu_side_by_side.md" docs/benchmarks.md
    check bench_cuda "$build/bench/trainer_overhead" --device=cuda "${DTL_GPU_BENCH_ROUNDS:-3}"
    sed -n '/^model/,/^|/p' "$out/bench_cuda.log" | grep -v '^|' | sed 's/^/    /' | tee -a "$summary"
  fi
}
$cuda_only || $bench_only || run_bench
if $bench_only; then
  run_bench
  say "gpu-check: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit
fi
builder=
if $cpu_suite; then  # built while the GPU cases run
  # everything: dtl_tests runs the suite's child programs (dist_child, crash children, examples)
  ninja -C "$build" >"$out/build_cpu_suite.log" 2>&1 &
  builder=$!
fi

check cuda_tests "$build/tests/dtl_cuda_tests" --no-intro --success
doctest_summary "$out/cuda_tests.log"
grep -o "trace: .*kernel events.*events" "$out/cuda_tests.log" | head -n 1 | sed 's/^/    /' | tee -a "$summary"
if $cuda_only; then
  run_bench  # with --bench: after the tests
  say "gpu-check: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit
fi

fm=$out/runs
rm -rf "$fm"
last_validation() {  # metrics.jsonl -> "accuracy at batch N"
  "$python" -c 'import json, sys
v = [json.loads(l) for l in open(sys.argv[1]) if "\"validation\"" in l]
m = v[-1]
print("accuracy %.4f at batch %d" % (m["metrics"]["accuracy"], m["steps_completed"]))
sys.exit(0 if m["metrics"]["accuracy"] > float(sys.argv[2]) else 1)' "$@"
}
if [ -f "$data/train-images-idx3-ubyte.gz" ]; then
  flagship=$build/examples/fashion_mnist
  check flagship_cuda bash -c "'$flagship' --device cuda:0 --hparam data_dir='$data' --run-dir '$fm/one' && grep -q '\"accuracy\"' '$fm/one/metrics.jsonl'"
  [ -f "$fm/one/metrics.jsonl" ] && say "    $(last_validation "$fm/one/metrics.jsonl" 0.8)" \
    "; $(grep -o '[0-9.]* batches/s' "$out/flagship_cuda.log" | tail -n1)"
  # Stopped after 600 batches, then resumed from its checkpoint on the GPU to the end. (Bit-for-bit
  # resume is dtl_cuda_tests' case: cuDNN's convolution backward is not deterministic.)
  check flagship_cuda_resume bash -c "'$flagship' --device cuda:0 --hparam data_dir='$data' --run-dir '$fm/half' --max-length batches=600 >/dev/null && '$flagship' --device cuda:0 --hparam data_dir='$data' --run-dir '$fm/half' --resume latest 2>&1 | tee '$fm/half.log' && grep -q 'resum.*batch 600' '$fm/half.log' && '$python' -c 'import json,sys; v=[json.loads(l) for l in open(sys.argv[1]) if \"validation\" in l]; sys.exit(0 if v[-1][\"steps_completed\"] > 1800 and v[-1][\"metrics\"][\"accuracy\"] > 0.8 else 1)' '$fm/half/metrics.jsonl'"
  check flagship_two_ranks_gloo bash -c "DTL_DIST_BACKEND=gloo '$python' -m torch.distributed.run --redirects 9:1 --tee 9:1 --nproc_per_node=2 --master_port=29671 --no_python '$flagship' --device cuda:0 --hparam data_dir='$data' --run-dir '$fm/two' --max-length batches=600"
  [ -f "$fm/two/metrics.jsonl" ] && say "    two ranks: $(last_validation "$fm/two/metrics.jsonl" 0.75)"
else
  say "SKIP flagship: no Fashion-MNIST in $data (pass --data DIR)"
fi

if $cpu_suite; then
  t0=$(date +%s)
  if wait "$builder"; then
    say "built the rest of the configuration ($(( $(date +%s) - t0 )) s after the GPU cases)"
    check cpu_suite env CUDA_VISIBLE_DEVICES= "$build/tests/dtl_tests" --no-intro
    doctest_summary "$out/cpu_suite.log"
  else
    grep -E "error|FAILED" "$out/build_cpu_suite.log" | head -n 40
    say "FAIL cpu_suite (build)"
    failed=$((failed + 1))
  fi
fi

say "total $(( $(date +%s) - start )) s"
say "gpu-check: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
