#!/usr/bin/env python3
"""Compare two fake-master transcripts (tests/cluster/fake_master.py --record) call by call.

    compare_traffic.py A.jsonl B.jsonl [--labels A B]     exit 0 when equal, 1 with the first
                                                           difference (both sides' calls)

Why not one global order: the Python harness ships metrics from a background thread
(core/_metrics.py _Shipper) and watches preemption from another (core/_preempt.py
_PreemptionWatcher), so where those calls fall among the main thread's calls varies from run to
run (observed: the training report at batch 12 lands before or after "validating", the
validation report before or after "checkpointing"). Everything else comes from the main thread
and is in a fixed order. So each transcript is split by the master's run id (the record's "run")
and, per run, into three streams:

  metrics  POST /api/v1/trials/{id}/metrics, in order: their own order is fixed (one queue, one
           thread). Compared exactly.
  polls    GET /api/v1/allocations/{id}/signals/preemption. Long polls: how many there are depends
           on how long the run takes, so they are checked by rules, not count:
             - at least one; the first asks timeout_seconds=0, every later one 60 (query strings,
               as sent); all answered 200;
             - whether any poll was answered {"preempt": true} is the same on both sides; at most
               one was, and no poll arrived after it had been answered;
             - an ack_preemption is sent only after a true answer reached the client (arrival of
               the ack >= the true poll's answer), and only in a run that got one.
  calls    everything else, in arrival order. Compared exactly.

"Exactly" means: method, path, query, status, the allocation-token header and the JSON body,
parsed (numbers compare as numbers: 12 == 12.0, float values bit for bit; the strings "NaN",
"Infinity", "-Infinity" only equal themselves), modulo
  - reportTime: dropped from metrics bodies; a checkpoint's must be a string on both sides;
  - null values: dropped (proto3 JSON: null and absent are the same message);
  - checkpoint UUIDs: each side's are renamed u1, u2, ... in order of first appearance;
  - checkpoint resources: the same file names, sizes as decimal strings on both sides (sizes
    themselves differ by format: print_sizes shows them); allowed on one side only:
    DTL_ONLY = trial_state.json (dtl's own trial state, beside Determined's trial_state.pkl) and
    PYTHON_ONLY = code/ and anything under it (Determined copies the context directory into each
    checkpoint; dtl has no context directory);
  - checkpoint metadata: determined_version (Python) and dtl_version (dtl) are one field, a
    string, whose value is not compared; framework compares without a local version tag
    (Python's torch.__version__ "2.15.0+cu132" is the wheel's name for LibTorch "2.15.0");
    dtl's validation_metric (what its retention ranks by) is allowed on one side only; format,
    steps_completed and the rest compare exactly;
  - POST /api/v1/runs/start repeated with the same body right after the first: collapsed to one.
    Determined's core.init() prepares the run on every rank (_run_prepare ignores its distributed
    argument), so on 2 slots Python's non-chief sends a second, identical runs/start; dtl's
    non-chief ranks make no call at all (only the chief talks to the master);
  - GET /api/v1/trials/{id}: dropped. The Python Trainer asks it at the start for the step of
    the trial's latest validation (_get_last_validation, to skip validating that step again after
    a restart, a shortcut its own comment calls unstable: the master archives that validation
    when the restarted run reports); dtl records its last validation in the checkpoint and does
    not ask (docs/cluster.md, "Differences").
Request headers other than the token (User-Agent, Content-Type, ...) are recorded, not compared.
"""
import argparse
import json
import math
import re
import sys

DTL_ONLY = {"trial_state.json"}
DTL_ONLY_METADATA = {"validation_metric"}
NOT_COMPARED = re.compile(r"^/api/v1/trials/[^/]+$")  # GET: Python's _get_last_validation
PYTHON_ONLY_PREFIX = "code/"
VERSION_KEYS = ("determined_version", "dtl_version")

METRICS = re.compile(r"^/api/v1/trials/[^/]+/metrics$")
POLL = re.compile(r"^/api/v1/allocations/[^/]+/signals/preemption$")
ACK = re.compile(r"^/api/v1/allocations/[^/]+/signals/ack_preemption$")
CHECKPOINTS = "/api/v1/checkpoints"
RUNS_START = "/api/v1/runs/start"


def load(path):
    with open(path) as f:
        return sorted((json.loads(line) for line in f if line.strip()), key=lambda c: c["seq"])


def drop_nulls(v):
    if isinstance(v, dict):
        return {k: drop_nulls(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [drop_nulls(x) for x in v]
    return v


def first_diff(a, b, where="body"):
    """None when equal, else 'where: a vs b' for the first difference."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a:
                return f"{where}.{k}: missing vs {json.dumps(b[k])[:200]}"
            if k not in b:
                return f"{where}.{k}: {json.dumps(a[k])[:200]} vs missing"
            d = first_diff(a[k], b[k], f"{where}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{where}: {len(a)} items vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_diff(x, y, f"{where}[{i}]")
            if d:
                return d
        return None
    num = (int, float)
    if (isinstance(a, num) and not isinstance(a, bool) and isinstance(b, num)
            and not isinstance(b, bool)):
        if a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)):
            return None
        return f"{where}: {a!r} vs {b!r}"
    if type(a) is type(b) and a == b:
        return None
    return f"{where}: {json.dumps(a)} vs {json.dumps(b)}"


class Side:
    """One transcript, normalized, split per run into calls / metrics / polls."""

    def __init__(self, calls, label):
        self.label = label
        self.uuids = {}
        self.problems = []
        self.runs = {}
        for c in calls:
            r = self.runs.setdefault(c.get("run"), {"calls": [], "metrics": [], "polls": [],
                                                    "acks": []})
            if c["method"] == "GET" and NOT_COMPARED.match(c["path"]):
                continue
            if (c["method"] == "POST" and c["path"] == RUNS_START and r["calls"]
                    and r["calls"][-1][0]["path"] == RUNS_START and r["calls"][-1][0]["body"] == c["body"]):
                continue  # another rank's copy of the chief's runs/start (Python's core.init)
            if c["method"] == "GET" and POLL.match(c["path"]):
                r["polls"].append(c)
                continue
            if c["method"] == "POST" and ACK.match(c["path"]):
                r["acks"].append(c)
            n = self.normalize(c)
            if c["method"] == "POST" and METRICS.match(c["path"]):
                r["metrics"].append((c, n))
            else:
                r["calls"].append((c, n))

    def uuid(self, u):
        if u not in self.uuids:
            self.uuids[u] = f"u{len(self.uuids) + 1}"
        return self.uuids[u]

    def normalize(self, c):
        body = c["body"]
        if c["method"] == "POST" and METRICS.match(c["path"]) and isinstance(body, dict):
            body = json.loads(json.dumps(body))
            m = body.get("metrics")
            if isinstance(m, dict):
                m.pop("reportTime", None)
        elif c["method"] == "POST" and c["path"] == CHECKPOINTS and isinstance(body, dict):
            body = self.normalize_checkpoint(c, body)
        out = {"method": c["method"], "path": c["path"], "query": c["query"], "status": c["status"],
               "token": c["token"], "body": drop_nulls(body)}
        if "body_text" in c:
            out["body_text"] = c["body_text"]
        return out

    def normalize_checkpoint(self, c, body):
        body = json.loads(json.dumps(body))
        if "uuid" in body:
            body["uuid"] = self.uuid(body["uuid"])
        rt = body.pop("reportTime", None)
        body["reportTime"] = "<time>" if isinstance(rt, str) and rt else rt
        res = body.get("resources")
        if isinstance(res, dict):
            bad = {k: v for k, v in res.items() if not (isinstance(v, str) and v.isdigit())}
            if bad:
                self.problems.append(f"seq {c['seq']}: resources sizes must be decimal strings: {bad}")
            body["resources"] = sorted(k for k in res
                                       if k not in DTL_ONLY and not k.startswith(PYTHON_ONLY_PREFIX))
        md = body.get("metadata")
        if isinstance(md, dict):
            present = [k for k in VERSION_KEYS if k in md]
            if len(present) == 1 and isinstance(md[present[0]], str):
                md.pop(present[0])
                md["<determined_version|dtl_version>"] = "<version>"
            else:
                self.problems.append(f"seq {c['seq']}: metadata must have exactly one of "
                                     f"{VERSION_KEYS} as a string, has {present}")
            if isinstance(md.get("framework"), str):
                md["framework"] = md["framework"].split("+")[0]
            for k in DTL_ONLY_METADATA:
                md.pop(k, None)
        return body

    def poll_facts(self, run):
        """The rules' findings for one run: (problems, got a true answer)."""
        r = self.runs[run]
        polls, acks = r["polls"], r["acks"]
        probs = []
        if not polls:
            probs.append("no preemption poll")
        for i, p in enumerate(polls):
            want = "0" if i == 0 else "60"
            if p["query"] != {"timeout_seconds": want}:
                probs.append(f"poll seq {p['seq']}: query {p['query']}, want "
                             f"{{'timeout_seconds': '{want}'}}")
            if p["status"] != 200:
                probs.append(f"poll seq {p['seq']}: status {p['status']}")
        trues = [p for p in polls if (p.get("response") or {}).get("preempt") is True]
        if len(trues) > 1:
            probs.append(f"{len(trues)} polls answered preempt=true (the watcher stops at the first)")
        if trues:
            t = trues[0]
            answered = t["t_answer"]
            late = [p["seq"] for p in polls if p["t"] > answered]
            if late:
                probs.append(f"polls {late} arrived after preempt=true had been answered")
            for a in acks:
                if a["t"] < answered:
                    probs.append(f"ack seq {a['seq']} arrived before the preempt=true answer")
        elif acks:
            probs.append(f"ack_preemption (seq {acks[0]['seq']}) in a run with no preempt=true")
        return probs, bool(trues)


def show(c):
    if c is None:
        return "(none)"
    return json.dumps({k: c[k] for k in ("seq", "run", "method", "path", "query", "status", "body")
                       if k in c})[:1500]


def compare(calls_a, calls_b, labels=("a", "b")):
    """'' when the transcripts are equal under the rules above, else the first difference."""
    a, b = Side(calls_a, labels[0]), Side(calls_b, labels[1])
    for s in (a, b):
        if s.problems:
            return f"{s.label}: {s.problems[0]}"
    if sorted(a.runs, key=str) != sorted(b.runs, key=str):
        return f"runs: {labels[0]} has {sorted(a.runs, key=str)}, {labels[1]} {sorted(b.runs, key=str)}"
    for run in sorted(a.runs, key=str):
        for stream in ("calls", "metrics"):
            xs, ys = a.runs[run][stream], b.runs[run][stream]
            for i in range(max(len(xs), len(ys))):
                x = xs[i] if i < len(xs) else (None, None)
                y = ys[i] if i < len(ys) else (None, None)
                if x[1] is None or y[1] is None:
                    d = f"{labels[0]} has {len(xs)} calls, {labels[1]} {len(ys)}"
                else:
                    d = first_diff(x[1], y[1], "call")
                if d:
                    return (f"run {run}, {stream} #{i + 1}: {d}\n"
                            f"  {labels[0]}: {show(x[0])}\n  {labels[1]}: {show(y[0])}")
        pa, ta = a.poll_facts(run)
        pb, tb = b.poll_facts(run)
        for lab, probs in ((labels[0], pa), (labels[1], pb)):
            if probs:
                return f"run {run}, preemption polls of {lab}: {probs[0]}"
        if ta != tb:
            return (f"run {run}, preemption polls: {labels[0]} {'got' if ta else 'got no'} "
                    f"preempt=true, {labels[1]} {'got' if tb else 'got no'}")
    return ""


def compare_files(path_a, path_b, labels=None):
    labels = labels or (path_a, path_b)
    return compare(load(path_a), load(path_b), labels)


def print_sizes(path_a, path_b, labels=("a", "b")):
    """The checkpoints' resources side by side (sizes differ by format; shown, not compared)."""
    def ckpts(path):
        return [c["body"] for c in load(path)
                if c["method"] == "POST" and c["path"] == CHECKPOINTS and isinstance(c["body"], dict)]
    for i, (x, y) in enumerate(zip(ckpts(path_a), ckpts(path_b))):
        rx, ry = x.get("resources") or {}, y.get("resources") or {}
        print(f"checkpoint {i + 1} (steps {x.get('metadata', {}).get('steps_completed')}): "
              f"{labels[0]} / {labels[1]} sizes")
        for k in sorted(set(rx) | set(ry)):
            print(f"  {k:24} {rx.get(k, '-'):>10} {ry.get(k, '-'):>10}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--labels", nargs=2)
    ap.add_argument("--sizes", action="store_true", help="also print the checkpoints' resources")
    args = ap.parse_args()
    labels = tuple(args.labels) if args.labels else (args.a, args.b)
    if args.sizes:
        print_sizes(args.a, args.b, labels)
    d = compare_files(args.a, args.b, labels)
    if d:
        print(d)
        return 1
    print("equal")
    return 0


if __name__ == "__main__":
    sys.exit(main())
