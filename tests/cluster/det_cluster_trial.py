#!/usr/bin/env python3
"""The real det.pytorch.Trainer in cluster mode, against a (fake) master, using only the
environment a trial container receives (tests/cluster/cluster_env.py): tests/oracle's OracleTrial
(the MLP, sequential data, hparams oracle_common.hparams("mlp", 0)), seeded by Determined itself
from DET_TRIAL_SEED, fit(max_length=Batch(24), validation_period=Batch(12),
checkpoint_period=Batch(12), checkpoint_policy="none", latest_checkpoint=DET_LATEST_CHECKPOINT).

On 2 slots it runs under determined.launch.torch_distributed (tests/cluster/fake_launch.py), one
process per slot: det.pytorch.init sees USE_TORCH_DISTRIBUTED and builds the DistributedContext
from torchrun's variables over Gloo, as the harness does; only the chief talks to the master.

Three things stand in for what a container would have and the test cannot:
  * det.get_cluster_info() reads /run/determined/info/*.json; we build the same ClusterInfo from
    the environment (fake_launch.cluster_info_from_env: ClusterInfo._from_env, its trial part
    from TrialInfo._from_env, one container with the slots of DET_SLOT_IDS, no GPUs) and install
    it as determined._info._info.
  * shared_fs storage lives at /determined_shared_fs; constants.SHARED_FS_CONTAINER_PATH is
    $DTL_SHARED_FS_CONTAINER_PATH instead.
  * the context directory is extracted to /run/determined/train/model, which the PyTorch trial
    copies into each checkpoint as code/; constants.MANAGED_TRAINING_MODEL_COPY is
    $DTL_MODEL_COPY_PATH instead (created empty if missing).

OracleTrial logs what it saw to $DTL_ORACLE_OUT/rank<R>.jsonl (default: the working directory).
Exit status 0 also when preempted, as on a cluster (the master reschedules after the ack).
"""
import argparse
import faulthandler
import os
import shutil
import signal
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "oracle"))

import det_trials  # noqa: E402  (sets TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD: see there)
import oracle_common as common  # noqa: E402

import torch  # noqa: E402

import determined as det  # noqa: E402
from determined import pytorch  # noqa: E402
from determined import constants as det_constants  # noqa: E402
from determined.common import constants as common_constants  # noqa: E402

import fake_launch  # noqa: E402  (tests/cluster: the ClusterInfo prep_container would write)


def main():
    # all threads' stacks on SIGUSR2 (Determined's own SIGUSR1 handler prints the main thread's)
    faulthandler.register(signal.SIGUSR2, all_threads=True)
    torch.set_num_threads(1)
    shared = os.environ["DTL_SHARED_FS_CONTAINER_PATH"]
    common_constants.SHARED_FS_CONTAINER_PATH = shared
    model_copy = os.environ["DTL_MODEL_COPY_PATH"]
    os.makedirs(model_copy, exist_ok=True)
    det_constants.MANAGED_TRAINING_MODEL_COPY = model_copy
    fake_launch.install_cluster_info()
    # A container's /tmp starts empty; Determined keeps TensorBoard event files in
    # /tmp/tensorboard-<allocation>-<rank> and syncs that whole directory into the storage, so a
    # leftover one from an earlier test with the same allocation id would be uploaded too.
    rank = int(os.environ.get("RANK", "0"))
    tb_dir = f"/tmp/tensorboard-{os.environ['DET_ALLOCATION_ID']}-{rank}"
    shutil.rmtree(tb_dir, ignore_errors=True)
    info = det.get_cluster_info()
    assert info is not None and info.task_type == "TRIAL"
    out = os.environ.get("DTL_ORACLE_OUT") or os.getcwd()
    os.makedirs(out, exist_ok=True)
    args = argparse.Namespace(out=out, seed=info.trial.trial_seed, skip_epochs=0)
    # Under determined.launch.torch_distributed (USE_TORCH_DISTRIBUTED=True, torchrun's RANK,
    # WORLD_SIZE, ...), pytorch.init does what the harness does: init_process_group("gloo") (no
    # CUDA here) and core.DistributedContext.from_torch_distributed(), chief ip DET_CHIEF_IP.
    with pytorch.init(hparams=info.trial.hparams) as context:
        assert context.distributed.get_size() == len(info.slot_ids), context.distributed.get_size()
        trial = det_trials.OracleTrial(context, args)
        e = common.EPOCH_BATCHES
        pytorch.Trainer(trial, context).fit(
            max_length=pytorch.Batch(2 * e), validation_period=pytorch.Batch(e),
            checkpoint_period=pytorch.Batch(e), checkpoint_policy="none",
            latest_checkpoint=info.latest_checkpoint)
        trial.out.close()
    shutil.rmtree(tb_dir, ignore_errors=True)  # the container's /tmp goes with it
    print(f"det_cluster_trial.py: rank {rank} done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
