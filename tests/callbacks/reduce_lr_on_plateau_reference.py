#!/usr/bin/env python3
"""torch.optim.lr_scheduler.ReduceLROnPlateau run on a case the C++ test describes.

Used by tests/callbacks/callbacks_test.cpp to check dtl::lr::ReduceLROnPlateau against torch's
own implementation (run it with /usr/bin/python3, Debian's python3-torch):

    reduce_lr_on_plateau_reference.py CASE_JSON

CASE_JSON: {"lrs": [0.1, ...] (one per param group), "metrics": [...],
            "options": {keyword arguments of ReduceLROnPlateau}}
Prints one JSON object: {"lrs": [[lr of each group after step 1], ...], "state": state_dict()}
with non-finite floats written as the strings "inf", "-inf", "nan" (JSON has none). Exit
status 3 when torch cannot be imported, so the caller can tell "skip" from "fail".
"""

import json
import math
import sys

try:
    import torch
except ImportError as e:  # the caller skips, visibly
    print(f"cannot import torch: {e}", file=sys.stderr)
    sys.exit(3)


def finite(value):
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, list):
        return [finite(v) for v in value]
    return value


def main():
    case = json.loads(sys.argv[1])
    groups = [{"params": [torch.zeros(1, requires_grad=True)], "lr": lr} for lr in case["lrs"]]
    optimizer = torch.optim.SGD(groups, lr=case["lrs"][0])
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, **case.get("options", {}))
    lrs = []
    for metric in case["metrics"]:
        scheduler.step(metric)
        lrs.append([group["lr"] for group in optimizer.param_groups])
    state = {key: finite(value) for key, value in scheduler.state_dict().items()}
    # repr-exact floats: json writes the shortest string that reads back to the same double.
    print(json.dumps({"lrs": lrs, "state": state}))


if __name__ == "__main__":
    main()
