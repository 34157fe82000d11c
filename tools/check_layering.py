#!/usr/bin/env python3
"""The layering docs/architecture.md describes, checked from the headers' #include lines.

- Nothing under include/dtl includes <dtl/trainer.hpp>: the loop sits on top.
- include/dtl/checkpoint/ includes neither the context, the callbacks, init.hpp nor the Trainer:
  checkpoint storage knows bytes and state dicts.
- No include cycle between dtl's headers (an -inl file counts as part of its header).
- trainer.hpp stays the loop: under 700 lines.
Exit status 1 with one line per violation.
"""
import pathlib
import re
import sys

root = pathlib.Path(__file__).resolve().parent.parent / "include"
include = re.compile(r'^\s*#\s*include\s*<(dtl/[^>]+)>', re.M)
headers = {p.relative_to(root).as_posix(): p for p in root.rglob("*.hpp")}
edges = {h: set(include.findall(p.read_text())) for h, p in headers.items()}

def unit(h):  # an -inl file belongs to its header
    return h.replace("-inl.hpp", ".hpp")

errors = []
for h, deps in edges.items():
    if h != "dtl/trainer.hpp" and "dtl/trainer.hpp" in deps:
        errors.append(f"{h} includes dtl/trainer.hpp: nothing below the loop may")
    if h.startswith("dtl/checkpoint/"):
        for d in deps:
            if d in ("dtl/context.hpp", "dtl/callback.hpp", "dtl/callbacks.hpp", "dtl/init.hpp") or \
               d.startswith(("dtl/callbacks/", "dtl/trainer")):
                errors.append(f"{h} includes {d}: checkpoint storage knows bytes and state dicts only")

graph = {}
for h, deps in edges.items():
    graph.setdefault(unit(h), set()).update(unit(d) for d in deps if unit(d) != unit(h))
state = {}
def visit(n, path):
    state[n] = 1
    for d in sorted(graph.get(n, ())):
        if state.get(d) == 1:
            errors.append("include cycle: " + " -> ".join(path[path.index(d):] + [d]) if d in path else d)
        elif d not in state:
            visit(d, path + [d])
    state[n] = 2
for n in sorted(graph):
    if n not in state:
        visit(n, [n])

lines = (root / "dtl/trainer.hpp").read_text().count("\n")
if lines >= 700:
    errors.append(f"dtl/trainer.hpp has {lines} lines: the loop only schedules; move what it does at a boundary to its part")

for e in errors:
    print("check_layering:", e)
if errors:
    sys.exit(1)
print(f"check_layering: {len(headers)} headers; layering holds, no include cycle, trainer.hpp {lines} lines")
