#!/usr/bin/env bash
# The whole test suite: install what is missing, build, run every test, and end with one line
# "N passed, N failed" computed from the real results (doctest cases, compile-fail cases,
# example runs). Exit status 0 only if nothing failed.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --tests || exit 1
if [ ! -f build/build.ninja ]; then
  meson setup build -Dtests=true -Dexamples=true >/dev/null || exit 1
fi
ninja -C build || { echo "0 passed, 1 failed"; exit 1; }

passed=0
failed=0
log=$(mktemp -d)

doctest_suite() {  # name, binary
  local name=$1 bin=$2 summary p f
  echo "== $name"
  "$bin" --no-intro >"$log/$name.out" 2>&1
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

doctest_suite core build/tests/dtl_core_tests
doctest_suite torch build/tests/dtl_tests
doctest_suite prefetcher_tsan build/tests/prefetcher_thread
doctest_suite prefetcher_asan build/tests/prefetcher_address

echo "== compile-fail"
# Through meson, so the compiler and flags come from meson.build alone (LibTorch location, defines).
meson test -C build compile_fail --no-rebuild --verbose >"$log/cf.out" 2>&1
cat "$log/cf.out"
cf=$(grep '^compile-fail:' "$log/cf.out" | tail -n1)
if [ -n "$cf" ]; then
  passed=$((passed + $(sed -E 's/.*: ([0-9]+) passed.*/\1/' <<<"$cf")))
  failed=$((failed + $(sed -E 's/.*, ([0-9]+) failed.*/\1/' <<<"$cf")))
else
  failed=$((failed + 1))
fi

echo "== examples"
run=$(mktemp -d)
check onevar_analytic bash -c "build/examples/onevar --run-dir '$run/onevar' --max-length batches=100 | grep -q 'w = 0.18143'"
# The same example built against libdtl (DTL_COMPILED_LIB) trains to the same numbers.
check onevar_compiled_lib bash -c "build/examples/onevar_compiled --run-dir '$run/onevar_c' --max-length batches=100 | grep -q 'w = 0.18143' && diff <(sed 's/\"seconds\":[0-9.e-]*//' '$run/onevar_c/metrics.jsonl') <(sed 's/\"seconds\":[0-9.e-]*//' '$run/onevar/metrics.jsonl')"
# Validation every 50 of 100 batches: workloads end at 50 and 100, each reporting training metrics.
check onevar_metrics_jsonl bash -c "test \$(grep -c '\"type\":\"training\"' '$run/onevar/metrics.jsonl') -eq 2 && test \$(grep -c '\"type\":\"validation\",\"steps_completed\":100' '$run/onevar/metrics.jsonl') -eq 1"
check onevar_bad_flag bash -c "build/examples/onevar --max-lenght batches=1 2>&1 | grep -q \"did you mean '--max-length'\"; test \${PIPESTATUS[0]} -eq 2"
# Errors reach a main() without try/catch as one line and a documented status, never an abort:
# 2 for a usage mistake (a --resume directory that does not exist), 1 for a corrupt checkpoint.
check onevar_resume_missing bash -c "out=\$(build/examples/onevar --run-dir '$run/r1' --resume /nonexistent/ckpt 2>&1); rc=\$?; echo \"\$out\"; test \$rc -eq 2 && grep -q '^error: dtl: --resume /nonexistent/ckpt: no such checkpoint directory' <<<\"\$out\" && ! grep -q 'terminate called' <<<\"\$out\""
check onevar_resume_corrupt bash -c "build/examples/onevar --run-dir '$run/r2' --max-length batches=10 >/dev/null && ck='$run/r2/checkpoints/'\$(cat '$run/r2/checkpoints/latest') && truncate -s 100 \"\$ck/state_dict.pth\" && out=\$(build/examples/onevar --run-dir '$run/r2' --resume latest --max-length batches=20 2>&1); rc=\$?; echo \"\$out\"; test \$rc -eq 1 && grep -q '^error: dtl: checkpoint' <<<\"\$out\" && ! grep -q 'terminate called' <<<\"\$out\""
# A restart-on-failure loop can always pass --resume latest: with no checkpoint yet it starts over.
check onevar_resume_latest_fresh bash -c "out=\$(build/examples/onevar --run-dir '$run/r3' --resume latest --max-length batches=10 2>&1) && echo \"\$out\" && grep -q 'no checkpoint in .* yet; starting from the beginning' <<<\"\$out\" && test -f '$run/r3/checkpoints/latest'"
# Preemption: SIGTERM checkpoints at the next boundary and exits 128 + 15.
check onevar_sigterm bash -c "build/examples/onevar --run-dir '$run/sig' --max-length batches=100000000 > '$run/sig.out' 2>&1 & pid=\$!; sleep 1.5; kill -TERM \$pid; wait \$pid; rc=\$?; cat '$run/sig.out'; test \$rc -eq 143 && grep -q 'by SIGTERM, checkpoint saved; the program exits with status 143' '$run/sig.out' && test -f '$run/sig/checkpoints/latest'"
# One run directory, one process: a second run on it fails at once, naming the holder (exit 2).
check onevar_run_dir_in_use bash -c "build/examples/onevar --run-dir '$run/lock' --max-length batches=100000000 >/dev/null 2>&1 & pid=\$!; sleep 1; out=\$(build/examples/onevar --run-dir '$run/lock' --max-length batches=10 2>&1); rc=\$?; kill -TERM \$pid; wait \$pid; echo \"\$out\"; test \$rc -eq 2 && grep -q \"is in use by another run (pid \$pid on\" <<<\"\$out\" && build/examples/onevar --run-dir '$run/lock' --resume latest --max-length batches=10 >/dev/null"
# A full disk at a checkpoint: exit 1 naming the file and ENOSPC, `latest` still the previous
# checkpoint, which the next run resumes (after removing the failed write's leftovers).
fault=build/tests/dtl_fault.so
check onevar_disk_full bash -c "build/examples/onevar --run-dir '$run/full' --max-length batches=10 >/dev/null && old=\$(cat '$run/full/checkpoints/latest') && out=\$(DTL_FAULT=enospc DTL_FAULT_PATH=/checkpoints/ LD_PRELOAD=$fault build/examples/onevar --run-dir '$run/full' --resume latest --max-length batches=20 2>&1); rc=\$?; echo \"\$out\"; test \$rc -eq 1 && grep -q '^error: dtl: checkpoint: cannot write .*No space left on device' <<<\"\$out\" && ! grep -q 'terminate called' <<<\"\$out\" && test \"\$(cat '$run/full/checkpoints/latest')\" = \"\$old\" && build/examples/onevar --run-dir '$run/full' --resume latest --max-length batches=20 2>&1 | grep -q 'removed .*left by an interrupted checkpoint write'"
# A run directory on a read-only file system: exit 2 naming it, nothing in it changed; its
# checkpoint still resumes into a writable run directory.
check onevar_read_only bash -c "sum() { find '$run/full' -type f | sort | xargs md5sum; }; before=\$(sum); out=\$(DTL_FAULT=erofs DTL_FAULT_PATH='$run/full' LD_PRELOAD=$fault build/examples/onevar --run-dir '$run/full' --resume latest --max-length batches=30 2>&1); rc=\$?; echo \"\$out\"; test \$rc -eq 2 && grep -q 'Read-only file system. A run writes its metrics and checkpoints there: pass a writable --run-dir' <<<\"\$out\" && test \"\$(sum)\" = \"\$before\" && DTL_FAULT=erofs DTL_FAULT_PATH='$run/full' LD_PRELOAD=$fault build/examples/onevar --run-dir '$run/elsewhere' --resume '$run/full/checkpoints/'\$(cat '$run/full/checkpoints/latest') --max-length batches=30 >/dev/null"
# The examples a user copies: each trains briefly; roc_auc's reducer also runs across 2 torchrun ranks.
check gan_example bash -c "build/examples/gan --run-dir '$run/gan' --max-length batches=128 > '$run/gan.out' 2>&1 || { cat '$run/gan.out'; exit 1; }; grep -q '\"validation_gap\"' '$run/gan/metrics.jsonl'"
check roc_auc_example bash -c "build/examples/roc_auc --run-dir '$run/auc' --max-length batches=64 > '$run/auc.out' 2>&1 || { cat '$run/auc.out'; exit 1; }; python3 -c \"import json,sys; v=[json.loads(l) for l in open(sys.argv[1])]; a=[r['metrics']['validation_auc'] for r in v if r['type']=='validation']; print('auc', a); sys.exit(0 if a and a[-1] > 0.8 else 1)\" '$run/auc/metrics.jsonl'"
check roc_auc_torchrun bash -c "torchrun --nproc_per_node 2 --redirects 9:1 --tee 9:1 --master_port 29631 --no_python build/examples/roc_auc --run-dir '$run/auc2' --max-length batches=64 > '$run/auc2.out' 2>&1 || { cat '$run/auc2.out'; exit 1; }; python3 -c \"import json,sys; v=[json.loads(l) for l in open(sys.argv[1])]; a=[r['metrics']['validation_auc'] for r in v if r['type']=='validation']; print('auc', a); sys.exit(0 if a and a[-1] > 0.8 else 1)\" '$run/auc2/metrics.jsonl'"
check fashion_mnist_test_mode build/examples/fashion_mnist --test-mode --run-dir "$run/fmnist"
check fashion_mnist_checkpoint bash -c "test -f '$run/fmnist/checkpoints/latest' && test -f '$run/fmnist/checkpoints/'\$(cat '$run/fmnist/checkpoints/latest')/metadata.json"
check fashion_mnist_missing_data bash -c "build/examples/fashion_mnist --test-mode --run-dir '$run/x' --hparam data_dir=/nonexistent 2>&1 | grep -q 'apt-get install dataset-fashion-mnist'"
check plot_metrics bash tests/tools/plot_metrics_test.sh
check docs_site env DTL_SKIP_SETUP=1 bash scripts/docs.sh
# dtl from someone else's project: pkg-config, CMake and meson-wrap consumers build and run a trial.
check consumers bash tests/consumers/run.sh "$run/consumers"
rm -rf "$run" "$log"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
