#!/usr/bin/env python3
"""Reference learning-rate sequences from torch.optim.lr_scheduler, for tests/lr/lr_scheduler_test.cpp.

Run with the torch beside each LibTorch dtl builds on: Debian's python3-torch 1.13, and the
pinned wheel in .venv (scripts/requirements.txt) for LibTorch 2.x:

    /usr/bin/python3 tests/lr/lr_reference.py > tests/lr/lr_reference.json
    .venv/bin/python3 tests/lr/lr_reference.py > tests/lr/lr_reference_torch2.json

The sequences are the same in both; the state_dict() layouts differ (verbose in 1.13,
_is_initial in 2.x, ...).

Each case names an optimizer (its param groups' learning rates), a scheduler with its keyword
arguments, and a number of steps; the output holds, per case, every param group's learning rate
(and momentum, where the scheduler cycles it) after construction and after each step(), and the
scheduler's final state_dict(). The C++ test builds the same scheduler from the same description
and must match every value bit for bit. The output is checked in, so machines without Python
still run the comparison; the test also reruns this script when torch is importable and fails if
the checked-in file has drifted from what torch produces.

Functions cannot travel in JSON, so lambdas and scale functions are named ({"fn": "pow", "a": 0.97})
and both sides implement the same small set (FUNCTIONS below and the C++ test's make_function).
"""

import json
import warnings
import math
import sys

try:
    import torch
    from torch.optim import lr_scheduler as S
    from torch.optim import swa_utils
except ImportError as e:  # the C++ test tells "no torch here" from a failure by this status
    print(f"cannot import torch: {e}", file=sys.stderr)
    sys.exit(3)

FUNCTIONS = {
    "pow": lambda a: (lambda e: a ** e),  # a^e
    "warmup": lambda a: (lambda e: min(1.0, (e + 1) / a)),  # linear warmup over a steps
    "const": lambda a: (lambda e: a),  # constant factor
    "inv": lambda a: (lambda x: 1 / (1.0 + a * x)),  # a scale_fn for CyclicLR
}


def function(spec):
    return FUNCTIONS[spec["fn"]](spec["a"])


def lambdas(spec):
    return [function(s) for s in spec] if isinstance(spec, list) else function(spec)


def make_optimizer(spec):
    groups = [{"params": [torch.zeros(2, requires_grad=True)], "lr": lr} for lr in spec["lrs"]]
    if spec["type"] == "SGD":
        return torch.optim.SGD(groups, lr=spec["lrs"][0], momentum=spec.get("momentum", 0.0))
    if spec["type"] == "Adam":
        return torch.optim.Adam(groups, lr=spec["lrs"][0], betas=tuple(spec.get("betas", (0.9, 0.999))))
    raise ValueError(spec["type"])


def make_scheduler(opt, spec):
    kind, args = spec["type"], dict(spec.get("args", {}))
    if kind == "SequentialLR":
        subs = [make_scheduler(opt, s) for s in spec["schedulers"]]
        return S.SequentialLR(opt, subs, spec["milestones"])
    if kind == "ChainedScheduler":
        return S.ChainedScheduler([make_scheduler(opt, s) for s in spec["schedulers"]])
    if kind in ("LambdaLR", "MultiplicativeLR"):
        args["lr_lambda"] = lambdas(args["lr_lambda"])
    if kind == "CyclicLR" and "scale_fn" in args:
        args["scale_fn"] = function(args["scale_fn"])
    if kind == "SWALR":  # torch.optim.swa_utils, not lr_scheduler
        return swa_utils.SWALR(opt, **args)
    return getattr(S, kind)(opt, **args)


def momentum_of(group):
    return group["betas"][0] if "betas" in group else group["momentum"]


def plain(value):
    """A state_dict value as JSON: Counter → dict, tuple → list, callables → a marker."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return "<not data>"


def sgd(*lrs, momentum=0.9):
    return {"type": "SGD", "lrs": list(lrs), "momentum": momentum}


def adam(*lrs):
    return {"type": "Adam", "lrs": list(lrs), "betas": [0.9, 0.999]}


def sch(kind, **args):
    return {"type": kind, "args": args}


CASES = [
    ("StepLR", sgd(0.1, 0.05), sch("StepLR", step_size=7, gamma=0.5), 220),
    ("MultiStepLR repeated milestone", sgd(0.1), sch("MultiStepLR", milestones=[30, 80, 80, 150], gamma=0.3), 220),
    ("ExponentialLR", sgd(0.1, 0.02), sch("ExponentialLR", gamma=0.98), 220),
    ("CosineAnnealingLR periodic", sgd(0.1, 0.05), sch("CosineAnnealingLR", T_max=50, eta_min=0.001), 260),
    ("CosineAnnealingLR long", adam(0.001), sch("CosineAnnealingLR", T_max=250), 250),
    ("CosineAnnealingWarmRestarts T_mult=2", sgd(0.1), sch("CosineAnnealingWarmRestarts", T_0=10, T_mult=2, eta_min=1e-4), 250),
    ("CosineAnnealingWarmRestarts T_mult=1", sgd(0.1, 0.3), sch("CosineAnnealingWarmRestarts", T_0=25), 220),
    ("LinearLR warmup", sgd(0.1), sch("LinearLR", start_factor=0.1, end_factor=1.0, total_iters=40), 210),
    ("LinearLR decay", sgd(0.1, 0.01), sch("LinearLR", start_factor=1.0, end_factor=0.05, total_iters=100), 210),
    ("ConstantLR", sgd(0.1), sch("ConstantLR", factor=0.25, total_iters=30), 210),
    ("ConstantLR defaults", sgd(0.1), sch("ConstantLR"), 210),
    ("LambdaLR per group", sgd(0.1, 0.2), sch("LambdaLR", lr_lambda=[{"fn": "pow", "a": 0.97}, {"fn": "warmup", "a": 50}]), 220),
    ("MultiplicativeLR", sgd(0.1), sch("MultiplicativeLR", lr_lambda={"fn": "const", "a": 0.99}), 220),
    ("PolynomialLR power 2", sgd(0.1), sch("PolynomialLR", total_iters=150, power=2.0), 210),
    ("PolynomialLR power 0.5", sgd(0.1, 0.04), sch("PolynomialLR", total_iters=200, power=0.5), 210),
    ("OneCycleLR cos SGD", sgd(0.1, 0.1), sch("OneCycleLR", max_lr=[0.1, 0.05], total_steps=220), 220),
    ("OneCycleLR three-phase linear Adam", adam(0.001),
     sch("OneCycleLR", max_lr=0.01, epochs=10, steps_per_epoch=25, pct_start=0.25, anneal_strategy="linear",
         three_phase=True, div_factor=10.0, final_div_factor=100.0), 250),
    ("OneCycleLR no momentum", sgd(0.1, momentum=0.0), sch("OneCycleLR", max_lr=0.2, total_steps=200, cycle_momentum=False), 200),
    ("CyclicLR triangular", sgd(0.1), sch("CyclicLR", base_lr=0.01, max_lr=0.1, step_size_up=20, step_size_down=30), 230),
    ("CyclicLR triangular2", sgd(0.1, 0.1), sch("CyclicLR", base_lr=[0.01, 0.001], max_lr=[0.1, 0.02], step_size_up=25, mode="triangular2"), 230),
    ("CyclicLR exp_range", sgd(0.1), sch("CyclicLR", base_lr=0.001, max_lr=0.006, step_size_up=15, mode="exp_range", gamma=0.99), 230),
    ("CyclicLR custom scale_fn", sgd(0.1), sch("CyclicLR", base_lr=0.01, max_lr=0.05, step_size_up=10, scale_fn={"fn": "inv", "a": 0.01}, scale_mode="iterations", cycle_momentum=False), 230),
    ("SequentialLR warmup then cosine", sgd(0.1),
     {"type": "SequentialLR", "schedulers": [sch("LinearLR", start_factor=0.1, end_factor=1.0, total_iters=10),
                                             sch("CosineAnnealingLR", T_max=190)], "milestones": [10]}, 220),
    ("SequentialLR of three", sgd(0.1, 0.05),
     {"type": "SequentialLR", "schedulers": [sch("ConstantLR", factor=0.5, total_iters=20), sch("ExponentialLR", gamma=0.97),
                                             sch("StepLR", step_size=30, gamma=0.5)], "milestones": [40, 120]}, 220),
    ("ChainedScheduler constant x exponential", sgd(0.1),
     {"type": "ChainedScheduler", "schedulers": [sch("ConstantLR", factor=0.1, total_iters=20), sch("ExponentialLR", gamma=0.99)]}, 220),
    ("ChainedScheduler linear x multistep", sgd(0.1, 0.3),
     {"type": "ChainedScheduler", "schedulers": [sch("LinearLR", start_factor=0.5, total_iters=30), sch("MultiStepLR", milestones=[50, 100], gamma=0.5)]}, 220),
    ("SWALR cos", sgd(0.1, 0.05), sch("SWALR", swa_lr=0.01, anneal_epochs=150), 220),
    ("SWALR linear per-group swa_lr", sgd(0.1, 0.2), sch("SWALR", swa_lr=[0.02, 0.005], anneal_epochs=80, anneal_strategy="linear"), 210),
    ("SWALR defaults Adam", adam(0.001), sch("SWALR", swa_lr=0.0005), 200),
    ("SWALR anneal_epochs=0", sgd(0.1, 0.3), sch("SWALR", swa_lr=[0.03, 0.07], anneal_epochs=0), 200),
    ("SWALR anneal_epochs=1 linear", sgd(0.1), sch("SWALR", swa_lr=0.02, anneal_epochs=1, anneal_strategy="linear"), 200),
    ("SequentialLR cosine then SWALR", sgd(0.1),
     {"type": "SequentialLR", "schedulers": [sch("CosineAnnealingLR", T_max=150, eta_min=0.001),
                                             sch("SWALR", swa_lr=0.005, anneal_epochs=20)], "milestones": [100]}, 220),
]

CYCLES_MOMENTUM = ("OneCycleLR", "CyclicLR")


def run(name, opt_spec, sched_spec, steps):
    opt = make_optimizer(opt_spec)
    scheduler = make_scheduler(opt, sched_spec)
    cycles = sched_spec["type"] in CYCLES_MOMENTUM and sched_spec["args"].get("cycle_momentum", True)
    lrs, momenta = [], []

    def record():
        lrs.append([g["lr"] for g in opt.param_groups])
        if cycles:
            momenta.append([momentum_of(g) for g in opt.param_groups])

    record()
    for _ in range(steps):
        opt.step()  # keeps torch's "scheduler before optimizer" warning quiet; parameters have no grad
        scheduler.step()
        record()
    case = {"name": name, "optimizer": opt_spec, "scheduler": sched_spec, "steps": steps, "lrs": lrs,
            "last_lr": scheduler.get_last_lr(), "state": plain(scheduler.state_dict())}
    if cycles:
        case["momenta"] = momenta
    return case


def main():
    warnings.simplefilter("ignore")  # torch warns about step(epoch), which SequentialLR uses itself
    out = {"torch": torch.__version__, "generator": "tests/lr/lr_reference.py",
           "cases": [run(*c) for c in CASES]}
    json.dump(out, sys.stdout, indent=None, separators=(",", ":"))
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
