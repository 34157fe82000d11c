#!/usr/bin/env python3
"""The oracle's trials in the real Determined: det.pytorch.PyTorchTrial subclasses run by
det.pytorch.Trainer in local mode (1 process, or N under torchrun over Gloo). The same trials in
dtl are tests/oracle/oracle_trials.cpp; tests/oracle/run_oracle.py runs both and compares them.

Every rank appends what it saw to OUT/rank<R>.jsonl, one JSON object a line:
  {"kind": "batch", "loss": l}                                 each train_batch, this rank's loss
  {"kind": "train", "avg": {...}, "batches": [{...}, ...]}      on_training_workload_end
  {"kind": "val", "metrics": {...}}                             on_validation_end
  {"kind": "checkpoint", "dir": path}                           on_checkpoint_write_end (chief)
and the chief writes OUT/final.pt (torch.save of the model's state_dict) at the end.
Floats are written as Python's repr (exact round trip); float32 values are exact in a double.
"""
import argparse
import json
import os
import sys
import traceback

# Determined 0.38.1 calls torch.load(path, map_location="cpu") without weights_only, and
# torch >= 2.6 defaults weights_only to True, which refuses the numpy RNG state Determined puts
# into its own checkpoints (rng_state.np_rng_state): resuming from any Determined checkpoint
# fails. The smallest workaround: torch's documented switch back to the old default. (dtl's
# checkpoints load with weights_only=True; tests/checkpoint/checkpoint_interop_test.cpp.)
os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")

import torch  # noqa: E402
from torch import nn  # noqa: E402

import determined as det  # noqa: E402
from determined import pytorch  # noqa: E402
from determined.pytorch import samplers  # noqa: E402

import oracle_common as common  # noqa: E402


class Recorder(pytorch.PyTorchCallback):
    def __init__(self, trial):
        self.trial = trial

    def on_training_workload_end(self, avg_metrics, batch_metrics):
        self.trial.log({"kind": "train", "avg": common.plain(avg_metrics),
                        "batches": [common.plain(b) for b in batch_metrics]})

    def on_validation_end(self, metrics):
        self.trial.log({"kind": "val", "metrics": common.plain(metrics)})

    def on_checkpoint_write_end(self, checkpoint_dir):
        self.trial.log({"kind": "checkpoint", "dir": str(checkpoint_dir)})


class OracleTrial(pytorch.PyTorchTrial):
    def __init__(self, context, args):
        self.context = context
        self.args = args
        self.rank = context.distributed.get_rank()
        self.out = open(os.path.join(args.out, f"rank{self.rank}.jsonl"), "a")
        hp = context.get_hparams()
        model = common.build_model(hp["model"])
        self.model = context.wrap_model(model)
        if hp["model"] == "mlp":
            opt = torch.optim.SGD(self.model.parameters(), lr=hp["learning_rate"], momentum=0.9,
                                  weight_decay=1e-4)
            self.opt = context.wrap_optimizer(opt)
            context.wrap_lr_scheduler(torch.optim.lr_scheduler.StepLR(self.opt, 1, gamma=0.5),
                                      pytorch.LRScheduler.StepMode.STEP_EVERY_EPOCH)
        else:
            self.opt = context.wrap_optimizer(torch.optim.Adam(self.model.parameters(),
                                                               lr=hp["learning_rate"]))
        self.train_set, self.val_set = common.datasets(hp["model"])

    def log(self, record):
        self.out.write(json.dumps(record) + "\n")
        self.out.flush()

    def build_callbacks(self):
        return {"recorder": Recorder(self)}

    def build_training_data_loader(self):
        bs = self.context.get_per_slot_batch_size()
        if not self.context.get_hparam("shuffle"):
            return pytorch.DataLoader(self.train_set, batch_size=bs)
        # Determined's shuffle=True draws torch's RandomSampler from the global RNG (not
        # reproducible across a resume, docs/differences.md); dtl's shuffle=true is this
        # sampler, seeded with the trial seed.
        sampler = samplers.ReproducibleShuffleSampler(
            torch.utils.data.SequentialSampler(self.train_set), self.args.seed)
        # Local-mode resume restarts the data from the beginning (docs/differences.md); a
        # resume at an epoch boundary continues the permutations where they were.
        for _ in range(self.args.skip_epochs):
            list(sampler)
        return pytorch.DataLoader(self.train_set, batch_size=bs, sampler=sampler)

    def build_validation_data_loader(self):
        return pytorch.DataLoader(self.val_set, batch_size=self.context.get_per_slot_batch_size())

    def train_batch(self, batch, epoch_idx, batch_idx):
        x, y = batch
        loss = nn.functional.cross_entropy(self.model(x), y)
        self.context.backward(loss)
        self.context.step_optimizer(self.opt)
        self.log({"kind": "batch", "loss": loss.item()})
        return {"loss": loss}

    def evaluate_batch(self, batch, batch_idx):
        x, y = batch
        out = self.model(x)
        return {"validation_loss": nn.functional.cross_entropy(out, y),
                "accuracy": (out.argmax(1) == y).to(torch.float32).mean()}


def distributed_context(index):
    """DistributedContext.from_torch_distributed() (what Determined's torch launcher makes), on
    ports of this job's own: each fit needs a new context (leaving pytorch.init closes its
    sockets), and a second context on the default ports hangs."""
    e = {k: int(os.environ[k]) for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK",
                                         "GROUP_WORLD_SIZE")}
    return det.core.DistributedContext(
        rank=e["RANK"], size=e["WORLD_SIZE"], local_rank=e["LOCAL_RANK"], local_size=e["LOCAL_WORLD_SIZE"],
        cross_rank=e["GROUP_RANK"], cross_size=e["GROUP_WORLD_SIZE"], pub_port=29900 + 2 * index,
        pull_port=29901 + 2 * index)


def run(job, distributed):
    """One fit: job = {model, shuffle, seed, out, xdg, resume, skip_epochs}."""
    args = argparse.Namespace(**job)
    os.makedirs(args.out, exist_ok=True)
    # Local mode stores checkpoints under appdirs.user_data_dir("determined"), read at each call.
    os.environ["XDG_DATA_HOME"] = args.xdg
    hparams = common.hparams(args.model, args.shuffle)
    with pytorch.init(hparams=hparams, distributed=distributed) as context:
        # Local mode seeds nothing (Determined seeds on a cluster only); dtl seeds torch with the
        # trial seed in dtl::init, before the trial is built.
        torch.manual_seed(args.seed)
        trial = OracleTrial(context, args)
        e = common.EPOCH_BATCHES
        pytorch.Trainer(trial, context).fit(
            max_length=pytorch.Batch(2 * e), validation_period=pytorch.Batch(e),
            checkpoint_period=pytorch.Batch(e), latest_checkpoint=args.resume,
            checkpoint_policy="none")
        if context.distributed.get_rank() == 0:
            model = getattr(trial.model, "module", trial.model)  # DDP's wrapper: its module
            torch.save(model.state_dict(), os.path.join(args.out, "final.pt"))
        trial.out.close()


def main():
    """det_trials.py JOBS.json: run each job (a JSON list of run()'s dicts) in turn, in this
    process (one interpreter start for all: importing torch and determined takes seconds)."""
    torch.set_num_threads(1)
    distributed = None
    if "WORLD_SIZE" in os.environ:  # under torchrun: Gloo, as Determined's launcher would set up
        # determined.launch.torch_distributed sets this; wrap_model wraps in DDP only with it.
        os.environ["USE_TORCH_DISTRIBUTED"] = "1"
        torch.distributed.init_process_group("gloo")
        distributed = True
    with open(sys.argv[1]) as f:
        jobs = json.load(f)
    failed = None
    for index, job in enumerate(jobs):
        os.makedirs(job["out"], exist_ok=True)
        if failed:  # after a failure on several processes, their state is unknown: run no more
            with open(os.path.join(job["out"], "error.txt"), "w") as f:
                f.write(f"not run: an earlier job failed ({failed})\n")
            continue
        try:
            run(job, distributed_context(index) if distributed else None)
        except Exception:  # the driver reports it for this job
            with open(os.path.join(job["out"], "error.txt"), "w") as f:
                f.write(traceback.format_exc())
            failed = distributed and job["out"]
    if distributed is not None:
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
