#!/usr/bin/env bash
# The example programs as a user runs them: each check below is one named function that runs the
# built examples (onevar, gan, roc_auc, fashion_mnist) and asserts one behaviour, its exit status
# and what it prints or writes.
# Usage: tests/examples/run.sh BUILD_DIR LABEL PYTHON WORK_DIR
#   BUILD_DIR: a meson build directory configured with -Dtests=true -Dexamples=true;
#   LABEL: the prefix of every check's name (scripts/test.sh: torch2, debian);
#   PYTHON: the Python whose torch is this build's LibTorch (torchrun);
#   WORK_DIR: made afresh (removed first): the run directories under runs/, each check's output in
#   logs/NAME.out.
# Prints PASS NAME or FAIL NAME and the tail of its output per check, then one line
# "examples: N passed, N failed"; the exit status is 0 only if nothing failed.
# Run from the repository root (scripts/test.sh does) when BUILD_DIR or PYTHON is relative.
# The checks run in order, and some read what an earlier one wrote (said at each).
set -u
if [ $# -ne 4 ]; then
  echo "usage: $0 BUILD_DIR LABEL PYTHON WORK_DIR" >&2
  exit 2
fi
build=$1
label=$2
python=$3
rm -rf "$4"
mkdir -p "$4/runs" "$4/logs"
work=$(cd "$4" && pwd)
runs=$work/runs
logs=$work/logs
onevar=$build/examples/onevar
fault=$build/tests/dtl_fault.so  # LD_PRELOAD: system calls fail under a path (DTL_FAULT, DTL_FAULT_PATH)

passed=0
failed=0

check() {  # name, function: one case, passed when the function, run in a subshell, succeeds
  local name=$1 fn=$2
  if ("$fn") >"$logs/$name.out" 2>&1; then
    echo "PASS $name"
    passed=$((passed + 1))
  else
    echo "FAIL $name"
    tail -n 20 "$logs/$name.out"
    failed=$((failed + 1))
  fi
}

# ---- helpers ----------------------------------------------------------------------------------

without_seconds() {  # metrics.jsonl: its lines without the "seconds" field (wall time differs run to run)
  sed 's/"seconds":[0-9.e-]*//' "$1"
}

last_validation_auc_above_0_8() {  # metrics.jsonl: prints the validation AUCs; succeeds if the last is > 0.8
  python3 - "$1" <<'EOF'
import json, sys
records = [json.loads(line) for line in open(sys.argv[1])]
aucs = [r["metrics"]["validation_auc"] for r in records if r["type"] == "validation"]
print("auc", aucs)
sys.exit(0 if aucs and aucs[-1] > 0.8 else 1)
EOF
}

tree_checksums() {  # dir: the md5sum of every file under it, in path order
  find "$1" -type f | sort | xargs md5sum
}

# ---- onevar: training, flags ------------------------------------------------------------------

# 100 batches of the one-variable regression train w to its known value.
onevar_analytic() {
  "$onevar" --run-dir "$runs/onevar" --max-length batches=100 | grep -q 'w = 0.18143'
}

# The same example built against libdtl (DTL_COMPILED_LIB) trains to the same numbers
# (the metrics of onevar_analytic's run, but for the wall time).
onevar_compiled_lib() {
  "$build/examples/onevar_compiled" --run-dir "$runs/onevar_c" --max-length batches=100 | grep -q 'w = 0.18143' &&
    diff <(without_seconds "$runs/onevar_c/metrics.jsonl") <(without_seconds "$runs/onevar/metrics.jsonl")
}

# OneVar in three files (examples/onevar_split: the trial's declarations, its bodies, main) trains
# to the same numbers too.
onevar_split() {
  "$build/examples/onevar_split" --run-dir "$runs/onevar_s" --max-length batches=100 | grep -q 'w = 0.18143' &&
    diff <(without_seconds "$runs/onevar_s/metrics.jsonl") <(without_seconds "$runs/onevar/metrics.jsonl")
}

# Validation every 50 of 100 batches: workloads end at 50 and 100, each reporting training metrics
# (onevar_analytic's run).
onevar_metrics_jsonl() {
  local metrics=$runs/onevar/metrics.jsonl
  test "$(grep -c '"type":"training"' "$metrics")" -eq 2 &&
    test "$(grep -c '"type":"validation","steps_completed":100' "$metrics")" -eq 1
}

# A misspelled flag is a usage error (exit 2) with a did-you-mean.
onevar_bad_flag() {
  local out rc
  out=$("$onevar" --max-lenght batches=1 2>&1)
  rc=$?
  echo "$out"
  test "$rc" -eq 2 && grep -q "did you mean '--max-length'" <<<"$out"
}

# A global batch size far beyond the data is its one short batch (it was std::bad_alloc).
onevar_huge_batch() {
  "$onevar" --run-dir "$runs/huge" --max-length batches=2 --hparam global_batch_size=100000000000000
}

# A misspelled --hparam is an error (exit 2) with a did-you-mean (it was ignored).
onevar_hparam_typo() {
  local out rc
  out=$("$onevar" --run-dir "$runs/typo" --hparam learnig_rate=0.1 2>&1)
  rc=$?
  echo "$out"
  test "$rc" -eq 2 && grep -q "did you mean 'learning_rate'" <<<"$out"
}

# Asking for CUDA where there is none is one line and exit status 2, in every build.
onevar_no_cuda() {
  local out rc
  out=$(CUDA_VISIBLE_DEVICES='' "$onevar" --run-dir "$runs/nocuda" --device cuda:0 2>&1)
  rc=$?
  echo "$out"
  test "$rc" -eq 2 &&
    test "$(wc -l <<<"$out")" -eq 1 &&
    grep -q '^error: dtl: --device cuda:0: ' <<<"$out"
}

# ---- onevar: errors reach a main() without try/catch as one line and a documented status, never
# an abort ----------------------------------------------------------------------------------------

# 2 for a usage mistake: a --resume directory that does not exist.
onevar_resume_missing() {
  local out rc
  out=$("$onevar" --run-dir "$runs/r1" --resume /nonexistent/ckpt 2>&1)
  rc=$?
  echo "$out"
  test "$rc" -eq 2 &&
    grep -q '^error: dtl: --resume /nonexistent/ckpt: no such checkpoint directory' <<<"$out" &&
    ! grep -q 'terminate called' <<<"$out"
}

# 1 for a corrupt checkpoint (its state_dict.pth cut to 100 bytes).
onevar_resume_corrupt() {
  local checkpoint out rc
  "$onevar" --run-dir "$runs/r2" --max-length batches=10 >/dev/null || return 1
  checkpoint=$runs/r2/checkpoints/$(cat "$runs/r2/checkpoints/latest") || return 1
  truncate -s 100 "$checkpoint/state_dict.pth" || return 1
  out=$("$onevar" --run-dir "$runs/r2" --resume latest --max-length batches=20 2>&1)
  rc=$?
  echo "$out"
  test "$rc" -eq 1 &&
    grep -q '^error: dtl: checkpoint' <<<"$out" &&
    ! grep -q 'terminate called' <<<"$out"
}

# A restart-on-failure loop can always pass --resume latest: with no checkpoint yet it starts over.
onevar_resume_latest_fresh() {
  local out rc
  out=$("$onevar" --run-dir "$runs/r3" --resume latest --max-length batches=10 2>&1)
  rc=$?
  echo "$out"
  test "$rc" -eq 0 &&
    grep -q 'no checkpoint in .* yet; starting from the beginning' <<<"$out" &&
    test -f "$runs/r3/checkpoints/latest"
}

# ---- onevar: preemption, the run directory, faults at a checkpoint -------------------------------

# Waits (up to 60 s) until a program writing to FILE reports training: past dtl::init (signal
# handlers installed, run directory held). A fixed delay signalled a program still starting on a
# loaded machine, which then died of the signal's default action.
training() {
  local i
  for ((i = 0; i < 600; i++)); do
    grep -q '^\[train\]' "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "no training report in $1 within 60 s"
  return 1
}

# Preemption: SIGTERM checkpoints at the next boundary and exits 128 + 15.
onevar_sigterm() {
  local pid rc
  "$onevar" --run-dir "$runs/sig" --max-length batches=100000000 >"$runs/sig.out" 2>&1 &
  pid=$!
  training "$runs/sig.out"
  kill -TERM "$pid"
  wait "$pid"
  rc=$?
  cat "$runs/sig.out"
  test "$rc" -eq 143 &&
    grep -q 'by SIGTERM, checkpoint saved; the program exits with status 143' "$runs/sig.out" &&
    test -f "$runs/sig/checkpoints/latest"
}

# One run directory, one process: a second run on it fails at once, naming the holder (exit 2);
# once the holder is gone a run resumes there.
onevar_run_dir_in_use() {
  local pid out rc
  "$onevar" --run-dir "$runs/lock" --max-length batches=100000000 >"$runs/lock.out" 2>&1 &
  pid=$!
  training "$runs/lock.out"
  out=$("$onevar" --run-dir "$runs/lock" --max-length batches=10 2>&1)
  rc=$?
  kill -TERM "$pid"
  wait "$pid"
  echo "$out"
  test "$rc" -eq 2 &&
    grep -q "is in use by another run (pid $pid on" <<<"$out" &&
    "$onevar" --run-dir "$runs/lock" --resume latest --max-length batches=10 >/dev/null
}

# A full disk at a checkpoint: exit 1 naming the file and ENOSPC, `latest` still the previous
# checkpoint, which the next run resumes (after removing the failed write's leftovers).
onevar_disk_full() {
  local old out rc
  "$onevar" --run-dir "$runs/full" --max-length batches=10 >/dev/null || return 1
  old=$(cat "$runs/full/checkpoints/latest") || return 1
  out=$(DTL_FAULT=enospc DTL_FAULT_PATH=/checkpoints/ LD_PRELOAD=$fault \
    "$onevar" --run-dir "$runs/full" --resume latest --max-length batches=20 2>&1)
  rc=$?
  echo "$out"
  test "$rc" -eq 1 &&
    grep -q '^error: dtl: checkpoint: cannot write .*No space left on device' <<<"$out" &&
    ! grep -q 'terminate called' <<<"$out" &&
    test "$(cat "$runs/full/checkpoints/latest")" = "$old" &&
    "$onevar" --run-dir "$runs/full" --resume latest --max-length batches=20 2>&1 |
      grep -q 'removed .*left by an interrupted checkpoint write'
}

# A file-size limit (ulimit -f) at a checkpoint: SIGXFSZ is ignored, as Python does, so the write
# fails with EFBIG, reported like a full disk (exit 1, the file named), never a silent death by
# the signal (exit 153); a run without the limit then resumes.
onevar_file_size_limit() {
  local out rc
  out=$( (ulimit -f 2; exec "$onevar" --run-dir "$runs/fsize" --max-length batches=10) 2>&1)
  rc=$?
  echo "$out"
  test "$rc" -eq 1 &&
    grep -q '^error: dtl: .*File too large' <<<"$out" &&
    "$onevar" --run-dir "$runs/fsize" --resume latest --max-length batches=10 >/dev/null
}

# A checkpoint directory that becomes unwritable mid-run: one line in dtl's words (it was
# libstdc++'s "filesystem error: cannot create directories"), exit 1, earlier checkpoints intact.
onevar_checkpoint_dir_unwritable() {
  local old out rc
  "$onevar" --run-dir "$runs/unw" --max-length batches=10 >/dev/null || return 1
  old=$(cat "$runs/unw/checkpoints/latest") || return 1
  out=$(DTL_FAULT=erofs DTL_FAULT_PATH=/checkpoints/.tmp- LD_PRELOAD=$fault \
    "$onevar" --run-dir "$runs/unw" --resume latest --max-length batches=20 2>&1)
  rc=$?
  echo "$out"
  test "$rc" -eq 1 &&
    grep -q '^error: dtl: checkpoint: cannot create the directory .*Read-only file system; make .* writable' <<<"$out" &&
    ! grep -q 'filesystem error' <<<"$out" &&
    test "$(cat "$runs/unw/checkpoints/latest")" = "$old" &&
    test -f "$runs/unw/checkpoints/$old/state_dict.pth"
}

# A run directory on a read-only file system: exit 2 naming it, nothing in it changed; its
# checkpoint still resumes into a writable run directory (onevar_disk_full's run directory).
onevar_read_only() {
  local before out rc
  before=$(tree_checksums "$runs/full")
  out=$(DTL_FAULT=erofs DTL_FAULT_PATH=$runs/full LD_PRELOAD=$fault \
    "$onevar" --run-dir "$runs/full" --resume latest --max-length batches=30 2>&1)
  rc=$?
  echo "$out"
  test "$rc" -eq 2 &&
    grep -q 'Read-only file system. A run writes its metrics and checkpoints there: pass a writable --run-dir' <<<"$out" &&
    test "$(tree_checksums "$runs/full")" = "$before" &&
    DTL_FAULT=erofs DTL_FAULT_PATH=$runs/full LD_PRELOAD=$fault \
      "$onevar" --run-dir "$runs/elsewhere" \
      --resume "$runs/full/checkpoints/$(cat "$runs/full/checkpoints/latest")" \
      --max-length batches=30 >/dev/null
}

# ---- the examples a user copies: each trains briefly ---------------------------------------------

# The GAN trains and reports its validation gap.
gan_example() {
  "$build/examples/gan" --run-dir "$runs/gan" --max-length batches=128 >"$runs/gan.out" 2>&1 || {
    cat "$runs/gan.out"
    return 1
  }
  grep -q '"validation_gap"' "$runs/gan/metrics.jsonl"
}

# roc_auc's reducer: the last validation AUC is above 0.8.
roc_auc_example() {
  "$build/examples/roc_auc" --run-dir "$runs/auc" --max-length batches=64 >"$runs/auc.out" 2>&1 || {
    cat "$runs/auc.out"
    return 1
  }
  last_validation_auc_above_0_8 "$runs/auc/metrics.jsonl"
}

# roc_auc's reducer across 2 ranks, under torchrun of the Python whose torch is this LibTorch (the
# agent's store speaks its protocol).
roc_auc_torchrun() {
  "$python" -m torch.distributed.run --nproc_per_node 2 --redirects 9:1 --tee 9:1 --master_port 29631 \
    --no_python "$build/examples/roc_auc" --run-dir "$runs/auc2" --max-length batches=64 \
    >"$runs/auc2.out" 2>&1 || {
    cat "$runs/auc2.out"
    return 1
  }
  last_validation_auc_above_0_8 "$runs/auc2/metrics.jsonl"
}

# Fashion-MNIST's test mode trains through to the end.
fashion_mnist_test_mode() {
  "$build/examples/fashion_mnist" --test-mode --run-dir "$runs/fmnist"
}

# ... and leaves a checkpoint that `latest` names, with its metadata (fashion_mnist_test_mode's run).
fashion_mnist_checkpoint() {
  test -f "$runs/fmnist/checkpoints/latest" &&
    test -f "$runs/fmnist/checkpoints/$(cat "$runs/fmnist/checkpoints/latest")/metadata.json"
}

# Without the data set, the error says which Debian package provides it.
fashion_mnist_missing_data() {
  "$build/examples/fashion_mnist" --test-mode --run-dir "$runs/x" --hparam data_dir=/nonexistent 2>&1 |
    grep -q 'apt-get install dataset-fashion-mnist'
}

# ---- the checks, in order ----------------------------------------------------------------------

check "$label:onevar_analytic" onevar_analytic
check "$label:onevar_compiled_lib" onevar_compiled_lib
check "$label:onevar_split" onevar_split
check "$label:onevar_metrics_jsonl" onevar_metrics_jsonl
check "$label:onevar_bad_flag" onevar_bad_flag
check "$label:onevar_huge_batch" onevar_huge_batch
check "$label:onevar_hparam_typo" onevar_hparam_typo
check "$label:onevar_no_cuda" onevar_no_cuda
check "$label:onevar_resume_missing" onevar_resume_missing
check "$label:onevar_resume_corrupt" onevar_resume_corrupt
check "$label:onevar_resume_latest_fresh" onevar_resume_latest_fresh
check "$label:onevar_sigterm" onevar_sigterm
check "$label:onevar_run_dir_in_use" onevar_run_dir_in_use
check "$label:onevar_disk_full" onevar_disk_full
check "$label:onevar_file_size_limit" onevar_file_size_limit
check "$label:onevar_checkpoint_dir_unwritable" onevar_checkpoint_dir_unwritable
check "$label:onevar_read_only" onevar_read_only
check "$label:gan_example" gan_example
check "$label:roc_auc_example" roc_auc_example
check "$label:roc_auc_torchrun" roc_auc_torchrun
check "$label:fashion_mnist_test_mode" fashion_mnist_test_mode
check "$label:fashion_mnist_checkpoint" fashion_mnist_checkpoint
check "$label:fashion_mnist_missing_data" fashion_mnist_missing_data

echo "examples: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
