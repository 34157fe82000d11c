#!/usr/bin/env python3
"""A master that is down, slow or refusing never loses a dtl cluster trial's work, and never hangs
its ranks: dtl's twin of the oracle trial (tests/oracle_trials) against tests/cluster/fake_master.py
with faults, one case at a time. Each case states what must hold:

  transient_500s     the master answers 500 to four metrics/checkpoint reports: dtl retries them,
                     says so once and again when the master answers; the run finishes (status 0)
                     with every report delivered and both checkpoints registered.
  slow_master        every metrics report is answered after 1.5 s: the run finishes with all of
                     them delivered.
  timing_out         DTL_MASTER_RETRY_SECONDS=2 and metrics answered after 4 s (past the request
                     timeout): the run fails (status 1) within a bound, naming what never reached
                     the master; the checkpoints written are on storage, complete.
  master_gone        the master closes its socket after 6 answers: the run fails within a bound,
                     naming the checkpoint registrations that never reached it; they are on
                     storage, complete. On 2 ranks (torchrun) too: both ranks exit, non-zero.
  signal_ends_flush_wait  the master goes away; fit's final flush says after 2 s what it waits for
                     and for how long, and a SIGTERM then ends the wait at once (status non-zero, the
                     reports never delivered named; the checkpoints on storage complete).
  killed_before_registration  SIGKILL while checkpoint registrations are still queued: the
                     rescheduled run removes the checkpoint the master never heard of (newer than
                     the one it resumes from), says so, and finishes with every checkpoint on
                     storage registered.
  killed_mid_write   what a run killed while writing a checkpoint leaves on the shared storage (its
                     `.tmp-<uuid>` directory, claimed by the marker written before the write): the
                     next run of the trial removes it, says so, and finishes; no marker is left.
  refused_registration  the master refuses (400) the first checkpoint's registration: the run
                     fails naming the checkpoint and where it is on storage; it is there.
  preempted_mid_run  preemption is set when the checkpoint at 12 is registered (during training,
                     timing-dependent): the run stops at a later boundary, acknowledges, writes and
                     registers its stop checkpoint and exits 0; every checkpoint on storage is
                     registered, and the last one registered is where it stopped.
  preempt_wrong_type  the preemption poll answers "preempt" as "yes", "false", 1, null or an object:
                     each run stops at its next boundary with its checkpoint registered and fails
                     (status 1) naming the master and the poll.
  wrong_token        the allocation token is not the master's: dtl::init fails (status 2) naming the
                     token, before anything is written.
  master_down_at_start  no master listens: dtl::init retries within DTL_MASTER_RETRY_SECONDS and
                     fails (status 2) before anything is written.
  invalid_hp         the trial throws dtl::InvalidHP: the master hears an early exit
                     (EXITED_REASON_INVALID_HP) and the program exits 0.
  searcher_metric_missing  the experiment's searcher.metric is not among the trial's validation
                     metrics: the trial fails (status 1) naming it and those there are, and no
                     such validation reaches the master (whose searcher would fail the experiment).
  flagship_example   examples/fashion_mnist with examples/determined/fashion_mnist.yaml as the
                     master hands it over (and a sample of its hyperparameters), for 40 batches:
                     its validation reported, its checkpoint under the config's storage_path.
  tls_verified       the master serves HTTPS with a certificate for another name than its address:
                     DET_MASTER_CERT_FILE and DET_MASTER_CERT_NAME make it verify; the run finishes.
  tls_noverify       DET_MASTER_CERT_FILE=noverify: the run finishes.
  tls_wrong_name     the certificate without DET_MASTER_CERT_NAME: dtl::init fails at once (no
                     retries), pointing at the certificate variables.

    run_cluster_faults.py --dtl BIN [--python PY] [--work DIR] [--only CASE]
Exit 0 when every case holds; 1 with the first that does not.
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cluster_env  # noqa: E402
from run_cluster_parity import Master  # noqa: E402

BOUND = 60  # seconds: a failing run must end well within this (its budget is 2-3 s)


class Failure(Exception):
    pass


def expect(cond, what, log=None):
    if not cond:
        tail = ""
        if log and os.path.exists(log):
            with open(log) as f:
                tail = "\n" + "".join(f.readlines()[-15:])
        raise Failure(what + tail)


def records(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def checkpoint_dirs(work):
    root = cluster_env.checkpoint_root(work)
    if not os.path.isdir(root):
        return {}
    out = {}
    for name in os.listdir(root):
        meta = os.path.join(root, name, "metadata.json")
        if os.path.isfile(meta):
            with open(meta) as f:
                out[name] = json.load(f)["steps_completed"]
    return out


class Case:
    def __init__(self, args, name, faults=(), extra=(), env=None, token=None, hp=None, nproc=1, master=True,
                 tls=False):
        self.args, self.name = args, name
        self.work = os.path.join(args.work, name)
        shutil.rmtree(self.work, ignore_errors=True)
        os.makedirs(self.work)
        self.record = os.path.join(self.work, "record.jsonl")
        if tls:
            extra = list(extra) + ["--tls-cert", args.cert, "--tls-key", args.key]
        self.master = Master(args.python, self.work, self.record, faults, extra) if master else None
        port = self.master.port if master else free_port()
        e = {k: v for k, v in os.environ.items() if not k.startswith(("DET_", "DTL_"))}
        e.update(cluster_env.trial_env(port, self.work, token=token or cluster_env.TOKEN,
                                       hp=hp if hp is not None else cluster_env.hparams()))
        if tls:
            e["DET_MASTER"] = f"https://127.0.0.1:{port}"
            e["DET_USE_TLS"] = "true"
        e["DTL_ORACLE_OUT"] = os.path.join(self.work, "out")
        e.update(env or {})
        self.env, self.nproc = e, nproc
        self.log = os.path.join(self.work, "trial.log")

    def run(self, argv=None):
        argv = (argv or [self.args.dtl]) + ["--run-dir", os.path.join(self.work, "run")]
        if self.nproc > 1:
            argv = [self.args.python, "-m", "torch.distributed.run", "--nproc_per_node", str(self.nproc),
                    "--redirects", "9:1", "--tee", "9:1", "--master_port", str(free_port()), "--no_python"] + argv
        t0 = time.monotonic()
        with open(self.log, "w") as f:
            try:
                rc = subprocess.run(argv, env=self.env, cwd=self.work, stdout=f, stderr=subprocess.STDOUT,
                                    timeout=BOUND).returncode
            except subprocess.TimeoutExpired:
                raise Failure(f"{self.name}: the trial did not end within {BOUND} s (a hang)")
        self.seconds = time.monotonic() - t0
        with open(self.log) as f:
            self.output = f.read()
        return rc

    def state(self):
        return self.master.settle()

    def close(self):
        if self.master:
            self.master.stop()

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.close()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def answered(recs, pattern, status=200):
    return [r for r in recs if re.search(pattern, f"{r['method']} {r['path']}") and r["status"] == status]


def case_transient_500s(a):
    with Case(a, "transient_500s", faults=["500:^POST /api/v1/(trials/1/metrics|checkpoints)$:4"]) as c:
        rc = c.run()
        expect(rc == 0, f"transient_500s: status {rc}, want 0", c.log)
        expect("did not take" in c.output and "answers again" in c.output,
               "transient_500s: no warning that the master did not take a report, or none that it answers again", c.log)
        st = c.state()
        recs = records(c.record)
        expect(len(answered(recs, r"trials/1/metrics", 500)) + len(answered(recs, "checkpoints$", 500)) == 4,
               "transient_500s: the master did not answer 500 four times")
        expect(len(answered(recs, r"trials/1/metrics")) == 4, "transient_500s: want 4 metrics reports delivered")
        expect([ck["steps_completed"] for ck in st["checkpoints"]] == [12, 24],
               f"transient_500s: registered {st['checkpoints']}, want steps 12 and 24")
        expect(not st["rejected"], f"transient_500s: rejected {st['rejected']}")


def case_slow_master(a):
    with Case(a, "slow_master", faults=["delay:^POST /api/v1/trials/1/metrics$:1.5"]) as c:
        rc = c.run()
        expect(rc == 0, f"slow_master: status {rc}, want 0", c.log)
        st = c.state()
        expect(len(answered(records(c.record), r"trials/1/metrics")) == 4, "slow_master: want 4 metrics reports")
        expect([ck["steps_completed"] for ck in st["checkpoints"]] == [12, 24], f"slow_master: {st['checkpoints']}")


def stored_complete(c, what):
    dirs = checkpoint_dirs(c.work)
    expect(dirs, f"{what}: no checkpoint on storage")
    for uuid in dirs:
        for f in ("metadata.json", "state_dict.pth", "trial_state.pkl"):
            expect(os.path.isfile(os.path.join(cluster_env.checkpoint_root(c.work), uuid, f)),
                   f"{what}: checkpoint {uuid} lacks {f}")
    return dirs


def case_timing_out(a):
    with Case(a, "timing_out", faults=["delay:^POST /api/v1/trials/1/metrics$:4"],
             env={"DTL_MASTER_RETRY_SECONDS": "2"}) as c:
        rc = c.run()
        expect(rc == 1, f"timing_out: status {rc}, want 1", c.log)
        expect("has not answered for 2 s" in c.output and "never reached it" in c.output,
               "timing_out: the error does not say the master stopped answering and what never reached it", c.log)
        stored_complete(c, "timing_out")


def case_master_gone(a, nproc=1):
    name = "master_gone" + ("" if nproc == 1 else f"_{nproc}_ranks")
    with Case(a, name, faults=["down-after:6"], env={"DTL_MASTER_RETRY_SECONDS": "3"}, nproc=nproc) as c:
        rc = c.run()
        expect(rc != 0, f"{name}: status 0, want a failure", c.log)
        expect("never reached it" in c.output, f"{name}: the error does not list what never reached the master", c.log)
        dirs = stored_complete(c, name)
        for uuid in dirs:
            expect(uuid in c.output, f"{name}: checkpoint {uuid} is on storage but the error does not name it", c.log)
        if nproc > 1:  # every rank stopped at the chief's boundary: none ran on, none hung
            trained = [sum('"batch"' in line for line in open(os.path.join(c.work, "out", f"rank{r}.jsonl")))
                       for r in range(nproc)]
            expect(trained[0] > 0 and len(set(trained)) == 1, f"{name}: batches trained per rank {trained}", c.log)


def case_signal_ends_flush_wait(a):
    """The master goes away; at the end of the run fit's final flush waits for it (up to the retry
    budget, 600 s here): after 2 s it says so, for how long and how many reports are owed, and a
    SIGTERM then ends the wait at once, the error naming what never reached the master."""
    with Case(a, "signal_ends_flush_wait", faults=["down-after:6"], env={"DTL_MASTER_RETRY_SECONDS": "600"}) as c:
        argv = [a.dtl, "--run-dir", os.path.join(c.work, "run")]
        t0 = time.monotonic()
        with open(c.log, "w") as f:
            p = subprocess.Popen(argv, env=c.env, cwd=c.work, stdout=f, stderr=subprocess.STDOUT)
            said = False
            while time.monotonic() - t0 < 120 and p.poll() is None:
                time.sleep(0.2)
                with open(c.log) as g:
                    if "dtl: waiting up to 631 s for the master at" in g.read():
                        said = True
                        break
            expect(said, "signal_ends_flush_wait: no line saying what the final flush waits for", c.log)
            t_signal = time.monotonic()
            p.send_signal(signal.SIGTERM)
            try:
                rc = p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                raise Failure("signal_ends_flush_wait: the wait went on 20 s after SIGTERM")
        with open(c.log) as g:
            out = g.read()
        expect(rc != 0, f"signal_ends_flush_wait: status {rc}, want a failure", c.log)
        expect(time.monotonic() - t_signal < 20, "signal_ends_flush_wait: the signal did not end the wait", c.log)
        expect("stopped waiting for the master" in out and "never reached it" in out,
               "signal_ends_flush_wait: the error does not name what never reached the master", c.log)
        stored_complete(c, "signal_ends_flush_wait")


def published(work):
    """The checkpoints on storage, without a write the kill interrupted (.tmp-*)."""
    return {u: s for u, s in checkpoint_dirs(work).items() if not u.startswith(".")}


def case_killed_before_registration(a):
    """Every POST answered after 1.5 s, so the checkpoints' registrations queue behind the reports;
    the trial is SIGKILLed once both its checkpoints are on storage and at least one is not
    registered. The master reschedules it from its latest registered checkpoint: the new run
    removes the checkpoint the master never heard of (newer than the one it resumes from), says
    so, and finishes; at the end every checkpoint on storage is registered."""
    with Case(a, "killed_before_registration", faults=["delay:^POST /api/v1/:1.5"]) as c:
        argv = [a.dtl, "--run-dir", os.path.join(c.work, "run")]
        with open(c.log, "w") as f:
            p = subprocess.Popen(argv, env=c.env, cwd=c.work, stdout=f, stderr=subprocess.STDOUT)
            t0 = time.monotonic()
            ready = False
            while time.monotonic() - t0 < 60 and p.poll() is None:
                dirs = published(c.work)
                registered = {ck["uuid"] for ck in c.master.state()["checkpoints"]}
                if len(dirs) >= 2 and set(dirs) - registered:
                    ready = True
                    break
                time.sleep(0.05)
            p.kill()
            p.wait()
        expect(ready, "killed_before_registration: never saw two checkpoints on storage with one unregistered", c.log)
        registered = {ck["uuid"]: ck["steps_completed"] for ck in c.state()["checkpoints"]}
        orphans = set(published(c.work)) - set(registered)
        expect(orphans, "killed_before_registration: every checkpoint got registered after all (nothing to test)")
        latest = max(registered, key=registered.get) if registered else None
        c.master.control("POST", "/_fake/next_run", {"run_id": 2, "allocation_id": cluster_env.allocation_id(2)})
        c.env.update(cluster_env.trial_env(c.master.port, c.work, run_id=2, latest_checkpoint=latest,
                                           steps_completed=registered.get(latest, 0)))
        rc = c.run()
        expect(rc == 0, f"killed_before_registration: the rescheduled run's status {rc}, want 0", c.log)
        for uuid in orphans:
            expect(f"dtl: removed checkpoint {uuid}" in c.output,
                   f"killed_before_registration: {uuid} was not removed, or not said", c.log)
        final = {ck["uuid"] for ck in c.state()["checkpoints"]}
        on_storage = set(published(c.work))
        expect(on_storage <= final, f"killed_before_registration: unregistered on storage: {sorted(on_storage - final)}")
        left = [n for n in os.listdir(cluster_env.checkpoint_root(c.work)) if n.startswith(".dtl-unregistered-")]
        expect(not left, f"killed_before_registration: markers left on storage: {left}")


def case_killed_mid_write(a):
    with Case(a, "killed_mid_write") as c:
        root = cluster_env.checkpoint_root(c.work)
        os.makedirs(root, exist_ok=True)
        uuid = "5e1f0c1e-0000-4000-8000-000000000001"
        tmp = os.path.join(root, ".tmp-" + uuid)
        os.makedirs(tmp)
        with open(os.path.join(tmp, "state_dict.pth"), "wb") as f:
            f.write(b"half a checkpoint")
        with open(os.path.join(root, f".dtl-unregistered-{cluster_env.TRIAL_ID}-{uuid}"), "w") as f:
            f.write("writing\n")
        other = os.path.join(root, ".tmp-another-trials-write")  # not claimed by this trial: stays
        os.makedirs(other)
        rc = c.run()
        expect(rc == 0, f"killed_mid_write: status {rc}, want 0", c.log)
        expect(not os.path.exists(tmp), "killed_mid_write: the interrupted write's directory is still there", c.log)
        expect(f"dtl: removed .tmp-{uuid} from " in c.output, "killed_mid_write: the removal was not said", c.log)
        expect(os.path.isdir(other), "killed_mid_write: a temporary of another writer was removed", c.log)
        left = [n for n in os.listdir(root) if n.startswith(".dtl-unregistered-")]
        expect(not left, f"killed_mid_write: markers left on storage: {left}")
        registered = {ck["uuid"] for ck in c.state()["checkpoints"]}
        expect(set(published(c.work)) <= registered, "killed_mid_write: an unregistered checkpoint on storage")


def case_refused_registration(a):
    with Case(a, "refused_registration", faults=["400:^POST /api/v1/checkpoints$:1"]) as c:
        rc = c.run()
        expect(rc == 1, f"refused_registration: status {rc}, want 1", c.log)
        m = re.search(r"refused the registration of checkpoint (\S+) \(batch 12\), which is on storage at (\S+):",
                      c.output)
        expect(m is not None, "refused_registration: the error does not name the checkpoint and where it is", c.log)
        expect(os.path.isfile(os.path.join(m.group(2), "state_dict.pth")),
               f"refused_registration: {m.group(2)} is not a complete checkpoint")


def case_preempted_mid_run(a):
    with Case(a, "preempted_mid_run", extra=["--preempt-after-checkpoint", "12"]) as c:
        rc = c.run()
        expect(rc == 0, f"preempted_mid_run: status {rc}, want 0", c.log)
        st = c.state()
        expect(st["acked"], "preempted_mid_run: the preemption was not acknowledged", c.log)
        registered = {ck["uuid"]: ck["steps_completed"] for ck in st["checkpoints"]}
        dirs = checkpoint_dirs(c.work)
        expect(registered == dirs, f"preempted_mid_run: on storage {dirs}, registered {registered}")
        m = re.search(r"preempted by the Determined master at batch (\d+)", c.output)
        expect(m is not None, "preempted_mid_run: no line saying where the preemption stopped it", c.log)
        expect(max(registered.values()) == int(m.group(1)),
               f"preempted_mid_run: stopped at {m.group(1)}, last registered {max(registered.values())}")


def case_preempt_wrong_type(a):
    """The preemption poll answered with a \"preempt\" that is not a boolean: the run stops at its next
    boundary with a checkpoint (registered) and exits 1 naming the master and the poll, for each
    wrong type (it threw on the poller thread and exited at once before)."""
    for i, value in enumerate(['"yes"', '"false"', '1', 'null', '{"a": 1}']):
        name = f"preempt_wrong_type_{i}"
        poll = "^GET /api/v1/allocations/[^/]+/signals/preemption"
        with Case(a, name, faults=[f"body:{poll}:{{\"preempt\": {value}}}"]) as c:
            rc = c.run()
            expect(rc == 1, f"{name}: status {rc}, want 1", c.log)
            expect("answered the preemption poll" in c.output and "which is not true or false" in c.output
                   and f":{c.master.port}" in c.output, f"{name}: the error does not name the master and the poll", c.log)
            expect("json.exception" not in c.output, f"{name}: a raw JSON exception reached the user", c.log)
            dirs = stored_complete(c, name)
            registered = {ck["uuid"] for ck in c.state()["checkpoints"]}
            expect(set(dirs) <= registered, f"{name}: on storage {sorted(dirs)}, registered {sorted(registered)}")


def case_wrong_token(a):
    with Case(a, "wrong_token", token="not-the-token") as c:
        rc = c.run()
        expect(rc == 2, f"wrong_token: status {rc}, want 2", c.log)
        expect("rejected the allocation token" in c.output, "wrong_token: the error does not name the token", c.log)
        expect(not checkpoint_dirs(c.work), "wrong_token: something was written to storage")


def case_master_down_at_start(a):
    with Case(a, "master_down_at_start", master=False, env={"DTL_MASTER_RETRY_SECONDS": "2"}) as c:
        rc = c.run()
        expect(rc == 2, f"master_down_at_start: status {rc}, want 2", c.log)
        expect("did not start the run" in c.output, "master_down_at_start: the error does not say so", c.log)
        expect(c.seconds < 30, f"master_down_at_start: took {c.seconds:.0f} s with a 2 s budget")


def case_invalid_hp(a):
    hp = dict(cluster_env.hparams(), invalid_hp=True)
    with Case(a, "invalid_hp", hp=hp) as c:
        rc = c.run()
        expect(rc == 0, f"invalid_hp: status {rc}, want 0", c.log)
        c.state()
        exits = answered(records(c.record), r"trials/1/early_exit$")
        expect(len(exits) == 1 and exits[0]["body"] == {"reason": "EXITED_REASON_INVALID_HP"},
               f"invalid_hp: want one early_exit with reason EXITED_REASON_INVALID_HP, got {exits}")


TLS_NAME = "fake-master.test"  # what the fake master's certificate is issued to (not 127.0.0.1)


def make_certificate(a):
    """A self-signed certificate for TLS_NAME, made once per run of this script."""
    d = os.path.join(a.work, "tls")
    os.makedirs(d, exist_ok=True)
    a.cert, a.key = os.path.join(d, "master.crt"), os.path.join(d, "master.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", a.key, "-out", a.cert,
                    "-days", "2", "-subj", f"/CN={TLS_NAME}", "-addext", f"subjectAltName=DNS:{TLS_NAME}"],
                   check=True, capture_output=True)


def case_tls(a, name, env, ok):
    with Case(a, name, tls=True, env=env) as c:
        rc = c.run()
        if ok:
            expect(rc == 0, f"{name}: status {rc}, want 0", c.log)
            st = c.state()
            expect([ck["steps_completed"] for ck in st["checkpoints"]] == [12, 24],
                   f"{name}: registered {st['checkpoints']}")
        else:
            expect(rc == 2, f"{name}: status {rc}, want 2", c.log)
            expect("TLS certificate" in c.output, f"{name}: the error does not point at the certificate", c.log)
            expect(c.seconds < 30, f"{name}: took {c.seconds:.0f} s: a certificate that fails is not retried")


def case_searcher_metric_missing(a):
    expconf = cluster_env.experiment_config(cluster_env.hparams())
    expconf["searcher"]["metric"] = "top5_accuracy"
    with Case(a, "searcher_metric_missing", env={"DET_EXPERIMENT_CONFIG": json.dumps(expconf)}) as c:
        rc = c.run()
        expect(rc == 1, f"searcher_metric_missing: status {rc}, want 1", c.log)
        expect("searcher.metric 'top5_accuracy' is not among this validation's metrics (validation_loss, accuracy)"
               in c.output, "searcher_metric_missing: the error does not name the metric and those there are", c.log)
        recs = records(c.record)
        expect(not [r for r in recs if r["path"].endswith("/metrics") and r["body"]["group"] == "validation"],
               "searcher_metric_missing: a validation without the searcher metric reached the master")


def case_flagship_example(a):
    """The flagship as examples/determined/fashion_mnist.yaml runs it: that config, as the master
    hands it over (expconf defaults filled in), the searcher's sample of its hyperparameters."""
    import yaml
    root = os.path.dirname(os.path.dirname(HERE))
    with open(os.path.join(root, "examples", "determined", "fashion_mnist.yaml")) as f:
        cfg = yaml.safe_load(f)
    hp = {}
    for k, v in cfg["hyperparameters"].items():  # a sample: each range's midpoint
        if isinstance(v, dict):
            mid = (v["minval"] + v["maxval"]) / 2
            hp[k] = v["base"] ** mid if v["type"] == "log" else mid
        else:
            hp[k] = v
    expconf = cluster_env.experiment_config(hp)
    for k in ("name", "entrypoint", "searcher", "checkpoint_storage", "max_restarts"):
        expconf[k] = cfg[k] if k != "checkpoint_storage" else dict(expconf[k], **cfg[k])
    expconf["hyperparameters"] = cfg["hyperparameters"]
    with Case(a, "flagship_example", hp=hp, env={"DET_EXPERIMENT_CONFIG": json.dumps(expconf)}) as c:
        c.env["DTL_SHARED_FS_CONTAINER_PATH"] = os.path.join(c.work, "shared_fs")
        rc = c.run([a.flagship, "--max-length", "batches=40"])
        expect(rc == 0, f"flagship_example: status {rc}, want 0", c.log)
        st = c.state()
        recs = records(c.record)
        vals = [r["body"]["metrics"] for r in answered(recs, r"trials/1/metrics")
                if r["body"]["group"] == "validation"]
        expect(len(vals) == 1 and vals[0]["stepsCompleted"] == 40 and "validation_loss" in vals[0]["metrics"]["avgMetrics"],
               f"flagship_example: want one validation at 40 with validation_loss, got {vals}")
        expect([ck["steps_completed"] for ck in st["checkpoints"]] == [40], f"flagship_example: {st['checkpoints']}")
        expect(not st["rejected"], f"flagship_example: rejected {st['rejected']}")
        # storage_path "dtl" of the example's shared_fs storage
        expect(os.path.isdir(os.path.join(c.work, "shared_fs", "dtl", st["checkpoints"][0]["uuid"])),
               "flagship_example: the checkpoint is not under the example's storage_path")


CASES = {
    "transient_500s": case_transient_500s,
    "slow_master": case_slow_master,
    "timing_out": case_timing_out,
    "master_gone": case_master_gone,
    "master_gone_2_ranks": lambda a: case_master_gone(a, nproc=2),
    "refused_registration": case_refused_registration,
    "killed_before_registration": case_killed_before_registration,
    "killed_mid_write": case_killed_mid_write,
    "signal_ends_flush_wait": case_signal_ends_flush_wait,
    "preempted_mid_run": case_preempted_mid_run,
    "preempt_wrong_type": case_preempt_wrong_type,
    "wrong_token": case_wrong_token,
    "master_down_at_start": case_master_down_at_start,
    "invalid_hp": case_invalid_hp,
    "searcher_metric_missing": case_searcher_metric_missing,
    "flagship_example": case_flagship_example,
    # TLS: the master's certificate checked against DET_MASTER_CERT_NAME while connecting to the
    # address in DET_MASTER; noverify; and a name that does not match, which fails at once.
    "tls_verified": lambda a: case_tls(a, "tls_verified", {"DET_MASTER_CERT_FILE": a.cert,
                                                           "DET_MASTER_CERT_NAME": TLS_NAME}, True),
    "tls_noverify": lambda a: case_tls(a, "tls_noverify", {"DET_MASTER_CERT_FILE": "noverify"}, True),
    "tls_wrong_name": lambda a: case_tls(a, "tls_wrong_name", {"DET_MASTER_CERT_FILE": a.cert}, False),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dtl", required=True)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--work")
    ap.add_argument("--flagship", help="examples/fashion_mnist (default: beside --dtl's build)")
    ap.add_argument("--only", action="append")
    a = ap.parse_args()
    a.dtl = os.path.abspath(a.dtl)
    a.flagship = os.path.abspath(a.flagship or os.path.join(os.path.dirname(a.dtl), "..", "examples", "fashion_mnist"))
    a.work = os.path.abspath(a.work or os.path.join("/tmp", f"dtl-cluster-faults-{os.getpid()}"))
    os.makedirs(a.work, exist_ok=True)
    make_certificate(a)
    t0 = time.monotonic()
    for name in a.only or list(CASES):
        t = time.monotonic()
        try:
            CASES[name](a)
        except Failure as e:
            print(f"FAILED {name}: {e}\nwork directory: {a.work}")
            return 1
        print(f"{name}: ok ({time.monotonic() - t:.1f} s)")
    print(f"all {len(a.only or CASES)} fault cases hold ({time.monotonic() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
