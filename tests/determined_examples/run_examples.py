#!/usr/bin/env python3
"""Determined's own examples against their dtl ports: each example's Python (transcribed in this
folder, data loading aside) runs under det.pytorch.Trainer 0.38.1 in local mode, and its port in
examples/determined/ runs as a user runs it, on the same synthetic data in the example's format
(written here) with the same seed; required bit for bit: every batch's training metrics (reported
each batch), the validation metrics and the final weights.

  .venv/bin/python3 run_examples.py --examples build-torch2/examples [--work DIR]

Examples:
  mnist_pytorch (examples/tutorials/mnist_pytorch): Adadelta, Dropout2d on a 2-D input,
    LogSoftmax's implicit dim, Python-number validation metrics; validation at the end;
  cifar10_pytorch (examples/computer_vision/cifar10_pytorch): RMSprop with weight decay, three
    Dropout2d, Python-number training and validation metrics; validation every epoch;
  gan_mnist_pytorch (examples/gan/gan_mnist_pytorch): two models and two Adams stepped in one
    train_batch with requires_grad switched between them, noise drawn in train_batch, BatchNorm,
    LambdaLR every epoch (an epoch ends at batch 20).
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
BATCHES = 24  # mnist: of 64, in an epoch of 30; cifar10 and gan: of 32, in epochs of 20


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


def synthetic_cifar10(data_dir, per_file=128, n_test=160):
    """CIFAR-10's binary files: a label byte and 3072 pixel bytes per image; a faint label-coloured
    square over noise."""
    import numpy as np
    rng = np.random.RandomState(SEED)
    os.makedirs(data_dir, exist_ok=True)
    for name, n in [(f"data_batch_{i}.bin", per_file) for i in range(1, 6)] + [("test_batch.bin", n_test)]:
        labels = rng.randint(0, 10, n)
        images = rng.randint(0, 200, (n, 3, 32, 32))
        for i, label in enumerate(labels):
            images[i, label % 3, 3 * label: 3 * label + 6, 8:24] += 50
        records = np.concatenate([labels[:, None], images.reshape(n, -1)], axis=1).astype(np.uint8)
        records.tofile(os.path.join(data_dir, name))


def run_determined(name, work):
    """The Python example under det.pytorch.Trainer, in this process; its record and final weights."""
    os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")  # Determined 0.38.1's torch.load
    import importlib
    import torch
    from ruamel import yaml
    from determined import pytorch
    sys.path.insert(0, HERE)
    example = importlib.import_module(f"{name}_det")

    record = {"training": [], "validation": []}

    class Recorder(pytorch.PyTorchCallback):
        def on_training_workload_end(self, avg_metrics, batch_metrics):
            record["training"].append({k: float(v) for k, v in avg_metrics.items() if k not in ("batches", "epochs")})

        def on_validation_end(self, metrics):
            record["validation"].append({k: float(v) for k, v in metrics.items()})

    def recorded(trial_class):  # the example's trial, unchanged, with a recorder
        return type("Recorded" + trial_class.__name__, (trial_class,),
                    {"build_callbacks": lambda self: {"recorder": Recorder()}})

    cwd = os.getcwd()
    os.chdir(work)
    # local mode's checkpoint storage, outside the directory whose code a checkpoint copies
    os.environ["XDG_DATA_HOME"] = work + "-xdg"
    try:
        torch.set_num_threads(1)
        conf = yaml.YAML(typ="safe").load(open(os.path.join(ROOT, f"examples/determined/{name}/const.yaml")))
        hparams = conf["hyperparameters"]
        if name == "mnist_pytorch":
            # train.py's run(local=True): const.yaml's hyperparameters, given to the trial
            with pytorch.init() as train_context:
                torch.manual_seed(SEED)  # local mode seeds nothing; dtl seeds torch with --seed in init
                trial = recorded(example.MNistTrial)(train_context, hparams=hparams)
                pytorch.Trainer(trial, train_context).fit(max_length=pytorch.Batch(BATCHES),
                                                          reporting_period=pytorch.Batch(1))
        elif name == "gan_mnist_pytorch":
            # a legacy entrypoint: the hyperparameters in the context, no validation period
            with pytorch.init(hparams=hparams) as train_context:
                torch.manual_seed(SEED)
                trial = recorded(example.GANTrial)(train_context)
                pytorch.Trainer(trial, train_context).fit(max_length=pytorch.Batch(BATCHES),
                                                          reporting_period=pytorch.Batch(1))
        else:
            # a legacy entrypoint: the hyperparameters in the context, validation every epoch
            # (min_validation_period)
            with pytorch.init(hparams=hparams) as train_context:
                torch.manual_seed(SEED)
                trial = recorded(example.CIFARTrial)(train_context)
                pytorch.Trainer(trial, train_context).fit(max_length=pytorch.Batch(BATCHES),
                                                          validation_period=pytorch.Epoch(1),
                                                          reporting_period=pytorch.Batch(1))
        # every wrapped model's weights, named as the checkpoint lists them ("<model>.<key>")
        weights = {f"{i}.{k}": v.detach().clone() for i, m in enumerate(trial.context.models)
                   for k, v in m.state_dict().items()}
    finally:
        os.chdir(cwd)
    return record, weights


def run_dtl(name, binary, work):
    import torch
    run_dir = os.path.join(work, "run")
    config = os.path.join(ROOT, f"examples/determined/{name}/const.yaml")
    with open(config) as f:
        text = f.read()
    if "records_per_epoch: 50000" in text:
        # cifar10's const.yaml gives CIFAR-10's size, which dtl takes as the epoch's length (Determined
        # ignores it, docs/differences.md); the synthetic training set is 640 images
        config = os.path.join(work, "const.yaml")
        with open(config, "w") as f:
            f.write(text.replace("records_per_epoch: 50000", "records_per_epoch: 640"))
    cmd = [binary, "--config", config,
           "--max-length", f"batches={BATCHES}", "--scheduling-unit", "1", "--seed", str(SEED), "--run-dir", run_dir]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    p = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"dtl's {name} failed ({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    record = {"training": [], "validation": []}
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            if r["type"] in record:
                record[r["type"]].append({k: float(v) for k, v in r["metrics"].items()})
    checkpoints = [os.path.join(run_dir, "checkpoints", d) for d in os.listdir(os.path.join(run_dir, "checkpoints"))]
    checkpoints = [d for d in checkpoints if os.path.isfile(os.path.join(d, "state_dict.pth"))]
    last = max(checkpoints, key=lambda d: json.load(open(os.path.join(d, "metadata.json")))["steps_completed"])
    sd = torch.load(os.path.join(last, "state_dict.pth"), weights_only=True)
    return record, {f"{i}.{k}": v for i, m in enumerate(sd["models_state_dict"]) for k, v in m.items()}


def compare(name, py, py_w, cc, cc_w):
    import torch
    problems = []
    if len(py["training"]) != BATCHES or len(cc["training"]) != BATCHES:
        problems.append(f"training reports: Determined {len(py['training'])}, dtl {len(cc['training'])}, "
                        f"expected {BATCHES}")
    for i, (a, b) in enumerate(zip(py["training"], cc["training"])):
        if a != b:
            problems.append(f"batch {i}: Determined reported {a}, dtl {b}")
            break
    if py["validation"] != cc["validation"] or not py["validation"]:
        problems.append(f"validations: Determined {py['validation']} != dtl {cc['validation']}")
    if sorted(py_w) != sorted(cc_w):
        problems.append(f"weights' keys: {sorted(py_w)} != {sorted(cc_w)}")
    else:
        for k in py_w:
            if not torch.equal(py_w[k], cc_w[k]):
                problems.append(f"final weight {k} differs (max |d| {(py_w[k] - cc_w[k]).abs().max().item()})")
    for p in problems:
        print(f"{name}: MISMATCH {p}")
    if not problems:
        print(f"{name}: {BATCHES} batches' metrics ({', '.join(py['training'][-1])}), {len(py['validation'])} "
              f"validations, {len(py_w)} weight tensors equal bit for bit (last loss {py['training'][-1]['loss']:.6f}, "
              f"last validation {py['validation'][-1]})")
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
    examples = (("mnist_pytorch", synthetic_mnist), ("cifar10_pytorch", synthetic_cifar10),
                # 20 batches of 32 an epoch: the generator's LambdaLR steps, and a new epoch starts, at 20
                ("gan_mnist_pytorch", lambda d: synthetic_mnist(d, n_train=640, n_test=160)))
    for name, make_data in examples:
        py_work, cc_work = os.path.join(work, name, "determined"), os.path.join(work, name, "dtl")
        for w in (py_work, cc_work):
            make_data(os.path.join(w, "data"))
        py, py_w = run_determined(name, py_work)
        cc, cc_w = run_dtl(name, os.path.abspath(os.path.join(args.examples, name)), cc_work)
        ok &= compare(name, py, py_w, cc, cc_w)
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    print(f"determined examples: {'equal' if ok else 'DIFFERENT'} ({time.time() - start:.0f} s)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
