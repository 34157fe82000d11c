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
mark() {  # name: the time since the previous mark
  local now
  now=$(date +%s)
  timings+=("$(printf '%-34s %5d s' "$1" $((now - ${t_last:-$t_start})))")
  t_last=$now
}

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

build() {  # build dir, meson options...: configure once, then build; a failed build counts as one failure
  local dir=$1; shift
  if [ ! -f "$dir/build.ninja" ]; then
    meson setup "$dir" -Dtests=true -Dexamples=true "$@" >"$log/setup-$dir.out" 2>&1 || { cat "$log/setup-$dir.out"; return 1; }
  fi
  ninja -C "$dir" >"$log/build-$dir.out" 2>&1 || { grep -E 'error|FAILED' "$log/build-$dir.out" | head -n 40; return 1; }
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

examples() {  # build dir, label, python: the example programs as a user runs them
  local b=$1 label=$2 py=$3 r="$run/$2"
  mkdir -p "$r"
  echo "== examples ($label)"
  check "$label:onevar_analytic" bash -c "$b/examples/onevar --run-dir '$r/onevar' --max-length batches=100 | grep -q 'w = 0.18143'"
  # The same example built against libdtl (DTL_COMPILED_LIB) trains to the same numbers.
  check "$label:onevar_compiled_lib" bash -c "$b/examples/onevar_compiled --run-dir '$r/onevar_c' --max-length batches=100 | grep -q 'w = 0.18143' && diff <(sed 's/\"seconds\":[0-9.e-]*//' '$r/onevar_c/metrics.jsonl') <(sed 's/\"seconds\":[0-9.e-]*//' '$r/onevar/metrics.jsonl')"
  # Validation every 50 of 100 batches: workloads end at 50 and 100, each reporting training metrics.
  check "$label:onevar_metrics_jsonl" bash -c "test \$(grep -c '\"type\":\"training\"' '$r/onevar/metrics.jsonl') -eq 2 && test \$(grep -c '\"type\":\"validation\",\"steps_completed\":100' '$r/onevar/metrics.jsonl') -eq 1"
  check "$label:onevar_bad_flag" bash -c "$b/examples/onevar --max-lenght batches=1 2>&1 | grep -q \"did you mean '--max-length'\"; test \${PIPESTATUS[0]} -eq 2"
  # A global batch size far beyond the data is its one short batch (it was std::bad_alloc); a
  # misspelled --hparam is an error with a did-you-mean (it was ignored).
  check "$label:onevar_huge_batch" bash -c "$b/examples/onevar --run-dir '$r/huge' --max-length batches=2 --hparam global_batch_size=100000000000000"
  check "$label:onevar_hparam_typo" bash -c "$b/examples/onevar --run-dir '$r/typo' --hparam learnig_rate=0.1 2>&1 | grep -q \"did you mean 'learning_rate'\"; test \${PIPESTATUS[0]} -eq 2"
  # Asking for CUDA where there is none is one line and exit status 2, in every build.
  check "$label:onevar_no_cuda" bash -c "out=\$(CUDA_VISIBLE_DEVICES= $b/examples/onevar --run-dir '$r/nocuda' --device cuda:0 2>&1); rc=\$?; echo \"\$out\"; test \$rc -eq 2 && test \$(wc -l <<<\"\$out\") -eq 1 && grep -q '^error: dtl: --device cuda:0: ' <<<\"\$out\""
  # Errors reach a main() without try/catch as one line and a documented status, never an abort:
  # 2 for a usage mistake (a --resume directory that does not exist), 1 for a corrupt checkpoint.
  check "$label:onevar_resume_missing" bash -c "out=\$($b/examples/onevar --run-dir '$r/r1' --resume /nonexistent/ckpt 2>&1); rc=\$?; echo \"\$out\"; test \$rc -eq 2 && grep -q '^error: dtl: --resume /nonexistent/ckpt: no such checkpoint directory' <<<\"\$out\" && ! grep -q 'terminate called' <<<\"\$out\""
  check "$label:onevar_resume_corrupt" bash -c "$b/examples/onevar --run-dir '$r/r2' --max-length batches=10 >/dev/null && ck='$r/r2/checkpoints/'\$(cat '$r/r2/checkpoints/latest') && truncate -s 100 \"\$ck/state_dict.pth\" && out=\$($b/examples/onevar --run-dir '$r/r2' --resume latest --max-length batches=20 2>&1); rc=\$?; echo \"\$out\"; test \$rc -eq 1 && grep -q '^error: dtl: checkpoint' <<<\"\$out\" && ! grep -q 'terminate called' <<<\"\$out\""
  # A restart-on-failure loop can always pass --resume latest: with no checkpoint yet it starts over.
  check "$label:onevar_resume_latest_fresh" bash -c "out=\$($b/examples/onevar --run-dir '$r/r3' --resume latest --max-length batches=10 2>&1) && echo \"\$out\" && grep -q 'no checkpoint in .* yet; starting from the beginning' <<<\"\$out\" && test -f '$r/r3/checkpoints/latest'"
  # Preemption: SIGTERM checkpoints at the next boundary and exits 128 + 15.
  check "$label:onevar_sigterm" bash -c "$b/examples/onevar --run-dir '$r/sig' --max-length batches=100000000 > '$r/sig.out' 2>&1 & pid=\$!; sleep 1.5; kill -TERM \$pid; wait \$pid; rc=\$?; cat '$r/sig.out'; test \$rc -eq 143 && grep -q 'by SIGTERM, checkpoint saved; the program exits with status 143' '$r/sig.out' && test -f '$r/sig/checkpoints/latest'"
  # One run directory, one process: a second run on it fails at once, naming the holder (exit 2).
  check "$label:onevar_run_dir_in_use" bash -c "$b/examples/onevar --run-dir '$r/lock' --max-length batches=100000000 >/dev/null 2>&1 & pid=\$!; sleep 1; out=\$($b/examples/onevar --run-dir '$r/lock' --max-length batches=10 2>&1); rc=\$?; kill -TERM \$pid; wait \$pid; echo \"\$out\"; test \$rc -eq 2 && grep -q \"is in use by another run (pid \$pid on\" <<<\"\$out\" && $b/examples/onevar --run-dir '$r/lock' --resume latest --max-length batches=10 >/dev/null"
  # A full disk at a checkpoint: exit 1 naming the file and ENOSPC, `latest` still the previous
  # checkpoint, which the next run resumes (after removing the failed write's leftovers).
  local fault=$b/tests/dtl_fault.so
  check "$label:onevar_disk_full" bash -c "$b/examples/onevar --run-dir '$r/full' --max-length batches=10 >/dev/null && old=\$(cat '$r/full/checkpoints/latest') && out=\$(DTL_FAULT=enospc DTL_FAULT_PATH=/checkpoints/ LD_PRELOAD=$fault $b/examples/onevar --run-dir '$r/full' --resume latest --max-length batches=20 2>&1); rc=\$?; echo \"\$out\"; test \$rc -eq 1 && grep -q '^error: dtl: checkpoint: cannot write .*No space left on device' <<<\"\$out\" && ! grep -q 'terminate called' <<<\"\$out\" && test \"\$(cat '$r/full/checkpoints/latest')\" = \"\$old\" && $b/examples/onevar --run-dir '$r/full' --resume latest --max-length batches=20 2>&1 | grep -q 'removed .*left by an interrupted checkpoint write'"
  # A file-size limit (ulimit -f) at a checkpoint: SIGXFSZ is ignored, as Python does, so the write
  # fails with EFBIG, reported like a full disk (exit 1, the file named), never a silent death by
  # the signal (exit 153); a run without the limit then resumes.
  check "$label:onevar_file_size_limit" bash -c "out=\$( (ulimit -f 2; exec $b/examples/onevar --run-dir '$r/fsize' --max-length batches=10) 2>&1); rc=\$?; echo \"\$out\"; test \$rc -eq 1 && grep -q '^error: dtl: .*File too large' <<<\"\$out\" && $b/examples/onevar --run-dir '$r/fsize' --resume latest --max-length batches=10 >/dev/null"
  # A run directory on a read-only file system: exit 2 naming it, nothing in it changed; its
  # checkpoint still resumes into a writable run directory.
  # A checkpoint directory that becomes unwritable mid-run: one line in dtl's words (it was
  # libstdc++'s "filesystem error: cannot create directories"), exit 1, earlier checkpoints intact.
  check "$label:onevar_checkpoint_dir_unwritable" bash -c "$b/examples/onevar --run-dir '$r/unw' --max-length batches=10 >/dev/null && old=\$(cat '$r/unw/checkpoints/latest') && out=\$(DTL_FAULT=erofs DTL_FAULT_PATH=/checkpoints/.tmp- LD_PRELOAD=$fault $b/examples/onevar --run-dir '$r/unw' --resume latest --max-length batches=20 2>&1); rc=\$?; echo \"\$out\"; test \$rc -eq 1 && grep -q '^error: dtl: checkpoint: cannot create the directory .*Read-only file system; make .* writable' <<<\"\$out\" && ! grep -q 'filesystem error' <<<\"\$out\" && test \"\$(cat '$r/unw/checkpoints/latest')\" = \"\$old\" && test -f '$r/unw/checkpoints/'\$old/state_dict.pth"
  check "$label:onevar_read_only" bash -c "sum() { find '$r/full' -type f | sort | xargs md5sum; }; before=\$(sum); out=\$(DTL_FAULT=erofs DTL_FAULT_PATH='$r/full' LD_PRELOAD=$fault $b/examples/onevar --run-dir '$r/full' --resume latest --max-length batches=30 2>&1); rc=\$?; echo \"\$out\"; test \$rc -eq 2 && grep -q 'Read-only file system. A run writes its metrics and checkpoints there: pass a writable --run-dir' <<<\"\$out\" && test \"\$(sum)\" = \"\$before\" && DTL_FAULT=erofs DTL_FAULT_PATH='$r/full' LD_PRELOAD=$fault $b/examples/onevar --run-dir '$r/elsewhere' --resume '$r/full/checkpoints/'\$(cat '$r/full/checkpoints/latest') --max-length batches=30 >/dev/null"
  # The examples a user copies: each trains briefly; roc_auc's reducer also runs across 2 torchrun ranks.
  check "$label:gan_example" bash -c "$b/examples/gan --run-dir '$r/gan' --max-length batches=128 > '$r/gan.out' 2>&1 || { cat '$r/gan.out'; exit 1; }; grep -q '\"validation_gap\"' '$r/gan/metrics.jsonl'"
  local auc="import json,sys; v=[json.loads(l) for l in open(sys.argv[1])]; a=[r['metrics']['validation_auc'] for r in v if r['type']=='validation']; print('auc', a); sys.exit(0 if a and a[-1] > 0.8 else 1)"
  check "$label:roc_auc_example" bash -c "$b/examples/roc_auc --run-dir '$r/auc' --max-length batches=64 > '$r/auc.out' 2>&1 || { cat '$r/auc.out'; exit 1; }; python3 -c \"$auc\" '$r/auc/metrics.jsonl'"
  # torchrun of the Python whose torch is this LibTorch (the agent's store speaks its protocol).
  check "$label:roc_auc_torchrun" bash -c "$py -m torch.distributed.run --nproc_per_node 2 --redirects 9:1 --tee 9:1 --master_port 29631 --no_python $b/examples/roc_auc --run-dir '$r/auc2' --max-length batches=64 > '$r/auc2.out' 2>&1 || { cat '$r/auc2.out'; exit 1; }; python3 -c \"$auc\" '$r/auc2/metrics.jsonl'"
  check "$label:fashion_mnist_test_mode" "$b/examples/fashion_mnist" --test-mode --run-dir "$r/fmnist"
  check "$label:fashion_mnist_checkpoint" bash -c "test -f '$r/fmnist/checkpoints/latest' && test -f '$r/fmnist/checkpoints/'\$(cat '$r/fmnist/checkpoints/latest')/metadata.json"
  check "$label:fashion_mnist_missing_data" bash -c "$b/examples/fashion_mnist --test-mode --run-dir '$r/x' --hparam data_dir=/nonexistent 2>&1 | grep -q 'apt-get install dataset-fashion-mnist'"
}

# ---- 1. the pinned LibTorch 2.x, CUDA configuration ---------------------------------------
if [ -z "$only" ] || [ "$only" = torch2 ]; then
  echo "== LibTorch $(.venv/bin/python3 -c 'import torch; print(torch.__version__)') (.venv), CUDA configuration"
  if build build-torch2 -Dtorch_prefix=.venv/bin/python3 -Dcuda=true; then
    mark "build: LibTorch 2.x, CUDA"
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
  if build build -Dtorch_prefix=/usr; then
    mark "build: LibTorch 1.13"
    doctest_suite debian:torch build/tests/dtl_tests
    mark "tests: LibTorch 1.13"
    # dtl's diagnostics are its own static_asserts, the same on every LibTorch (run in full on
    # 2.x above); on 1.13 the programs that must compile, warning-free, do.
    compile_fail build expect-compiles
    mark "compile-fail: LibTorch 1.13"
    examples build debian /usr/bin/python3
    mark "examples: LibTorch 1.13"
    # pkg-config and CMake, header-only, against Debian's LibTorch (every route ran on 2.x above).
    check debian:consumers env DTL_CONSUMERS_ONLY=header-only bash tests/consumers/run.sh "$run/consumers-debian" /usr
    mark "consumers: LibTorch 1.13"
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
check docs_site env DTL_SKIP_SETUP=1 bash scripts/docs.sh
check layering python3 tools/check_layering.py
mark "torch-free tests, plots, docs"

echo "== time taken"
printf '%s\n' "${timings[@]}"
printf '%-34s %5d s\n' "total" $(( $(date +%s) - t_start ))
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
