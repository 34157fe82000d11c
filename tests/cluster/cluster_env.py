#!/usr/bin/env python3
"""The environment a Determined 0.38.1 trial container receives (reference
/work/shared/reference/determined-cluster.md §1), pointed at a fake master on loopback.

    trial_env(port, work, run_id=1, latest_checkpoint=None, steps_completed=0, ...) -> {name: value}

It has everything determined's ClusterInfo._from_env and TrialInfo._from_env read (DET_MASTER,
DET_CLUSTER_ID, DET_AGENT_ID, DET_SLOT_IDS, DET_TASK_ID, DET_ALLOCATION_ID, DET_SESSION_TOKEN,
DET_TASK_TYPE, DET_LATEST_CHECKPOINT; DET_TRIAL_ID, DET_EXPERIMENT_ID, DET_TRIAL_SEED, DET_HPARAMS,
DET_EXPERIMENT_CONFIG, DET_STEPS_COMPLETED, DET_TRIAL_RUN_ID) and the rest of what task.go,
task_trial.go and the agent's spec.go set (DET_USER, DET_USER_TOKEN, DET_RESOURCES_ID, ...).
DET_LATEST_CHECKPOINT is present only on a restart.

One addition no cluster sets: DTL_SHARED_FS_CONTAINER_PATH=<work>/shared_fs, which stands for the
bind mount /determined_shared_fs (the test cannot write to /): checkpoints live at
$DTL_SHARED_FS_CONTAINER_PATH[/storage_path]/<uuid>/. And DTL_MODEL_COPY_PATH=<work>/model for
/run/determined/train/model, the context directory the Python harness copies into each checkpoint
as code/ (only det_cluster_trial.py reads it; it is empty here). The config's host_path is what a cluster's
would be (an absolute host path); the container never reads it.

The ids follow the master's shapes: task id "<experiment>.<request uuid>", allocation id
"<task id>.<run id>" (each restart is a new allocation).

CLI: cluster_env.py --port P --work DIR [--run-id N] [--latest-checkpoint UUID]
     [--steps-completed N] prints the variables as `export NAME='value'` lines.
"""
import argparse
import json
import os
import shlex
import socket
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "oracle"))
import oracle_common as common  # noqa: E402

TOKEN = "dtl-fake-allocation-token.v1"
USER_TOKEN = "dtl-fake-user-token.v1"
TRIAL_ID = 1
EXPERIMENT_ID = 1
TRIAL_SEED = 7  # tests/oracle/run_oracle.py's SEED
REQUEST_ID = "4f1c2d0e-8a6b-4b2e-9d3c-5e7f80a1b2c3"
TASK_ID = f"{EXPERIMENT_ID}.{REQUEST_ID}"
CLUSTER_ID = "0b7e4c1a-2f3d-4e5a-8b6c-9d0e1f2a3b4c"
STORAGE_PATH = "checkpoints"  # a subdir of host_path, so the storage_path branch is exercised
SEARCHER_METRIC = "validation_loss"
MAX_LENGTH_BATCHES = 2 * common.EPOCH_BATCHES  # 24


def allocation_id(run_id):
    return f"{TASK_ID}.{run_id}"


def hparams():
    return common.hparams("mlp", 0)


def shared_fs_dir(work):
    return os.path.join(work, "shared_fs")


def checkpoint_root(work):
    """Where the container sees checkpoints: $DTL_SHARED_FS_CONTAINER_PATH/<storage_path>."""
    return os.path.join(shared_fs_dir(work), STORAGE_PATH)


def experiment_config(hp, seed=TRIAL_SEED, slots=1):
    """An expconf as the master hands it to the trial: every default filled in (v0 schema)."""
    return {
        "name": "dtl-cluster-parity",
        "description": "dtl-cluster-parity",
        "labels": [],
        "data": {},
        "debug": False,
        "entrypoint": ("python3 det_cluster_trial.py" if slots == 1 else
                       "python3 -m determined.launch.torch_distributed python3 det_cluster_trial.py"),
        "environment": {
            "image": {"cpu": "determinedai/pytorch-ngc:0.38.1", "cuda": "determinedai/pytorch-ngc:0.38.1"},
            "environment_variables": {"cpu": [], "cuda": []},
            "proxy_ports": [], "ports": {}, "force_pull_image": False,
            "registry_auth": None, "add_capabilities": [], "drop_capabilities": [],
            "pod_spec": None,
        },
        "hyperparameters": {k: {"type": "const", "val": v} for k, v in hp.items()},
        "searcher": {
            "name": "single", "metric": SEARCHER_METRIC, "smaller_is_better": True,
            "max_length": {"batches": MAX_LENGTH_BATCHES},
            "source_trial_id": None, "source_checkpoint_uuid": None,
        },
        "checkpoint_storage": {
            "type": "shared_fs", "host_path": "/srv/determined/shared_fs",
            "storage_path": STORAGE_PATH, "propagation": "rprivate",
            "save_experiment_best": 0, "save_trial_best": 1, "save_trial_latest": 1,
        },
        "checkpoint_policy": "best",
        "max_restarts": 5,
        "min_checkpoint_period": {"batches": 0},
        "min_validation_period": {"batches": 0},
        "perform_initial_validation": False,
        "records_per_epoch": 0,
        "scheduling_unit": 100,
        "reproducibility": {"experiment_seed": seed},
        "resources": {
            "slots_per_trial": slots, "max_slots": None, "weight": 1, "native_parallel": False,
            "shm_size": None, "resource_pool": "default", "priority": None,
            "is_single_node": None, "devices": [],
        },
        "optimizations": {
            "aggregation_frequency": 1, "average_aggregated_gradients": True,
            "average_training_metrics": True, "gradient_compression": False,
            "grad_updates_size_file": None, "mixed_precision": "O0", "tensor_fusion_threshold": 64,
            "tensor_fusion_cycle_time": 1, "auto_tune_tensor_fusion": False,
        },
        "profiling": {"enabled": False, "begin_on_batch": 0, "end_after_batch": None,
                      "sync_timings": True},
        "bind_mounts": [],
        "log_policies": [],
        "workspace": "Uncategorized",
        "project": "Uncategorized",
        "integrations": None,
        "preemption_timeout": 3600,
    }


def free_port():
    """A TCP port nothing listens on now (the kernel's pick), as the master's unique ports are."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def trial_env(port, work, run_id=1, latest_checkpoint=None, steps_completed=0, token=TOKEN,
              hp=None, seed=TRIAL_SEED, slots=1, unique_ports=None):
    """unique_ports: {name: port} for the allocation's unique ports (C10D_PORT,
    INTER_TRAIN_PROCESS_COMM_PORT_1/_2); default C10D_PORT=29400 alone, as before."""
    hp = hparams() if hp is None else hp
    alloc = allocation_id(run_id)
    env = {
        # master/pkg/tasks/task.go EnvVars()
        "DET_TASK_ID": TASK_ID,
        "DET_ALLOCATION_ID": alloc,
        "DET_RESOURCES_ID": f"{alloc}.resources-0",
        "DET_CONTAINER_ID": f"{alloc}.container-0",
        "DET_SESSION_TOKEN": token,
        "DET_USER_TOKEN": USER_TOKEN,
        "DET_USER": "determined",
        "DET_WORKDIR": work,
        "DET_RUN_DIR": "/run/determined",
        "DET_USE_TLS": "false",
        "DET_RESOURCES_TYPE": "docker-container",
        # master/pkg/tasks/task_trial.go
        "DET_EXPERIMENT_ID": str(EXPERIMENT_ID),
        "DET_TRIAL_ID": str(TRIAL_ID),
        "DET_TRIAL_RUN_ID": str(run_id),
        "DET_TRIAL_SEED": str(seed),
        "DET_EXPERIMENT_CONFIG": json.dumps(experiment_config(hp, seed, slots)),
        "DET_HPARAMS": json.dumps(hp),
        "DET_STEPS_COMPLETED": str(steps_completed),
        "DET_TASK_TYPE": "TRIAL",
        # agent/internal/containers/spec.go
        "DET_MASTER": f"http://127.0.0.1:{port}",
        "DET_MASTER_HOST": "127.0.0.1",
        "DET_MASTER_ADDR": "127.0.0.1",
        "DET_MASTER_PORT": str(port),
        "DET_CLUSTER_ID": CLUSTER_ID,
        "DET_MASTER_ID": CLUSTER_ID,
        "DET_AGENT_ID": "fake-agent-0",
        "DET_SLOT_IDS": json.dumps(list(range(slots)), separators=(",", ":")),
        # the test's stand-in for the /determined_shared_fs bind mount
        "DTL_SHARED_FS_CONTAINER_PATH": shared_fs_dir(work),
        # and for /run/determined/train/model (the extracted context directory, which Determined's
        # PyTorch trial copies into every checkpoint as code/); read by det_cluster_trial.py only
        "DTL_MODEL_COPY_PATH": os.path.join(work, "model"),
    }
    # master/internal/task/allocation.go: the allocation's unique ports
    for name, value in (unique_ports or {"C10D_PORT": 29400}).items():
        env[name] = str(value)
    if latest_checkpoint:
        env["DET_LATEST_CHECKPOINT"] = latest_checkpoint
    return env


def unique_ports():
    """Free ports for one allocation: torch.distributed.run's store (C10D_PORT, which
    determined.launch.torch_distributed passes as --master_port) and the chief's ZMQ broadcast
    server of core.DistributedContext (INTER_TRAIN_PROCESS_COMM_PORT_1/_2, default 12360/12361,
    which tests on a shared machine must not share)."""
    names = ("C10D_PORT", "INTER_TRAIN_PROCESS_COMM_PORT_1", "INTER_TRAIN_PROCESS_COMM_PORT_2")
    ports = {}
    while len(set(ports.values())) < len(names):
        ports = {n: free_port() for n in names}
    return ports


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--run-id", type=int, default=1)
    ap.add_argument("--latest-checkpoint")
    ap.add_argument("--steps-completed", type=int, default=0)
    ap.add_argument("--slots", type=int, default=1)
    a = ap.parse_args()
    env = trial_env(a.port, os.path.abspath(a.work), a.run_id, a.latest_checkpoint, a.steps_completed,
                    slots=a.slots, unique_ports=unique_ports() if a.slots > 1 else None)
    for k, v in env.items():
        print(f"export {k}={shlex.quote(v)}")


if __name__ == "__main__":
    sys.exit(main())
