#!/usr/bin/env bash
# The whole test suite: install what is missing, build, run every test, and end with one line
# "N passed, N failed" computed from the real results (doctest cases, compile-fail cases,
# example runs). Exit status 0 only if nothing failed.
#
# It runs on both LibTorch versions dtl supports (docs/building.md):
#   1. the pinned LibTorch 2.x (PyPI's torch wheel in .venv, scripts/requirements.txt) in the CUDA
#      configuration (-Dcuda=true): every CUDA and NCCL path is compiled and linked, the CPU tests
#      run, and the CUDA test set says in one line that there is no GPU here (scripts/gpu-check.sh
#      runs it where there is one);
#   2. Debian's LibTorch 1.13 (libtorch-dev), what `apt install` users have.
# The torch-free parts (the config/sampler tests, the sanitizer runs, the plot, diagnostics-page
# and docs checks) run once. `--only torch2|debian` runs one configuration (for local work). Each part's time is
# printed, and a table of them at the end.
set -uo pipefail
cd "$(dirname "$0")/.."
only=
if [ "${1:-}" = --only ]; then only=${2:?"--only torch2 or --only debian"}; fi
t_start=$(date +%s)
timings=()
busy_ticks() {  # the machine's busy CPU time so far, in clock ticks (all cores; /proc/stat)
  local _ u n s i w q sq st
  read -r _ u n s i w q sq st _ </proc/stat
  echo $((u + n + s + q + sq + st))
}
mark() {  # name: the time since the previous mark, and how busy the cores were (100%: all of them)
  local now busy ticks
  now=$(date +%s)
  busy=$(busy_ticks)
  ticks=$(( ($(getconf CLK_TCK) * (now - ${t_last:-$t_start})) * $(nproc) ))
  timings+=("$(printf '%-36s %5d s  %3d%% busy' "$1" $((now - ${t_last:-$t_start})) \
    $(( ticks > 0 ? 100 * (busy - ${busy_last:-$busy_start}) / ticks : 0 )))")
  t_last=$now
  busy_last=$busy
}
busy_start=$(busy_ticks)

bash scripts/setup.sh --tests || exit 1
mark "setup (Debian packages, .venv)"

passed=0
failed=0
log=$(mktemp -d)
run=$(mktemp -d)
trap 'rm -rf "$log" "$run"' EXIT

doctest_suite() {  # name, binary, [args...]
  local name=$1 bin=$2 summary p f
  shift 2
  echo "== $name"
  "$bin" --no-intro "$@" >"$log/$name.out" 2>&1
  local rc=$?
  grep -E '^(\[doctest\] (test cases|assertions|Status)|.*ERROR|.*FATAL)' "$log/$name.out" | tail -n 40
  summary=$(grep '^\[doctest\] test cases' "$log/$name.out" | tail -n1)
  p=$(sed -E 's/.*\| *([0-9]+) passed.*/\1/' <<<"$summary")
  f=$(sed -E 's/.*\| *([0-9]+) failed.*/\1/' <<<"$summary")
  if [ -z "$summary" ]; then p=0; f=1; echo "$name: no doctest summary (crashed? rc=$rc)"; tail -n 20 "$log/$name.out"; fi
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; echo "$name: exit status $rc"; fi
  passed=$((passed + p)); failed=$((failed + f))
}

check() {  # name, command...: one case, passed when the command succeeds
  local name=$1; shift
  if "$@" >"$log/$name.out" 2>&1; then echo "PASS $name"; passed=$((passed + 1))
  else echo "FAIL $name"; tail -n 20 "$log/$name.out"; failed=$((failed + 1)); fi
}

# Work begun in the background at nice 19, beside parts that leave a core idle: it takes only what
# they leave. Its output goes to $log/NAME.out; `wait "${background_jobs[NAME]}"` is its status.
declare -A background_jobs
in_background() {  # name, command...
  local name=$1; shift
  ( renice -n 19 "$BASHPID" >/dev/null; "$@" ) >"$log/$name.out" 2>&1 &
  background_jobs[$name]=$!
}
collect() {  # name: a check begun in_background, counted as `check` counts its own
  local name=$1
  if wait "${background_jobs[$name]}"; then echo "PASS $name"; passed=$((passed + 1))
  else echo "FAIL $name"; tail -n 20 "$log/$name.out"; failed=$((failed + 1)); fi
}

build() {  # build dir, meson options...: configure once, then build; a failed build counts as one failure
  local dir=$1; shift
  if [ ! -f "$dir/build.ninja" ]; then
    meson setup "$dir" -Dtests=true -Dexamples=true "$@" >"$log/setup-$dir.out" 2>&1 || { cat "$log/setup-$dir.out"; return 1; }
  fi
  ninja -C "$dir" ${ninja_jobs:+-j "$ninja_jobs"} >"$log/build-$dir.out" 2>&1 ||
    { grep -E 'error|FAILED' "$log/build-$dir.out" | head -n 40; return 1; }
}

# The 2.x tests leave about half the cores idle (a test process on one core, ranks waiting on
# timeouts: 13% busy in the cluster faults); the 1.13 build fills them, begun in_background once the
# 2.x build is done. `debian_build` collects it. (Two ninja jobs: with the 2.x compile-fail and
# consumer compilers beside it, memory.)
debian_build() {  # the 1.13 build: the background one's status (its errors printed), or a build now
  local rc=0
  [ -z "${background_jobs[debian-build]:-}" ] && { build build -Dtorch_prefix=/usr; return; }
  wait "${background_jobs[debian-build]}" || rc=$?
  cat "$log/debian-build.out"
  return "$rc"
}

trial_pch_used() {  # build dir: the examples and trainees compiled from the shared precompiled header (meson.build's
  # dtl_trial_dep): a .gch that g++ refused (-Winvalid-pch) would leave them parsing every header, slowly
  check "$1:trial_pch_used" bash -c "test -f '$1/dtl_pch.hpp.gch' && ! grep -E 'invalid-pch|not used because' '$log/build-$1.out'"
  # ... and an object compiled from it depends on it (its stamp), so a dtl header's edit rebuilds it
  check "$1:trial_pch_dependency" bash -c "ninja -C '$1' -t deps examples/onevar_split.p/onevar_split_onevar_trial.cpp.o | grep -q 'dtl_pch_stamp.hpp\$'"
}

summary_counts() {  # log, label: add the "label: N passed, N failed" line's counts (none: one failure)
  local line
  line=$(grep "^$2:" "$1" | tail -n1)
  if [ -n "$line" ]; then
    passed=$((passed + $(sed -E 's/.*: ([0-9]+) passed.*/\1/' <<<"$line")))
    failed=$((failed + $(sed -E 's/.*, ([0-9]+) failed.*/\1/' <<<"$line")))
  else
    failed=$((failed + 1))
  fi
}

compile_fail() {  # build dir, [only]: the compile-fail cases, through meson so the flags come from meson.build alone
  local dir=$1
  echo "== compile-fail ($dir${2:+, $2})"
  DTL_COMPILE_FAIL_ONLY=${2:-} meson test -C "$dir" compile_fail --no-rebuild --verbose >"$log/cf.out" 2>&1
  cat "$log/cf.out"
  summary_counts "$log/cf.out" compile-fail
}

link_fail() {  # build dir, the other LibTorch's libdtl.a: mixing fails to link (include/dtl/detail/abi.hpp)
  local dir=$1
  echo "== link-fail ($dir, other: $2)"
  DTL_OTHER_LIBDTL=$2 meson test -C "$dir" link_fail --no-rebuild --verbose >"$log/lf.out" 2>&1
  cat "$log/lf.out"
  summary_counts "$log/lf.out" link-fail
}

examples() {  # build dir, label, python: the example programs as a user runs them (tests/examples/run.sh)
  echo "== examples ($2)"
  bash tests/examples/run.sh "$1" "$2" "$3" "$run/examples-$2" >"$log/examples-$2.out" 2>&1
  cat "$log/examples-$2.out"
  summary_counts "$log/examples-$2.out" examples
}

# ---- 1. the pinned LibTorch 2.x, CUDA configuration ---------------------------------------
if [ -z "$only" ] || [ "$only" = torch2 ]; then
  echo "== LibTorch $(.venv/bin/python3 -c 'import torch; print(torch.__version__)') (.venv), CUDA configuration"
  if build build-torch2 -Dtorch_prefix=.venv/bin/python3 -Dcuda=true; then
    mark "build: LibTorch 2.x, CUDA"
    [ -z "$only" ] && ninja_jobs=2 in_background debian-build build build -Dtorch_prefix=/usr
    trial_pch_used build-torch2
    doctest_suite torch2:torch build-torch2/tests/dtl_tests
    # The CUDA test set on a machine without a GPU: one line, exit status 2.
    check torch2:cuda_tests_say_no_gpu bash -c "out=\$(CUDA_VISIBLE_DEVICES= build-torch2/tests/dtl_cuda_tests 2>&1); rc=\$?; echo \"\$out\"; test \$rc -eq 2 && test \$(wc -l <<<\"\$out\") -eq 1 && grep -q 'no CUDA device' <<<\"\$out\""
    mark "tests: LibTorch 2.x"
    compile_fail build-torch2
    mark "compile-fail: LibTorch 2.x"
    examples build-torch2 torch2 .venv/bin/python3
    mark "examples: LibTorch 2.x"
    # The real Determined as the oracle: det.pytorch.Trainer 0.38.1 (.venv) and dtl train the same
    # trials, on 1 and 2 torchrun ranks, bit for bit; each resumes the other's checkpoints.
    check torch2:determined_oracle .venv/bin/python3 tests/oracle/run_oracle.py --dtl build-torch2/tests/oracle_trials
    # Determined's own examples (examples/tutorials/mnist_pytorch, ...) under det.pytorch.Trainer
    # against their ports in examples/determined/: every batch's loss, validation and final weights.
    check torch2:determined_examples .venv/bin/python3 tests/determined_examples/run_examples.py --examples build-torch2/examples --work "$run/determined-examples"
    mark "Determined oracle: LibTorch 2.x"
    # A dtl trial as a Determined cluster trial, against a loopback fake master that records and
    # enforces: the same requests as the real det.pytorch.Trainer in cluster mode, call by call
    # (train, validate, preempted, resumed from DET_LATEST_CHECKPOINT, finished); then faults.
    # On 2 slots both sides are launched through Determined's own determined.launch.torch_distributed.
    for slots in 1 2; do
      check torch2:cluster_parity_$slots .venv/bin/python3 tests/cluster/run_cluster_parity.py --python "$PWD/.venv/bin/python3" --dtl "$PWD/build-torch2/tests/oracle_trials" --work "$run/cluster-parity-$slots" --repeat 2 --slots $slots
    done
    check torch2:cluster_faults .venv/bin/python3 tests/cluster/run_cluster_faults.py --python "$PWD/.venv/bin/python3" --dtl "$PWD/build-torch2/tests/oracle_trials" --work "$run/cluster-faults"
    mark "cluster parity: LibTorch 2.x"
    # dtl from someone else's project: pkg-config, CMake, meson-wrap and Conan consumers build and run a
    # trial (its header-only pkg-config and CMake builds are the docs check's, next).
    check torch2:consumers env DTL_CONSUMERS_DOCS_ROUTES=1 bash tests/consumers/run.sh "$run/consumers-torch2" "$PWD/.venv/bin/python3"
    mark "consumers: LibTorch 2.x"
    # Every sh block of README.md and docs/ run as written and every C++ fragment compiled, against
    # the prefix the consumer test just installed (tools/check_docs.py).
    check torch2:docs_commands python3 tools/check_docs.py --prefix "$run/consumers-torch2/prefix" --work "$run/docs"
    mark "docs commands: LibTorch 2.x"
  else
    failed=$((failed + 1)); echo "FAIL build-torch2"
  fi
fi

# ---- 2. Debian's LibTorch 1.13 -------------------------------------------------------------
if [ -z "$only" ] || [ "$only" = debian ]; then
  echo "== LibTorch 1.13 (Debian)"
  if debian_build; then
    mark "build: LibTorch 1.13 (what is left)"
    trial_pch_used build
    # pkg-config and CMake, header-only, against Debian's LibTorch (every route ran on 2.x above):
    # two compilers, beside the 1.13 tests, which leave a core idle.
    in_background debian:consumers env DTL_CONSUMERS_ONLY=header-only bash tests/consumers/run.sh "$run/consumers-debian" /usr
    doctest_suite debian:torch build/tests/dtl_tests
    mark "tests: LibTorch 1.13"
    # dtl's diagnostics are its own static_asserts, the same on every LibTorch (run in full on
    # 2.x above); on 1.13 the programs that must compile, warning-free, do.
    compile_fail build expect-compiles
    mark "compile-fail: LibTorch 1.13"
    examples build debian /usr/bin/python3
    mark "examples: LibTorch 1.13"
    collect debian:consumers
    mark "consumers: LibTorch 1.13 (left)"
  else
    failed=$((failed + 1)); echo "FAIL build (Debian)"
  fi
fi

# ---- across the two: libdtl of one LibTorch does not link with the other's translation units --
if [ -z "$only" ] && [ -f build-torch2/libdtl.a ] && [ -f build/libdtl.a ]; then
  link_fail build-torch2 "$PWD/build/libdtl.a"
  mark "link-fail (modes, LibTorch versions)"
fi

# ---- torch-free: once ------------------------------------------------------------------------
core=build-torch2
[ "$only" = debian ] && core=build
if [ -x "$core/tests/dtl_core_tests" ]; then
  doctest_suite core "$core/tests/dtl_core_tests"
  doctest_suite prefetcher_tsan "$core/tests/prefetcher_thread"
  doctest_suite prefetcher_asan "$core/tests/prefetcher_address"
fi
check plot_metrics bash tests/tools/plot_metrics_test.sh
check diagnostics_page python3 scripts/gen_diagnostics.py --check
check docs_fences bash tests/tools/check_docs_test.sh
check ctags bash tests/tools/ctags_test.sh
check docs_site env DTL_SKIP_SETUP=1 bash scripts/docs.sh
check layering python3 tools/check_layering.py
check layering_tool bash tests/tools/check_layering_test.sh
check function_length python3 tools/check_function_length.py
mark "torch-free tests, plots, docs"

echo "== time taken"
printf '%s\n' "${timings[@]}"
printf '%-36s %5d s\n' "total" $(( $(date +%s) - t_start ))
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
