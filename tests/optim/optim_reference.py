#!/usr/bin/env python3
"""torch.optim's numbers for tests/optim/multi_tensor_test.cpp: one JSON spec per line on stdin,
one JSON result per line on stdout. Each spec draws the parameters and, per step, the weights of a
linear loss from torch.manual_seed(seed) in the same order as the C++ test, steps torch.optim's
SGD/Adam/AdamW with the spec's foreach/fused choice (optionally under torch.amp.GradScaler on the
spec's device, with an inf loss on one step), and reports every parameter and state tensor as float.hex
strings, so the comparison is bit for bit. Any torch.optim class by name (Adadelta, Adamax, NAdam, ...).

Resuming across the languages: with "save_to", after "save_at" steps the parameters and
`opt.state_dict()` are written with torch.save (for dtl to load); with "load_from", after
"load_at" steps' draws the parameters and optimizer state are replaced by what that file holds
(written by dtl), and the run goes on from there (the steps before draw their weights only)."""
import json
import sys

import torch


def hexes(t):
    return [float(x).hex() for x in t.detach().double().flatten().tolist()]


def run(spec):
    torch.manual_seed(spec["seed"])
    dtypes = {"float32": torch.float32, "float64": torch.float64}
    dev = torch.device(spec["device"])  # drawn on the CPU, moved there
    params = [torch.randn(s, dtype=dtypes[d]).to(dev).requires_grad_() for s, d in zip(spec["shapes"], spec["dtypes"])]
    split = spec["split"]  # params[:split] in group 0, the rest in group 1 (lr2)
    kw = dict(spec["kwargs"])
    impl = spec["impl"]
    tensor_lr = impl == "capturable"  # fused, the learning rate a float32 tensor on the device
    if impl in ("fused", "capturable"):
        kw["fused"] = True
    elif impl != "default":  # default: torch.optim's own choice (foreach on CUDA)
        kw["foreach"] = impl == "foreach"
    if tensor_lr:
        kw["lr"] = torch.tensor(kw["lr"], device=dev)
        if spec["optimizer"] != "SGD":  # SGD has no capturable argument
            kw["capturable"] = True
    groups = [{"params": params[:split]}]
    if split < len(params):
        groups.append({"params": params[split:],
                       "lr": torch.tensor(spec["lr2"], device=dev) if tensor_lr else spec["lr2"]})
    opt = getattr(torch.optim, spec["optimizer"])(groups, **kw)
    scaler = torch.amp.GradScaler(dev.type, init_scale=spec["scale"], growth_interval=2) if spec["scaler"] else None
    for step in range(spec["steps"]):
        if spec.get("load_from") and step < spec["load_at"]:  # dtl took these steps
            for p in params:
                torch.randn(p.shape, dtype=p.dtype)
            continue
        if spec.get("load_from") and step == spec["load_at"]:
            saved = torch.load(spec["load_from"], weights_only=True)
            with torch.no_grad():
                for p, v in zip(params, saved["params"]):
                    p.copy_(v)
            opt.load_state_dict(saved["optimizer"])
        if spec.get("save_to") and step == spec["save_at"]:
            torch.save({"params": [p.detach().clone() for p in params], "optimizer": opt.state_dict()}, spec["save_to"])
        weights = [torch.randn(p.shape, dtype=p.dtype).to(dev) for p in params]
        loss = sum((p * w).sum() for p, w in zip(params, weights))
        if step == spec["inf_step"]:
            loss = loss * float("inf")
        if scaler is not None:
            scaler.scale(loss).backward()
            if spec["unscale_first"]:
                scaler.unscale_(opt)
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
        opt.zero_grad()
        if spec["halve_lr"]:
            for g in opt.param_groups:
                if isinstance(g["lr"], torch.Tensor):
                    g["lr"].fill_(g["lr"] * 0.5)
                else:
                    g["lr"] = g["lr"] * 0.5
    state = []
    for p in params:
        st = opt.state.get(p, {})
        state.append({k: (hexes(v) if isinstance(v, torch.Tensor) else [float(v).hex()])
                      for k, v in st.items() if v is not None})
    return {"params": [hexes(p) for p in params], "state": state,
            "scale": scaler.get_scale() if scaler is not None else None}


for line in sys.stdin:
    if line.strip():
        print(json.dumps(run(json.loads(line))), flush=True)
