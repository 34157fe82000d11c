#!/usr/bin/env python3
"""Determined's own examples against their dtl ports: each example's Python (transcribed in this
folder, data loading aside) runs under det.pytorch.Trainer 0.38.1 in local mode, and its port in
examples/determined/ runs as a user runs it, on the same synthetic MNIST-format data (IDX files
written here) with the same seed; required bit for bit: every batch's loss (reported each batch),
the validation metrics and the final weights.

  run_examples.py --examples build-torch2/examples [--python .venv/bin/python3] [--work DIR]

Examples: mnist_pytorch (examples/tutorials/mnist_pytorch: Adadelta, Dropout2d on a 2-D input,
LogSoftmax's implicit dim, Python-number validation metrics).
"""
import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SEED = 7
BATCHES = 24  # of 64: the training set is 30 batches, so no epoch boundary is needed


def write_idx(path, array):
    """An IDX file (gzipped): magic 0 0 0x08 ndim, the dimensions big-endian, then the uint8 data."""
    import numpy as np
    array = np.ascontiguousarray(array, dtype=np.uint8)
    head = bytes([0, 0, 0x08, array.ndim]) + b"".join(int(d).to_bytes(4, "big") for d in array.shape)
    with gzip.open(path, "wb") as f:
        f.write(head + array.tobytes())


def synthetic_mnist(data_dir, n_train=1920, n_test=320):
    """Digits a network can learn, slowly: a faint bar whose row is the label, over strong noise."""
    import numpy as np
    rng = np.random.RandomState(SEED)
    os.makedirs(data_dir, exist_ok=True)
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        labels = rng.randint(0, 10, n)
        images = rng.randint(0, 200, (n, 28, 28))
        for i, label in enumerate(labels):
            images[i, 2 + 2 * label: 4 + 2 * label, 4:24] += 40
        write_idx(os.path.join(data_dir, f"{prefix}-images-idx3-ubyte.gz"), images)
        write_idx(os.path.join(data_dir, f"{prefix}-labels-idx1-ubyte.gz"), labels)


def run_determined(work):
    """The Python example under det.pytorch.Trainer, in this process; its record and final weights."""
    os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")  # Determined 0.38.1's torch.load
    import torch
    from ruamel import yaml
    from determined import pytorch
    sys.path.insert(0, HERE)
    import mnist_pytorch_det as example

    record = {"losses": [], "validations": []}

    class Recorder(pytorch.PyTorchCallback):
        def on_training_workload_end(self, avg_metrics, batch_metrics):
            record["losses"].append(float(avg_metrics["loss"]))

        def on_validation_end(self, metrics):
            record["validations"].append({k: float(v) for k, v in metrics.items()})

    class RecordedTrial(example.MNistTrial):  # the example's trial, unchanged, with a recorder
        def build_callbacks(self):
            return {"recorder": Recorder()}

    cwd = os.getcwd()
    os.chdir(work)
    # local mode's checkpoint storage, outside the directory whose code a checkpoint copies
    os.environ["XDG_DATA_HOME"] = work + "-xdg"
    try:
        torch.set_num_threads(1)
        # train.py's run(local=True): const.yaml's hyperparameters
        conf = yaml.YAML(typ="safe").load(open(os.path.join(ROOT, "examples/determined/mnist_pytorch/const.yaml")))
        hparams = conf["hyperparameters"]
        with pytorch.init() as train_context:
            torch.manual_seed(SEED)  # local mode seeds nothing; dtl seeds torch with --seed in init
            trial = RecordedTrial(train_context, hparams=hparams)
            trainer = pytorch.Trainer(trial, train_context)
            trainer.fit(max_length=pytorch.Batch(BATCHES), reporting_period=pytorch.Batch(1))
        weights = {k: v.detach().clone() for k, v in trial.model.state_dict().items()}
    finally:
        os.chdir(cwd)
    return record, weights


def run_dtl(binary, work):
    import torch
    run_dir = os.path.join(work, "run")
    cmd = [binary, "--config", os.path.join(ROOT, "examples/determined/mnist_pytorch/const.yaml"),
           "--max-length", f"batches={BATCHES}", "--scheduling-unit", "1", "--seed", str(SEED), "--run-dir", run_dir]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    p = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"dtl's mnist_pytorch failed ({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    record = {"losses": [], "validations": []}
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            if r["type"] == "training":
                record["losses"].append(float(r["metrics"]["loss"]))
            elif r["type"] == "validation":
                record["validations"].append({k: float(v) for k, v in r["metrics"].items()})
    checkpoints = [os.path.join(run_dir, "checkpoints", d) for d in os.listdir(os.path.join(run_dir, "checkpoints"))]
    checkpoints = [d for d in checkpoints if os.path.isfile(os.path.join(d, "state_dict.pth"))]
    last = max(checkpoints, key=lambda d: json.load(open(os.path.join(d, "metadata.json")))["steps_completed"])
    sd = torch.load(os.path.join(last, "state_dict.pth"), weights_only=True)
    return record, sd["models_state_dict"][0]


def compare(name, py, py_w, cc, cc_w):
    import torch
    problems = []
    if len(py["losses"]) != BATCHES or len(cc["losses"]) != BATCHES:
        problems.append(f"reported losses: Determined {len(py['losses'])}, dtl {len(cc['losses'])}, expected {BATCHES}")
    for i, (a, b) in enumerate(zip(py["losses"], cc["losses"])):
        if a != b:
            problems.append(f"batch {i}: loss {a!r} (Determined) != {b!r} (dtl)")
            break
    if py["validations"] != cc["validations"] or not py["validations"]:
        problems.append(f"validations: Determined {py['validations']} != dtl {cc['validations']}")
    if sorted(py_w) != sorted(cc_w):
        problems.append(f"weights' keys: {sorted(py_w)} != {sorted(cc_w)}")
    else:
        for k in py_w:
            if not torch.equal(py_w[k], cc_w[k]):
                problems.append(f"final weight {k} differs (max |d| {(py_w[k] - cc_w[k]).abs().max().item()})")
    for p in problems:
        print(f"{name}: MISMATCH {p}")
    if not problems:
        print(f"{name}: {BATCHES} losses, {len(py['validations'])} validation, {len(py_w)} weight tensors "
              f"equal bit for bit (final loss {py['losses'][-1]:.6f}, validation {py['validations'][-1]})")
    return not problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--examples", required=True, help="the build's examples directory (build-torch2/examples)")
    ap.add_argument("--work")
    args = ap.parse_args()
    start = time.time()
    work = args.work or tempfile.mkdtemp(prefix="dtl-det-examples-")
    shutil.rmtree(work, ignore_errors=True)
    ok = True
    py_work, cc_work = os.path.join(work, "determined"), os.path.join(work, "dtl")
    for w in (py_work, cc_work):
        synthetic_mnist(os.path.join(w, "data"))
    py, py_w = run_determined(py_work)
    cc, cc_w = run_dtl(os.path.abspath(os.path.join(args.examples, "mnist_pytorch")), cc_work)
    ok &= compare("mnist_pytorch", py, py_w, cc, cc_w)
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    print(f"determined examples: {'equal' if ok else 'DIFFERENT'} ({time.time() - start:.0f} s)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
