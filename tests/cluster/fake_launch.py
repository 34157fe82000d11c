#!/usr/bin/env python3
"""determined.launch.torch_distributed, unchanged, in a fake trial container.

    fake_launch.py [TORCH_OVERRIDES... --] SCRIPT...

is `python3 -m determined.launch.torch_distributed [TORCH_OVERRIDES... --] SCRIPT...` except for
where the launcher learns the cluster: det.get_cluster_info() reads /run/determined/info/*.json,
which prep_container writes in a real container and this test cannot (nothing here writes to
/run). So before handing its arguments to the launcher's own parse_args and main, this installs
as determined._info._info the ClusterInfo that prep_container would have written for the
environment of tests/cluster/cluster_env.py (cluster_info_from_env). Everything the launcher
starts is Determined's and torch's own: `python3 -m determined.exec.pid_server` (its socket is
/tmp/pid_server-<allocation id>), `python3 -m torch.distributed.run ... --master_port $C10D_PORT
--module determined.exec.pid_client`, `determined.launch.wrap_rank RANK -- SCRIPT...`. Those run
`python3` from PATH, so PATH must find a Python with determined and torch first (the test puts
the venv's bin directory there). The trial processes build their ClusterInfo again themselves
(det_cluster_trial.py imports this module for that; dtl reads DET_* directly).
"""
import json
import os
import sys

from determined import _info


def cluster_info_from_env():
    """The ClusterInfo of a one-container trial: ClusterInfo._from_env (DET_MASTER, DET_SLOT_IDS,
    DET_ALLOCATION_ID, ...), its trial part from TrialInfo._from_env (DET_TRIAL_ID, DET_HPARAMS,
    DET_EXPERIMENT_CONFIG, ...), the rendezvous info of a single container on loopback
    (container_addrs ["127.0.0.1"], container_rank 0, container_slot_counts [len(DET_SLOT_IDS)]:
    what prep_container --rendezvous writes for a one-container allocation) and no GPUs."""
    trial = _info.TrialInfo._from_env()
    slots = json.loads(os.environ["DET_SLOT_IDS"])
    rendezvous = _info.RendezvousInfo(container_addrs=["127.0.0.1"], container_rank=0,
                                      container_slot_counts=[len(slots)])
    resources = _info.ResourcesInfo(gpu_uuids=[])
    saved = (_info.TrialInfo._from_file, _info.RendezvousInfo._from_file,
             _info.ResourcesInfo._from_file)
    _info.TrialInfo._from_file = classmethod(lambda cls, *a, **k: trial)
    _info.RendezvousInfo._from_file = classmethod(lambda cls, *a, **k: rendezvous)
    _info.ResourcesInfo._from_file = classmethod(lambda cls, *a, **k: resources)
    try:
        return _info.ClusterInfo._from_env()
    finally:
        (_info.TrialInfo._from_file, _info.RendezvousInfo._from_file,
         _info.ResourcesInfo._from_file) = saved


def install_cluster_info():
    """det.get_cluster_info() answers cluster_info_from_env() from now on, in this process."""
    _info._info = cluster_info_from_env()
    return _info._info


def main(argv):
    install_cluster_info()
    # imported after: the module reads C10D_PORT at import, as it does in a container
    from determined.launch import torch_distributed
    override_args, script = torch_distributed.parse_args(argv)
    return torch_distributed.main(override_args, script)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
