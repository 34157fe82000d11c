#!/usr/bin/env python3
"""A loopback fake Determined master (0.38.1 REST API), stdlib only.

It answers the calls a trial container's Python harness makes (determined/core/*.py; response
shapes from determined/common/api/bindings.py), enforces the master's rules a client can break
(docs: /work/shared/reference/determined-cluster.md §2 and §7), and records every request as one
JSON line so that two clients (the real det.pytorch.Trainer and dtl) can be compared call by call
(tests/cluster/compare_traffic.py).

    fake_master.py --port-file FILE --record OUT.jsonl [--token TOKEN] [--trial-id 1]
                   [--experiment-id 1] [--allocation-id ID] [--run-id N]
                   [--searcher-metric validation_loss] [--smaller-is-better 1]
                   [--preempt-after-checkpoint STEPS] [--max-poll-seconds 2] [--fault SPEC ...]

It binds 127.0.0.1 on a free port and writes the port to FILE once it listens.

Record (one line per request, flushed; written when the answer has been sent, so lines are in
completion order and "seq" is the arrival order):
    {"seq", "run": the master's run id when it arrived, "method", "path" (no query), "query": {k: v}, "token": header
     Grpc-Metadata-x-allocation-token or null, "body": parsed JSON or null (the raw text under
     "body_text" when it is not JSON), "status", "response": the JSON answered,
     "headers": {name: value} as sent, "t": arrival in seconds since start, "t_answer": when
     the answer was decided (just before sending), "dt": seconds until it was sent}
/_fake/* calls are neither recorded nor counted.

Rules enforced (a violation answers 400 {"code": 3, "message": "rule ...: ..."}, is recorded and
listed under "rejected" in /_fake/state):
  * token: header Grpc-Metadata-x-allocation-token must be "Bearer <--token>" (else 401);
  * trial/experiment/allocation ids in paths must be this master's (else 404, as for an unknown
    object);
  * metrics: metrics.trialId = the trial, metrics.trialRunId = the current run id, group non-empty
    without '.', stepsCompleted a number, avgMetrics an object; a "validation" report carries
    "batches" and "epochs" and the searcher metric in avgMetrics as JSON numbers;
  * runs/start: runId = the trial id;
  * checkpoints: uuid new, allocationId = the current one, taskId non-empty (= --task-id when
    given), resources an object of
    string sizes, metadata.steps_completed an integer, state "STATE_COMPLETED";
  * progress: a number in [0, 1].

Preemption: GET /api/v1/allocations/{id}/signals/preemption?timeout_seconds=T is a long poll that
answers {"preempt": true} as soon as preemption is set, else {"preempt": false} after
min(T, --max-poll-seconds). With --preempt-after-checkpoint N, the first POST /api/v1/checkpoints
whose metadata.steps_completed >= N (once per master) sets preemption (waking pending polls), waits
0.3 s, and only then answers: the client's watcher has the signal before the trainer asks at that
boundary.

Control (for the test driver):
    GET  /_fake/state     -> {"checkpoints": [{"uuid", "steps_completed", "run_id"}], "acked",
                              "acked_runs", "run_id", "allocation_id", "preempt", "rejected",
                              "requests", "pending"}
    POST /_fake/next_run {"run_id": N[, "allocation_id": ID]}  -> a reschedule: new run id (and
                              allocation id), preemption and ack cleared.
    POST /_fake/preempt                 -> set preemption now.

Faults (--fault, repeatable):
    500:REGEX:COUNT      answer 500 to the first COUNT requests whose "METHOD /path" matches REGEX
                         (any status: 400:REGEX:COUNT refuses them)
    delay:REGEX:SECONDS  sleep SECONDS before answering each matching request
    body:REGEX:JSON      answer every matching request (REGEX without a colon) 200 with JSON as its body
    down-after:N         after answering the Nth request, close the listening socket and drop every
                         request that still arrives on a kept-alive connection unanswered (the
                         process stays up until SIGTERM/SIGINT, so its record is complete)

`fake_master.py --self-test` runs a unit self-test against a master in this process.
"""
import argparse
import faulthandler
import json
import math
import os
import re
import signal
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOKEN_HEADER = "Grpc-Metadata-x-allocation-token"


class Reject(Exception):
    def __init__(self, status, message, code=3):
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code


def _is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


class Fault:
    def __init__(self, spec):
        kind, _, rest = spec.partition(":")
        self.kind = kind
        if kind.isdigit():  # 500:REGEX:COUNT, 400:..., any status
            regex, _, count = rest.rpartition(":")
            self.regex, self.left, self.status = re.compile(regex), int(count), int(kind)
        elif kind == "delay":
            regex, _, seconds = rest.rpartition(":")
            self.regex, self.seconds = re.compile(regex), float(seconds)
        elif kind == "down-after":
            self.after = int(rest)
        elif kind == "body":
            regex, _, body = rest.partition(":")
            self.regex, self.body = re.compile(regex), json.loads(body)
        else:
            raise ValueError(f"unknown fault {spec!r}")


class State:
    def __init__(self, args):
        self.args = args
        self.cond = threading.Condition()
        self.run_id = args.run_id
        self.allocation_id = args.allocation_id
        self.preempt = False
        self.preempt_fired = False  # --preempt-after-checkpoint fires once per master
        self.acked = False
        self.acked_runs = []
        self.checkpoints = []
        self.rejected = []
        self.validations = []  # (stepsCompleted, searcher metric) of accepted validation reports
        self.seq = 0
        self.answered = 0
        self.pending = 0
        self.faults = [Fault(s) for s in args.fault]
        self.t0 = time.monotonic()
        self.record = open(args.record, "a") if args.record else None
        self.record_lock = threading.Lock()

    def write(self, entry):
        if self.record is None:
            return
        with self.record_lock:
            self.record.write(json.dumps(entry) + "\n")
            self.record.flush()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-determined-master/0.38.1"

    def log_message(self, fmt, *a):  # quiet
        pass

    def do_GET(self):
        self._handle("GET")

    def do_POST(self):
        self._handle("POST")

    def do_PATCH(self):
        self._handle("PATCH")

    def do_PUT(self):
        self._handle("PUT")

    def do_DELETE(self):
        self._handle("DELETE")

    # -- plumbing -----------------------------------------------------------------------------
    def _send(self, status, obj):
        data = json.dumps(obj).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
            return True
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
            return False

    def _handle(self, method):
        st = self.server.state
        if self.server.down:  # gone: a kept-alive connection gets no answer either, and closes
            self.close_connection = True
            return
        url = urllib.parse.urlsplit(self.path)
        path = url.path
        query = {}
        for k, vs in urllib.parse.parse_qs(url.query, keep_blank_values=True).items():
            query[k] = vs[0] if len(vs) == 1 else vs
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body, body_text = None, None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                body_text = raw.decode("utf-8", "replace")

        if path.startswith("/_fake/"):
            self._control(method, path, body)
            return

        t_arrive = time.monotonic()
        with st.cond:
            st.seq += 1
            seq = st.seq
            run_at_arrival = st.run_id
            st.pending += 1
        line = f"{method} {path}"
        status, response, sent, t_answer = 500, None, False, None
        try:
            for f in st.faults:
                if f.kind == "delay" and f.regex.search(line):
                    time.sleep(f.seconds)
            injected = None
            with st.cond:
                for f in st.faults:
                    if f.kind.isdigit() and f.left > 0 and f.regex.search(line):
                        f.left -= 1
                        injected = f.status
                        break
            replaced = next((f for f in st.faults if f.kind == "body" and f.regex.search(line)), None)
            if injected:
                status, response = injected, {"code": 13, "message": "injected fault", "details": []}
            elif replaced:
                status, response = 200, replaced.body
            else:
                try:
                    status, response = self._route(method, path, query, body, body_text)
                except Reject as r:
                    status = r.status
                    response = {"code": r.code, "message": r.message, "details": []}
                    if r.status == 400:
                        with st.cond:
                            st.rejected.append({"seq": seq, "method": method, "path": path,
                                                "message": r.message})
            t_answer = time.monotonic()
            sent = self._send(status, response)
        finally:
            entry = {"seq": seq, "run": run_at_arrival, "method": method, "path": path, "query": query,
                     "token": self.headers.get(TOKEN_HEADER), "body": body, "status": status,
                     "response": response, "headers": dict(self.headers.items()),
                     "t": round(t_arrive - st.t0, 4),
                     "t_answer": None if t_answer is None else round(t_answer - st.t0, 4),
                     "dt": round(time.monotonic() - t_arrive, 4)}
            if body_text is not None:
                entry["body_text"] = body_text
            if not sent:
                entry["client_gone"] = True
            st.write(entry)
            with st.cond:
                st.pending -= 1
                st.answered += 1
                answered = st.answered
            for f in st.faults:
                if f.kind == "down-after" and answered == f.after:
                    self.server.go_down()

    def _control(self, method, path, body):
        st = self.server.state
        answer = None
        with st.cond:  # decide under the lock, send outside it
            if method == "GET" and path == "/_fake/state":
                answer = {
                    "checkpoints": list(st.checkpoints), "acked": st.acked,
                    "acked_runs": list(st.acked_runs), "run_id": st.run_id,
                    "allocation_id": st.allocation_id,
                    "preempt": st.preempt, "rejected": list(st.rejected),
                    "requests": st.seq, "pending": st.pending}
            elif method == "POST" and path == "/_fake/next_run":
                st.run_id = int((body or {}).get("run_id", st.run_id + 1))
                st.allocation_id = (body or {}).get("allocation_id", st.allocation_id)
                st.preempt = False
                st.acked = False
                st.cond.notify_all()
                answer = {"run_id": st.run_id, "allocation_id": st.allocation_id}
            elif method == "POST" and path == "/_fake/preempt":
                st.preempt = True
                st.cond.notify_all()
                answer = {}
        if answer is None:
            self._send(404, {"code": 5, "message": f"no control route {method} {path}"})
        else:
            self._send(200, answer)

    # -- the API --------------------------------------------------------------------------------
    def _route(self, method, path, query, body, body_text):
        st = self.server.state
        a = st.args
        if a.token is not None:
            got = self.headers.get(TOKEN_HEADER)
            if got != f"Bearer {a.token}":
                raise Reject(401, f"rule token: {TOKEN_HEADER} is {got!r}, want 'Bearer <token>'",
                             code=16)
        if body_text is not None:
            raise Reject(400, f"rule json: body is not JSON: {body_text[:80]!r}")
        parts = path.strip("/").split("/")
        if parts[:2] != ["api", "v1"]:
            raise Reject(404, f"not found: {method} {path}", code=5)
        p = parts[2:]

        def want_trial(tid):
            if tid != str(a.trial_id):
                raise Reject(404, f"trial {tid} not found", code=5)

        def want_alloc(aid):
            if aid != st.allocation_id:
                raise Reject(404, f"allocation {aid} not found", code=5)

        if method == "POST" and p == ["runs", "start"]:
            return self._runs_start(body)
        if method == "POST" and len(p) == 3 and p[0] == "trials" and p[2] == "metrics":
            want_trial(p[1])
            return self._metrics(body)
        if method == "POST" and len(p) == 3 and p[0] == "trials" and p[2] == "progress":
            want_trial(p[1])
            prog = (body or {}).get("progress")
            if not _is_number(prog) or not 0 <= prog <= 1:
                raise Reject(400, f"rule progress: progress must be a number in [0, 1], got {prog!r}")
            return 200, {}
        if method == "POST" and p[:1] == ["trials"] and p[2:] == ["runner", "metadata"]:
            want_trial(p[1])
            return 200, {}
        if method == "POST" and len(p) == 3 and p[0] == "trials" and p[2] == "early_exit":
            want_trial(p[1])
            return 200, {}
        if method == "GET" and len(p) == 2 and p[0] == "trials":
            want_trial(p[1])
            return 200, self._trial()
        if method == "POST" and p == ["checkpoints"]:
            return self._checkpoint(body)
        if (method == "GET" and len(p) == 4 and p[0] == "experiments"
                and p[2:] == ["searcher", "best_searcher_validation_metric"]):
            if p[1] != str(a.experiment_id):
                raise Reject(404, f"experiment {p[1]} not found", code=5)
            with st.cond:
                vals = [v for _, v in st.validations]
            if not vals:
                raise Reject(404, "no validation metrics yet", code=5)
            return 200, {"metric": min(vals) if a.smaller_is_better else max(vals)}
        if p[:1] == ["allocations"] and p[2:] == ["signals", "preemption"] and method == "GET":
            want_alloc(p[1])
            return self._preemption(query)
        if p[:1] == ["allocations"] and p[2:] == ["signals", "ack_preemption"] and method == "POST":
            want_alloc(p[1])
            with st.cond:
                st.acked = True
                st.acked_runs.append(st.run_id)
            return 200, {}
        if method == "POST" and p == ["task", "logs"]:
            return 200, {}
        raise Reject(404, f"not found: {method} {path}", code=5)

    def _runs_start(self, body):
        a = self.server.state.args
        if not isinstance(body, dict) or body.get("runId") != a.trial_id:
            raise Reject(400, f"rule runs/start: runId must be the trial id {a.trial_id}")
        return 200, {"storageId": 1}

    def _trial(self):
        st = self.server.state
        a = st.args
        with st.cond:
            vals = list(st.validations)
        trial = {"id": a.trial_id, "experimentId": a.experiment_id, "state": "STATE_RUNNING",
                 "restarts": 0, "hparams": {}, "totalBatchesProcessed": 0}
        if vals:
            trial["latestValidation"] = {"totalBatches": vals[-1][0]}
        return {"trial": trial}

    def _metrics(self, body):
        st = self.server.state
        a = st.args
        if not isinstance(body, dict) or not isinstance(body.get("metrics"), dict):
            raise Reject(400, "rule metrics: body must be {metrics: {...}, group}")
        group = body.get("group")
        if not isinstance(group, str) or not group or "." in group:
            raise Reject(400, f"rule group: group name must be non-empty without '.', got {group!r}")
        m = body["metrics"]
        if m.get("trialId") != a.trial_id:
            raise Reject(400, f"rule trialId: metrics.trialId {m.get('trialId')!r} != {a.trial_id}")
        with st.cond:
            run_id = st.run_id
        if m.get("trialRunId") != run_id:
            raise Reject(400, f"rule trialRunId: metrics.trialRunId {m.get('trialRunId')!r} is not "
                              f"the current run id {run_id}")
        if not _is_int(m.get("stepsCompleted")):
            raise Reject(400, f"rule stepsCompleted: must be an integer, got {m.get('stepsCompleted')!r}")
        inner = m.get("metrics")
        if not isinstance(inner, dict) or not isinstance(inner.get("avgMetrics"), dict):
            raise Reject(400, "rule avgMetrics: metrics.metrics.avgMetrics must be an object")
        bm = inner.get("batchMetrics")
        if bm is not None and not (isinstance(bm, list) and all(isinstance(b, dict) for b in bm)):
            raise Reject(400, "rule batchMetrics: must be a list of objects")
        avg = inner["avgMetrics"]
        if group == "validation":
            for key in ("batches", "epochs", a.searcher_metric):
                if not _is_number(avg.get(key)):
                    raise Reject(400, f"rule validation: avgMetrics[{key!r}] must be a JSON number, "
                                      f"got {avg.get(key)!r}")
            with st.cond:
                st.validations.append((m["stepsCompleted"], avg[a.searcher_metric]))
        return 200, {}

    def _checkpoint(self, body):
        st = self.server.state
        a = st.args
        if not isinstance(body, dict):
            raise Reject(400, "rule checkpoint: body must be a Checkpoint object")
        uuid = body.get("uuid")
        if not isinstance(uuid, str) or not uuid:
            raise Reject(400, "rule checkpoint: uuid must be a non-empty string")
        if body.get("allocationId") != st.allocation_id:
            raise Reject(400, f"rule checkpoint: allocationId {body.get('allocationId')!r} != "
                              f"{st.allocation_id!r}")
        if not isinstance(body.get("taskId"), str) or not body["taskId"]:
            raise Reject(400, "rule checkpoint: taskId must be a non-empty string")
        if a.task_id is not None and body["taskId"] != a.task_id:
            raise Reject(400, f"rule checkpoint: taskId {body['taskId']!r} != {a.task_id!r}")
        res = body.get("resources")
        if not isinstance(res, dict) or not all(isinstance(v, str) for v in res.values()):
            raise Reject(400, "rule checkpoint: resources must map paths to sizes as strings")
        md = body.get("metadata")
        if not isinstance(md, dict) or not _is_int(md.get("steps_completed")):
            raise Reject(400, "rule checkpoint: metadata.steps_completed must be an integer")
        if body.get("state") != "STATE_COMPLETED":
            raise Reject(400, f"rule checkpoint: state must be STATE_COMPLETED, got {body.get('state')!r}")
        steps = md["steps_completed"]
        fire = False
        with st.cond:
            if any(c["uuid"] == uuid for c in st.checkpoints):
                raise Reject(400, f"rule checkpoint: uuid {uuid} already registered")
            st.checkpoints.append({"uuid": uuid, "steps_completed": steps, "run_id": st.run_id})
            n = a.preempt_after_checkpoint
            if n is not None and not st.preempt_fired and steps >= n:
                st.preempt_fired = True
                st.preempt = True
                st.cond.notify_all()
                fire = True
        if fire:
            time.sleep(0.3)
        return 200, {}

    def _preemption(self, query):
        st = self.server.state
        try:
            t = float(query.get("timeout_seconds", 0))
        except (TypeError, ValueError):
            raise Reject(400, f"rule preemption: bad timeout_seconds {query.get('timeout_seconds')!r}")
        deadline = time.monotonic() + max(0.0, min(t, st.args.max_poll_seconds))
        with st.cond:
            while not st.preempt and not self.server.down:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                st.cond.wait(left)
            return 200, {"preempt": bool(st.preempt)}


class FakeMaster(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, args):
        super().__init__(("127.0.0.1", 0), Handler)
        self.state = State(args)
        self.down = False
        self.stopped = threading.Event()

    @property
    def port(self):
        return self.server_address[1]

    def go_down(self):
        """Stop accepting: shut the serve loop down and close the listening socket."""
        if self.down:
            return
        self.down = True
        with self.state.cond:
            self.state.cond.notify_all()

        def stop():
            self.shutdown()
            self.server_close()
        threading.Thread(target=stop, daemon=True).start()


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port-file")
    ap.add_argument("--record")
    ap.add_argument("--token")
    ap.add_argument("--trial-id", type=int, default=1)
    ap.add_argument("--experiment-id", type=int, default=1)
    ap.add_argument("--allocation-id", default="1.1.1")
    ap.add_argument("--run-id", type=int, default=1)
    ap.add_argument("--task-id")
    ap.add_argument("--searcher-metric", default="validation_loss")
    ap.add_argument("--smaller-is-better", type=int, default=1)
    ap.add_argument("--preempt-after-checkpoint", type=int)
    ap.add_argument("--max-poll-seconds", type=float, default=2.0)
    ap.add_argument("--fault", action="append", default=[])
    ap.add_argument("--tls-cert", help="serve HTTPS with this certificate (PEM) ...")
    ap.add_argument("--tls-key", help="... and this key (PEM)")
    ap.add_argument("--self-test", action="store_true")
    return ap.parse_args(argv)


def serve(args):
    master = FakeMaster(args)
    if args.tls_cert:  # a master with TLS (DET_MASTER https://, DET_MASTER_CERT_FILE/NAME)
        import ssl
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(args.tls_cert, args.tls_key)
        master.socket = tls.wrap_socket(master.socket, server_side=True)
    stop = threading.Event()
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # stacks to stderr, for hang reports

    def on_signal(*_):
        stop.set()
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    loop = threading.Thread(target=master.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    loop.start()
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(f"{master.port}\n")
        os.replace(tmp, args.port_file)
    while not stop.wait(0.2):
        pass
    if not master.down:
        master.shutdown()
        master.server_close()
    master.down = True
    with master.state.cond:
        master.state.cond.notify_all()
    return 0


# -- self-test ------------------------------------------------------------------------------------
def self_test():
    import tempfile
    import urllib.error
    import urllib.request

    tmp = tempfile.mkdtemp(prefix="fake-master-test-")
    rec = os.path.join(tmp, "rec.jsonl")
    args = parse_args(["--record", rec, "--token", "tok", "--allocation-id", "a.1",
                       "--preempt-after-checkpoint", "12", "--max-poll-seconds", "0.5",
                       "--fault", "500:^POST /api/v1/trials/1/progress$:1",
                       "--fault", "delay:runner/metadata:0.2"])
    m = FakeMaster(args)
    threading.Thread(target=m.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{m.port}"

    def call(method, path, body=None, token="tok"):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(base + path, data=data, method=method)
        if token is not None:
            req.add_header(TOKEN_HEADER, f"Bearer {token}")
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def metrics(group, run, avg, steps=12):
        return {"group": group, "metrics": {"trialId": 1, "trialRunId": run, "stepsCompleted": steps,
                                            "reportTime": "x", "metrics": {"avgMetrics": avg}}}

    def ckpt(uuid, steps):
        return {"uuid": uuid, "allocationId": "a.1", "taskId": "t", "resources": {"a": "1"},
                "metadata": {"steps_completed": steps}, "state": "STATE_COMPLETED"}

    checks = [
        (call("POST", "/api/v1/runs/start", {"runId": 1}), (200, {"storageId": 1})),
        (call("POST", "/api/v1/runs/start", {"runId": 1}, token="bad")[0], 401),
        (call("POST", "/api/v1/runs/start", {"runId": 1}, token=None)[0], 401),
        (call("GET", "/api/v1/experiments/1/searcher/best_searcher_validation_metric")[0], 404),
        (call("POST", "/api/v1/trials/1/metrics", metrics("training", 1, {"loss": 1.0}))[0], 200),
        (call("POST", "/api/v1/trials/1/metrics", metrics("training", 2, {"loss": 1.0}))[0], 400),
        (call("POST", "/api/v1/trials/1/metrics", metrics("a.b", 1, {"loss": 1.0}))[0], 400),
        (call("POST", "/api/v1/trials/1/metrics", metrics("validation", 1,
              {"validation_loss": 1.0, "batches": 12}))[0], 400),
        (call("POST", "/api/v1/trials/1/metrics", metrics("validation", 1,
              {"validation_loss": "NaN", "batches": 12, "epochs": 1}))[0], 400),
        (call("POST", "/api/v1/trials/1/metrics", metrics("validation", 1,
              {"validation_loss": 0.5, "batches": 12, "epochs": 1}))[0], 200),
        (call("GET", "/api/v1/experiments/1/searcher/best_searcher_validation_metric"),
         (200, {"metric": 0.5})),
        (call("POST", "/api/v1/trials/1/progress", {"progress": 0.5, "is_raw": True})[0], 500),
        (call("POST", "/api/v1/trials/1/progress", {"progress": 0.5, "is_raw": True})[0], 200),
        (call("POST", "/api/v1/trials/1/progress", {"progress": 2})[0], 400),
        (call("POST", "/api/v1/trials/1/runner/metadata", {"state": "x"})[0], 200),
        (call("GET", "/api/v1/allocations/a.1/signals/preemption?timeout_seconds=0"),
         (200, {"preempt": False})),
        (call("GET", "/api/v1/nope")[0], 404),
        (call("POST", "/api/v1/checkpoints", dict(ckpt("u0", 6), state="STATE_ACTIVE"))[0], 400),
        (call("POST", "/api/v1/checkpoints", ckpt("u1", 6))[0], 200),
    ]
    # a long poll pending when the qualifying checkpoint arrives is answered at once, with true
    got = {}
    poller = threading.Thread(target=lambda: got.setdefault(
        "poll", call("GET", "/api/v1/allocations/a.1/signals/preemption?timeout_seconds=60")))
    t0 = time.monotonic()
    poller.start()
    time.sleep(0.1)
    checks.append((call("POST", "/api/v1/checkpoints", ckpt("u2", 12))[0], 200))
    poller.join()
    checks.append((got["poll"], (200, {"preempt": True})))
    checks.append((time.monotonic() - t0 < 0.5 + 0.3, True))
    checks.append((call("POST", "/api/v1/allocations/a.1/signals/ack_preemption")[0], 200))
    state = call("GET", "/_fake/state")[1]
    checks.append(([c["uuid"] for c in state["checkpoints"]], ["u1", "u2"]))
    checks.append((state["acked"], True))
    checks.append((call("POST", "/_fake/next_run", {"run_id": 2})[1],
                   {"run_id": 2, "allocation_id": "a.1"}))
    t1 = time.monotonic()
    checks.append((call("GET", "/api/v1/allocations/a.1/signals/preemption?timeout_seconds=60"),
                   (200, {"preempt": False})))
    checks.append((0.4 < time.monotonic() - t1 < 1.5, True))
    checks.append((call("POST", "/api/v1/trials/1/metrics", metrics("training", 2, {"loss": 1.0}))[0],
                   200))
    m.shutdown()
    m.server_close()
    with open(rec) as f:
        lines = [json.loads(x) for x in f]
    checks.append((len(lines), m.state.seq))  # every API call recorded, /_fake ones not
    checks.append((sorted(x["seq"] for x in lines) == list(range(1, len(lines) + 1)), True))
    checks.append((any(x["status"] == 500 for x in lines), True))
    checks.append((lines[0]["token"], "Bearer tok"))
    checks.append((len(m.state.rejected), 6))
    # down-after: the socket closes after the Nth answer
    args2 = parse_args(["--fault", "down-after:2"])
    m2 = FakeMaster(args2)
    threading.Thread(target=m2.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{m2.port}"
    checks.append((call("GET", "/api/v1/x")[0], 404))
    checks.append((call("GET", "/api/v1/x")[0], 404))
    time.sleep(0.5)
    try:
        call("GET", "/api/v1/x")
        checks.append(("down", "still up"))
    except (urllib.error.URLError, ConnectionError):
        checks.append(("down", "down"))
    bad = [(i, got, want) for i, (got, want) in enumerate(checks) if got != want]
    for i, got, want in bad:
        print(f"self-test check {i}: got {got!r}, want {want!r}", file=sys.stderr)
    print(f"fake_master self-test: {len(checks) - len(bad)}/{len(checks)} ok")
    return 1 if bad else 0


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.self_test:
        return self_test()
    if not args.port_file:
        print("fake_master.py: --port-file is required", file=sys.stderr)
        return 2
    return serve(args)


if __name__ == "__main__":
    sys.exit(main())
