#!/usr/bin/env python3
"""Puts bench/gpu_side_by_side.py's markdown into docs/benchmarks.md, between the markers
<!-- gpu-side-by-side:begin --> and <!-- gpu-side-by-side:end --> (scripts/gpu-check.sh --bench).

    write_gpu_table.py TABLE.md docs/benchmarks.md
"""
import sys

BEGIN, END = "<!-- gpu-side-by-side:begin -->", "<!-- gpu-side-by-side:end -->"


def main():
    table, doc = sys.argv[1], sys.argv[2]
    text = open(doc).read()
    if BEGIN not in text or END not in text:
        sys.exit(f"write_gpu_table: {doc} has no {BEGIN} ... {END} section")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    body = open(table).read().strip()
    with open(doc, "w") as f:
        f.write(head + BEGIN + "\n" + body + "\n" + END + tail)
    print(f"write_gpu_table: {doc} updated from {table}")


if __name__ == "__main__":
    main()
