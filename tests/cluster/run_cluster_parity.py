#!/usr/bin/env python3
"""dtl talks to a Determined master exactly like the real Python client: the scenario.

    run_cluster_parity.py --python PY [--dtl BIN] [--work DIR] [--keep] [--repeat N] [--slots N]

PY is a Python with determined 0.38.1 and torch (the repo's .venv); BIN is dtl's twin of the
oracle trial (tests/oracle_trials), which in cluster mode takes its hparams and seed from DET_*.

The scenario, against a fresh tests/cluster/fake_master.py:
  run 1 (DET_TRIAL_RUN_ID=1, allocation <task>.1): the master has set preemption before the trial
        starts (POST /_fake/preempt), so the watch's first answer (timeout_seconds=0) is true, and
        both clients wait for that first answer at their first boundary: the trial trains 12
        batches, validates, sees the preemption after the validation, acks, checkpoints (the exit
        checkpoint) and exits 0. (A preemption set while training is timing-dependent for dtl,
        which registers checkpoints from its background writer; set before the start it is not.
        tests/cluster/run_cluster_faults.py preempts mid-run and checks invariants instead.)
  then a reschedule (POST /_fake/next_run {run_id: 2, allocation_id: <task>.2});
  run 2 (DET_TRIAL_RUN_ID=2, DET_LATEST_CHECKPOINT=<the uuid registered at 12>,
        DET_STEPS_COMPLETED=12): resumes, trains to 24, validates, checkpoints, exits 0.
  Asserted on the master's final state: two checkpoints (steps 12 in run 1, 24 in run 2), each
  one's directory on the shared fs holding exactly the files of its `resources`; the preemption
  acked in run 1 and only there; nothing rejected.

Python's transcript is python.jsonl (and python-2.jsonl, ... for the stability check); dtl's is
dtl.jsonl. What is compared (compare_traffic.py, where the reasons are spelled out):
  * the metrics posts, in order, exactly (floats as floats; reportTime ignored): the Python
    harness ships them from a background thread, so where they fall among the other calls is not
    deterministic (observed), but their own order is;
  * every other call except the preemption long polls, in order, exactly, modulo checkpoint
    UUIDs (u1, u2, ... by first appearance), checkpoint resources (same file names, sizes
    printed not compared, dtl-only trial_state.json and Python-only code/ allowed), the
    metadata's determined_version (Python) vs dtl_version (dtl), reportTime;
  * the preemption polls per run by rules, not count (long polls depend on timing): the first
    asks timeout_seconds=0, every later one 60; run 1's last answer is preempt=true and the ack
    follows the checkpoint it preempted; run 2 sees no true.
Before comparing dtl with Python, the Python scenario runs --repeat times (default 3) and each
transcript must compare equal to the first under the same rules: that is what makes the rules the
strongest deterministic ones (were any looser, Python against itself would show it).
--slots 2 runs every trial, both sides, as 2 processes launched as a cluster launches them:
`python3 -m determined.launch.torch_distributed --redirects 9:1 --tee 9:1 -- TRIAL...` (through
fake_launch.py, which only installs the fake container's ClusterInfo first: see there), with
DET_SLOT_IDS=[0,1], resources.slots_per_trial 2, global_batch_size 8 (4 per rank, 12 batches an
epoch) and free ports for C10D_PORT and INTER_TRAIN_PROCESS_COMM_PORT_1/_2 per run. Each run's
launcher must exit 0 (torch.distributed.run fails when any rank does), every rank must have
trained its 12 batches, and the two sides' per-rank records ($DTL_ORACLE_OUT/rank<R>.jsonl:
losses per batch, training reports, validations) must be equal. On 2 ranks the Python harness's
non-chief rank talks to the master too, twice per run (observed, and in Determined's source):
POST /api/v1/runs/start (core.init calls _run_prepare on every rank; its `distributed` argument
is unused) and GET /api/v1/trials/{id} (the Trainer's _get_last_validation, dropped by the rules);
everything else comes from the chief.
Exit 0 when everything holds; 1 with the first difference otherwise. --fault SPEC (repeatable)
is handed to every fake master: `--fault delay:metrics:0.7` moves the metrics posts and
multiplies the polls, and Python must still compare equal to an undisturbed transcript.
"""
import argparse
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))

try:
    import torch  # noqa: F401  (cluster_env needs tests/oracle/oracle_common, which needs torch)
except ImportError:
    if os.environ.get("DTL_CLUSTER_PARITY_REEXEC"):
        raise
    _a = sys.argv[1:]
    _py = _a[_a.index("--python") + 1] if "--python" in _a else None
    if not _py:
        sys.exit("run_cluster_parity.py: --python PY is required")
    os.environ["DTL_CLUSTER_PARITY_REEXEC"] = "1"
    os.execv(_py, [_py, os.path.abspath(__file__)] + _a)

import cluster_env  # noqa: E402
import compare_traffic  # noqa: E402

PREEMPT_AT = 12
MAX_POLL = 2.0


class Failure(Exception):
    pass


class Master:
    def __init__(self, python, work, record, faults=(), extra=()):
        self.port_file = os.path.join(work, "master.port")
        self.tls = "--tls-cert" in extra  # the control routes over HTTPS too
        self.record = record
        if os.path.exists(record):
            os.remove(record)
        self.log = open(os.path.join(work, "master.log"), "w")
        self.proc = subprocess.Popen(
            [python, os.path.join(HERE, "fake_master.py"), "--port-file", self.port_file,
             "--record", record, "--token", cluster_env.TOKEN,
             "--trial-id", str(cluster_env.TRIAL_ID), "--experiment-id", str(cluster_env.EXPERIMENT_ID),
             "--allocation-id", cluster_env.allocation_id(1), "--task-id", cluster_env.TASK_ID,
             "--run-id", "1", "--searcher-metric", cluster_env.SEARCHER_METRIC,
             "--max-poll-seconds", str(MAX_POLL)]
            + [f"--fault={f}" for f in faults] + list(extra),
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while not os.path.exists(self.port_file):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise Failure("the fake master did not start (see master.log)")
            time.sleep(0.05)
        with open(self.port_file) as f:
            self.port = int(f.read())

    def control(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        scheme, tls = ("https", ssl._create_unverified_context()) if self.tls else ("http", None)
        req = urllib.request.Request(f"{scheme}://127.0.0.1:{self.port}{path}", data=data, method=method)
        with urllib.request.urlopen(req, timeout=10, context=tls) as r:
            return json.loads(r.read())

    def state(self):
        return self.control("GET", "/_fake/state")

    def settle(self):
        """Wait until no request is pending (a dead client's long poll ends within MAX_POLL)."""
        deadline = time.monotonic() + MAX_POLL + 5
        while True:
            st = self.state()
            if st["pending"] == 0 or time.monotonic() > deadline:
                return st
            time.sleep(0.1)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def run_trial(argv, env, log, master, timeout=120):
    """Runs one trial (a process, or the launcher and everything it starts, in a session of its
    own); on a hang, dumps both sides' stacks (SIGUSR2 to the trial's process group: a Python
    trial's faulthandler prints, dtl and the launcher's processes just end; SIGUSR1 to the master)
    into their logs, kills the group and fails."""
    with open(log, "w") as f:
        t0 = time.monotonic()
        p = subprocess.Popen(argv, env=env, stdout=f, stderr=subprocess.STDOUT,
                             cwd=env["DET_WORKDIR"], start_new_session=True)
        try:
            rc = p.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGUSR2)
            master.proc.send_signal(signal.SIGUSR1)
            time.sleep(1)
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            raise Failure(f"{argv} hung for {timeout} s (stacks in {log} and master.log)")
        # the launcher's processes are gone when it returns; anything left of the group is not
        try:
            os.killpg(p.pid, 0)
        except ProcessLookupError:
            pass
        else:
            os.killpg(p.pid, signal.SIGKILL)
            raise Failure(f"{argv} exited {rc} but left processes behind (killed; see {log})")
    return rc, time.monotonic() - t0


def scenario(label, argv_for, python, work, record, faults=(), slots=1):
    """Runs the two-run scenario; returns (seconds, final master state)."""
    if os.path.exists(work):
        shutil.rmtree(work)
    os.makedirs(work)
    master = Master(python, work, record, faults)
    t0 = time.monotonic()
    try:
        base = {k: v for k, v in os.environ.items() if not k.startswith(("DET_", "DTL_"))}

        def env_for(run_id, latest=None, steps=0):
            e = dict(base)
            e.update(cluster_env.trial_env(
                master.port, work, run_id, latest, steps, slots=slots,
                unique_ports=cluster_env.unique_ports() if slots > 1 else None))
            e["DTL_ORACLE_OUT"] = os.path.join(work, f"out-run{run_id}")
            if slots > 1:
                # the launcher runs `python3 -m ...` (pid_server, torch.distributed.run): this one
                e["PATH"] = os.path.dirname(python) + os.pathsep + e.get("PATH", "")
            return e

        def run(run_id, latest=None, steps=0):
            try:
                rc, dt = run_trial(argv_for(work), env_for(run_id, latest, steps),
                                   os.path.join(work, f"run{run_id}.log"), master)
            finally:
                forget_pid_server(run_id, slots)
            if rc != 0:
                raise Failure(f"{label} run {run_id} exited {rc} (see {work}/run{run_id}.log)")
            check_ranks(label, work, run_id, slots)
            return dt

        master.control("POST", "/_fake/preempt")  # before run 1 starts: see the docstring
        dt1 = run(1)
        st = master.settle()
        if [c["steps_completed"] for c in st["checkpoints"]] != [PREEMPT_AT] or not st["acked"]:
            raise Failure(f"{label} run 1: want one checkpoint at {PREEMPT_AT} and an ack, master "
                          f"has {st}")
        first = st["checkpoints"][0]["uuid"]
        master.control("POST", "/_fake/next_run",
                       {"run_id": 2, "allocation_id": cluster_env.allocation_id(2)})
        dt2 = run(2, first, PREEMPT_AT)
        st = master.settle()
    finally:
        master.stop()
    took = time.monotonic() - t0
    steps = [(c["steps_completed"], c["run_id"]) for c in st["checkpoints"]]
    if steps != [(PREEMPT_AT, 1), (2 * PREEMPT_AT, 2)]:
        raise Failure(f"{label}: want checkpoints at (steps, run) {PREEMPT_AT},1 and "
                      f"{2 * PREEMPT_AT},2; master has {steps}")
    if st["acked_runs"] != [1]:
        raise Failure(f"{label}: want the preemption acked in run 1 only, acked in {st['acked_runs']}")
    if st["rejected"]:
        raise Failure(f"{label}: the master rejected {st['rejected']}")
    check_files(label, work, record)
    print(f"{label}: scenario ok in {took:.1f} s (run 1 {dt1:.1f} s, run 2 {dt2:.1f} s)")
    return took, st


def forget_pid_server(run_id, slots):
    """determined.launch.torch_distributed's pid_server binds a Unix socket at
    /tmp/pid_server-<allocation id> and never unlinks it (a container's /tmp goes with the
    container); the test's /tmp stays, so the test removes it after each run, failed or not."""
    if slots > 1:
        try:
            os.remove(f"/tmp/pid_server-{cluster_env.allocation_id(run_id)}")
        except FileNotFoundError:
            pass


def rank_records(work, run_id, rank):
    """What the oracle trial logged on one rank in one run (tests/oracle/det_trials.py's kinds),
    less the checkpoint directories (paths)."""
    path = os.path.join(work, f"out-run{run_id}", f"rank{rank}.jsonl")
    with open(path) as f:
        return [r for r in (json.loads(line) for line in f if line.strip())
                if r["kind"] != "checkpoint"]


def check_ranks(label, work, run_id, slots):
    """Every rank trained its share of the run: PREEMPT_AT batches, from where run 1 stopped in
    run 2 (the launcher's exit status 0 already says that every rank exited 0: torch.distributed.run
    fails when any worker does, and pid_server with it)."""
    for rank in range(slots):
        try:
            recs = rank_records(work, run_id, rank)
        except FileNotFoundError:
            raise Failure(f"{label} run {run_id}: rank {rank} logged nothing")
        batches = [r for r in recs if r["kind"] == "batch"]
        if len(batches) != PREEMPT_AT:
            raise Failure(f"{label} run {run_id}: rank {rank} trained {len(batches)} batches, "
                          f"want {PREEMPT_AT}")


def compare_ranks(work_a, work_b, slots, labels):
    """The two sides' trials saw the same things on every rank in both runs: losses per batch,
    training reports, validations, compared exactly (JSON as logged). None when equal."""
    for run_id in (1, 2):
        for rank in range(slots):
            a, b = rank_records(work_a, run_id, rank), rank_records(work_b, run_id, rank)
            for i, (x, y) in enumerate(zip(a, b)):
                if x != y:
                    return (f"run {run_id} rank {rank} record {i}:\n  {labels[0]}: {x}\n"
                            f"  {labels[1]}: {y}")
            if len(a) != len(b):
                return f"run {run_id} rank {rank}: {len(a)} records ({labels[0]}) vs {len(b)}"
    return None


def check_files(label, work, record):
    """Each reported checkpoint's directory holds exactly the files its resources name."""
    root = cluster_env.checkpoint_root(work)
    for call in compare_traffic.load(record):
        if call["method"] == "POST" and call["path"] == "/api/v1/checkpoints":
            d = os.path.join(root, call["body"]["uuid"])
            on_disk = set()
            for dirpath, dirnames, filenames in os.walk(d):
                rel = os.path.relpath(dirpath, d)
                for n in dirnames:
                    on_disk.add(os.path.normpath(os.path.join(rel, n)) + "/")
                for n in filenames:
                    on_disk.add(os.path.normpath(os.path.join(rel, n)))
            listed = set(call["body"]["resources"])
            if on_disk != listed:
                raise Failure(f"{label}: checkpoint {d}: files {sorted(on_disk)} but resources "
                              f"{sorted(listed)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", required=True)
    ap.add_argument("--dtl")
    ap.add_argument("--work")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--repeat", type=int, default=3,
                    help="Python scenarios for the stability check (>= 1)")
    ap.add_argument("--slots", type=int, default=1,
                    help="processes per trial; > 1 runs each trial under "
                         "determined.launch.torch_distributed (fake_launch.py)")
    ap.add_argument("--fault", action="append", default=[],
                    help="passed to every fake master (e.g. delay:metrics:0.7, to shake the "
                         "timing: the comparison must still hold)")
    a = ap.parse_args()
    work = os.path.abspath(a.work) if a.work else tempfile.mkdtemp(prefix="dtl-cluster-parity-")
    os.makedirs(work, exist_ok=True)
    py_trial = os.path.join(HERE, "det_cluster_trial.py")

    def launched(argv):
        if a.slots == 1:
            return argv
        # python3 -m determined.launch.torch_distributed --redirects 9:1 --tee 9:1 -- ARGV
        # (the overrides go to torch.distributed.run: Debian's torchrun on Python 3.11 needs them)
        return [a.python, os.path.join(HERE, "fake_launch.py"), "--redirects", "9:1", "--tee",
                "9:1", "--"] + argv

    ok = False
    try:
        records = []
        for i in range(max(1, a.repeat)):
            name = "python" if i == 0 else f"python-{i + 1}"
            rec = os.path.join(work, f"{name}.jsonl")
            scenario(name, lambda w: launched([a.python, py_trial]), a.python,
                     os.path.join(work, name), rec, a.fault, a.slots)
            records.append(rec)
        for rec in records[1:]:
            diff = compare_traffic.compare_files(records[0], rec)
            if diff:
                print(f"Python against itself: {os.path.basename(records[0])} vs "
                      f"{os.path.basename(rec)} differ, so the comparison is not deterministic:")
                print(diff)
                return 1
        if len(records) > 1:
            print(f"Python against itself: {len(records)} transcripts compare equal")
        if a.dtl:
            rec = os.path.join(work, "dtl.jsonl")
            dtl = os.path.abspath(a.dtl)
            scenario("dtl", lambda w: launched([dtl, "--run-dir", os.path.join(w, "dtl-run")]),
                     a.python, os.path.join(work, "dtl"), rec, a.fault, a.slots)
            diff = compare_traffic.compare_files(records[0], rec, labels=("python", "dtl"))
            compare_traffic.print_sizes(records[0], rec, labels=("python", "dtl"))
            # what the trials saw, every rank, both runs: reported either way
            seen = compare_ranks(os.path.join(work, "python"), os.path.join(work, "dtl"),
                                 a.slots, ("python", "dtl"))
            if seen:
                print("dtl against Python: the trials saw different things:")
                print(seen)
            else:
                print(f"dtl against Python: every rank's losses, training reports and "
                      f"validations are equal in both runs ({a.slots} rank(s))")
            if diff:
                print("dtl against Python: the transcripts differ:")
                print(diff)
                return 1
            print("dtl against Python: the transcripts compare equal")
            if seen:
                return 1
        ok = True
        return 0
    except Failure as e:
        print(f"FAILED: {e}")
        return 1
    finally:
        if ok and not a.keep and not a.work:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"work directory: {work}")


if __name__ == "__main__":
    sys.exit(main())
