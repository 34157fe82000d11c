#!/usr/bin/env python3
"""The real Determined as the oracle for dtl's training: det.pytorch.Trainer 0.38.1 in local mode
(tests/oracle/det_trials.py) and dtl (tests/oracle/oracle_trials.cpp) train the same trials —
an MLP (SGD with momentum and weight decay, StepLR every epoch) and a CNN with dropout (Adam; its
draws follow the global generator, which torch's DataLoader moves at every iterator it starts), on
sequential and shuffled data, on 1 process and on 2 under torchrun (Gloo) — for two epochs of 12 batches,
validating and checkpointing after each. Required bit for bit (torch.equal, float ==):
  - every rank's loss of every batch, the reported training workloads (averages and per-batch
    values) and validation metrics;
  - the final weights, and the final checkpoint's models, optimizers and LR schedulers;
  - the checkpoints after each epoch: models, optimizers, LR schedulers, trial_state.pkl;
  - each side resumed from the other's checkpoint after epoch 1 continues exactly as the
    uninterrupted runs did (every rank's losses, reports, validation, final weights). Determined's
    local mode restarts the data at a resume (docs/differences.md); its trial puts its shuffle
    where the checkpoint left it, which a resume at an epoch boundary allows (det_trials.py).
Prints the first difference and exits 1; prints the time taken.

  run_oracle.py --dtl build-torch2/tests/oracle_trials [--python .venv/bin/python3] [--work DIR]
"""
import argparse
import json
import pickle
import random
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import oracle_common as common  # noqa: E402

SEED = 7
CASES = [(n, m, s) for n in (1, 2) for m in ("mlp", "cnn") for s in (0, 1)]
PORT = [29700]


class Mismatch(Exception):
    pass


def name(case):
    n, m, s = case
    return f"{m}-{'shuffled' if s else 'sequential'}-{n}rank"


def launch(py, nproc, argv, env, cwd, log):
    """argv on one process, or on nproc under torchrun (the same torch as dtl's LibTorch)."""
    if nproc > 1:
        PORT[0] += 1
        head = [py, "-m", "torch.distributed.run", "--nproc_per_node", str(nproc), "--redirects", "9:1",
                "--tee", "9:1", "--master_port", str(PORT[0])]
        argv = head + (["--no_python"] if not argv[0].endswith(".py") else []) + argv
    elif argv[0].endswith(".py"):
        argv = [py] + argv
    with open(log, "w") as out:
        try:
            rc = subprocess.run(argv, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, timeout=300).returncode
        except subprocess.TimeoutExpired:
            rc = "none (killed after 300 s)"
    if rc != 0:
        with open(log) as f:
            tail = f.read()[-4000:]
        raise Mismatch(f"{' '.join(argv)} failed with status {rc}:\n{tail}")


def records(out, rank):
    """{kind: [records]} of one rank's log."""
    by_kind = {"batch": [], "train": [], "val": [], "checkpoint": []}
    with open(os.path.join(out, f"rank{rank}.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            by_kind[r.pop("kind")].append(r)
    return by_kind


def same(a, b, where):
    """Exact equality of nested dicts/lists/tensors/numbers; raises Mismatch at the first difference."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            raise Mismatch(f"{where}: {type(a).__name__} vs {type(b).__name__}")
        if a.dtype != b.dtype or a.shape != b.shape or not torch.equal(a, b):
            diff = "" if a.shape != b.shape else f", max |diff| {(a.double() - b.double()).abs().max().item()}"
            raise Mismatch(f"{where}: tensors differ ({a.dtype}{list(a.shape)} vs {b.dtype}{list(b.shape)}{diff})")
        return
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a.keys()) != list(b.keys()) and set(a.keys()) != set(b.keys()):
            raise Mismatch(f"{where}: keys {sorted(map(str, a))} vs {sorted(map(str, b))}")
        for k in a:
            same(a[k], b[k], f"{where}.{k}")
        return
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            raise Mismatch(f"{where}: {len(a)} items vs {len(b)}")
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{where}[{i}]")
        return
    if type(a) is not type(b) and not (isinstance(a, (int, float)) and isinstance(b, (int, float))):
        raise Mismatch(f"{where}: {a!r} ({type(a).__name__}) vs {b!r} ({type(b).__name__})")
    if a != b:
        raise Mismatch(f"{where}: {a!r} vs {b!r}")


def load_state(ckpt):
    return torch.load(os.path.join(ckpt, "state_dict.pth"), map_location="cpu", weights_only=False)


def unprefixed(model_state):
    """Determined saves a DDP-wrapped model's state_dict (keys prefixed module.)."""
    if all(k.startswith("module.") for k in model_state):
        return {k[len("module."):]: v for k, v in model_state.items()}
    return dict(model_state)


def compare_runs(a, b, labels, nproc, resumed_from=None):
    """Run b against run a: everything each rank saw, the final weights. With resumed_from=k, b
    resumed after k workloads of a's: b's records must be a's from there on."""
    la, lb = labels
    for d, label in ((a, la), (b, lb)):
        if os.path.exists(os.path.join(d, "error.txt")):
            with open(os.path.join(d, "error.txt")) as f:
                raise Mismatch(f"{label} failed:\n{f.read()[-3000:]}")
    for rank in range(nproc):
        ra, rb = records(a, rank), records(b, rank)
        if resumed_from is not None:
            k = resumed_from
            ra = {"batch": ra["batch"][k * common.EPOCH_BATCHES:], "train": ra["train"][k:], "val": ra["val"][k:],
                  "checkpoint": ra["checkpoint"][k:]}
        for kind in ("batch", "train", "val"):
            same(ra[kind], rb[kind], f"rank {rank}: {kind} records, {la} vs {lb}")
        if len(ra["checkpoint"]) != len(rb["checkpoint"]):
            raise Mismatch(f"rank {rank}: {len(ra['checkpoint'])} checkpoints ({la}) vs {len(rb['checkpoint'])} ({lb})")
    same(torch.load(os.path.join(a, "final.pt")), torch.load(os.path.join(b, "final.pt")),
         f"final weights, {la} vs {lb}")


def compare_checkpoints(a, b, labels):
    sa, sb = load_state(a), load_state(b)
    la, lb = labels
    same([unprefixed(m) for m in sa["models_state_dict"]], [unprefixed(m) for m in sb["models_state_dict"]],
         f"checkpoint models_state_dict, {la} vs {lb}")
    for i, (oa, ob) in enumerate(zip(sa["optimizers_state_dict"], sb["optimizers_state_dict"])):
        same(oa["state"], ob["state"], f"checkpoint optimizers_state_dict[{i}].state, {la} vs {lb}")
        same(oa["param_groups"], ob["param_groups"], f"checkpoint optimizers_state_dict[{i}].param_groups, {la} vs {lb}")
    same(sa["lr_schedulers_state_dict"], sb["lr_schedulers_state_dict"], f"checkpoint lr_schedulers_state_dict, {la} vs {lb}")
    same(sorted(sa["rng_state"]), sorted(sb["rng_state"]), f"checkpoint rng_state's keys, {la} vs {lb}")
    with open(os.path.join(a, "trial_state.pkl"), "rb") as fa, open(os.path.join(b, "trial_state.pkl"), "rb") as fb:
        same(pickle.load(fa), pickle.load(fb), f"checkpoint trial_state.pkl, {la} vs {lb}")


def check_seeded_rng_states(ckpt, seed):
    """dtl has no numpy or Python `random` generator: its checkpoint holds their states as
    seeding with the trial seed leaves them (Determined's _load restores both)."""
    rng = load_state(ckpt)["rng_state"]
    want = np.random.RandomState(seed).get_state()
    got = rng["np_rng_state"]
    same([got[0], list(got[1]), *got[2:]], [want[0], [int(x) for x in want[1]], *want[2:]],
         "dtl checkpoint rng_state.np_rng_state vs np.random.seed(trial seed)")
    same(list(rng["random_rng_state"]), list(random.Random(seed).getstate()),
         "dtl checkpoint rng_state.random_rng_state vs random.seed(trial seed)")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dtl", required=True, help="the oracle_trials executable")
    p.add_argument("--python", default=sys.executable, help="the Python with torch and determined")
    p.add_argument("--work", default=None, help="a directory for the runs (default: a temporary one, removed)")
    args = p.parse_args()
    t0 = time.monotonic()
    work = args.work or tempfile.mkdtemp(prefix="dtl-oracle-")
    cwd = os.path.join(work, "cwd")  # Determined copies the working directory into each checkpoint
    os.makedirs(cwd, exist_ok=True)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    dtl = os.path.abspath(args.dtl)
    dirs = {c: os.path.join(work, name(c)) for c in CASES}

    def dtl_run(case, out, resume=None):
        n, m, s = case
        os.makedirs(out, exist_ok=True)
        hp = os.path.join(out, "hparams.json")
        with open(hp, "w") as f:
            json.dump(common.hparams(m, s), f)
        argv = [dtl, "--hparams", hp, "--seed", str(SEED), "--run-dir", os.path.join(out, "run")]
        if resume:
            argv += ["--resume", resume]
        launch(args.python, n, argv, dict(env, DTL_ORACLE_OUT=out), cwd, os.path.join(out, "console.log"))

    def checkpoint_dirs(out):
        return [r["dir"] for r in records(out, 0)["checkpoint"]]

    # 1. dtl, uninterrupted.
    for c in CASES:
        dtl_run(c, os.path.join(dirs[c], "dtl"))
    # 2. Determined: uninterrupted, then resumed from dtl's checkpoint after epoch 1. One
    #    interpreter for the jobs of a world size (each job a fit of its own): importing torch
    #    and determined takes seconds.
    for phase in ("det", "det_from_dtl"):
        for n in (1, 2):
            jobs = []
            for c in [c for c in CASES if c[0] == n]:
                d = dirs[c]
                job = {"model": c[1], "shuffle": c[2], "seed": SEED, "xdg": os.path.join(d, "xdg"),
                       "out": os.path.join(d, phase), "resume": None, "skip_epochs": 0}
                if phase == "det_from_dtl":
                    job.update(resume=checkpoint_dirs(os.path.join(d, "dtl"))[0], skip_epochs=1)
                jobs.append(job)
            jobs_file = os.path.join(work, f"{phase}{n}.json")
            with open(jobs_file, "w") as f:
                json.dump(jobs, f)
            try:
                launch(args.python, n, [os.path.join(HERE, "det_trials.py"), jobs_file], dict(env, PYTHONPATH=HERE),
                       cwd, os.path.join(work, f"{phase}{n}.log"))
            except Mismatch as e:  # each job's error.txt says what failed
                print(f"Determined ({phase}, {n} process{'es' if n > 1 else ''}): {e}"[:2000])
    # 3. Compare; dtl resumed from Determined's checkpoint after epoch 1.
    results = []

    def check(label, fn):
        try:
            fn()
            results.append(True)
            print(f"PASS {label}")
        except Mismatch as e:
            results.append(False)
            print(f"FAIL {label}: {e}")

    for c in CASES:
        d = dirs[c]
        det, dtl_out = os.path.join(d, "det"), os.path.join(d, "dtl")

        def fresh():
            compare_runs(det, dtl_out, ("Determined", "dtl"), c[0])
            compare_checkpoints(checkpoint_dirs(det)[-1], checkpoint_dirs(dtl_out)[-1], ("Determined", "dtl"))
            check_seeded_rng_states(checkpoint_dirs(dtl_out)[-1], SEED)

        def det_from_dtl():
            compare_runs(det, os.path.join(d, "det_from_dtl"),
                         ("Determined", "Determined resumed from dtl's checkpoint"), c[0], resumed_from=1)

        def dtl_from_det():
            ckpts = checkpoint_dirs(det)
            if not ckpts:
                raise Mismatch("Determined wrote no checkpoint")
            dtl_run(c, os.path.join(d, "dtl_from_det"), resume=ckpts[0])
            compare_runs(dtl_out, os.path.join(d, "dtl_from_det"),
                         ("dtl", "dtl resumed from Determined's checkpoint"), c[0], resumed_from=1)

        check(f"{name(c)}: Determined and dtl train the same", fresh)
        check(f"{name(c)}: Determined resumes from dtl's checkpoint", det_from_dtl)
        check(f"{name(c)}: dtl resumes from Determined's checkpoint", dtl_from_det)
    failures = results.count(False)
    print(f"oracle: {results.count(True)} of {len(results)} comparisons identical in {time.monotonic() - t0:.1f} s"
          f" ({work})")
    if not args.work and failures == 0:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
