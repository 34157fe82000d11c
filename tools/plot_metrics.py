#!/usr/bin/env python3
"""Plot a dtl run's metrics.jsonl as a self-contained HTML page: one inline-SVG chart per metric,
training and validation curves against steps_completed. Standard library only (no matplotlib),
no external JS, CSS or network, so the page opens anywhere and can be attached to a report.

    python3 tools/plot_metrics.py runs/<run>/metrics.jsonl [-o runs/<run>/metrics.html]

Input: one JSON object per line, as include/dtl/log/reporter.hpp writes it:
    {"type": "training" | "validation", "steps_completed": N, "epoch": E,
     "metrics": {name: value, ...}, "batches": B, "seconds": S}
Non-numeric values (null, which is how NaN is written, strings, lists) are gaps, not errors.
"""

import argparse
import html
import json
import math
import sys
from pathlib import Path

PROG = "plot_metrics"
KINDS = ("training", "validation")
COLORS = {"training": "#1f77b4", "validation": "#e6550d"}
WIDTH, HEIGHT = 760, 320
MARGIN_LEFT, MARGIN_RIGHT, MARGIN_TOP, MARGIN_BOTTOM = 72, 36, 34, 46
# A line has at most this many vertices: more cannot be told apart at this width, and a page
# with hundreds of thousands of SVG points becomes sluggish.
MAX_LINE_POINTS = 2000
# Hover markers per series; beyond this they would cover the line entirely.
MAX_MARKERS = 400
# Series up to this size show their markers; longer ones show them on hover only.
VISIBLE_MARKERS = 60


class InputError(Exception):
    """A problem with the input that the user can fix: reported as one line, exit status 1."""


def fail(message):
    """Exits with one error line on stderr."""
    print(f"{PROG}: error: {message}", file=sys.stderr)
    sys.exit(1)


def as_number(value):
    """The value as a finite float, or None for a gap (null/NaN/inf/non-numeric)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def read_records(path):
    """Per metric name, per kind: {step: (value or None, epoch)}. Later records for the same step
    win: a run resumed from an earlier checkpoint appends the steps it redoes."""
    series = {}
    notes = []
    skipped_types = set()
    try:
        handle = open(path, encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"no such file: {path}")
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror}")
    records = 0
    with handle:
        for lineno, line in enumerate(handle, 1):
            line = line.strip()
            if not line:
                continue
            where = f"{path}:{lineno}"
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                raise InputError(f"{where}: line {lineno} is not valid JSON ({e.msg}, column {e.colno})")
            if not isinstance(rec, dict):
                raise InputError(f"{where}: line {lineno} is not a JSON object")
            kind = rec.get("type")
            if kind not in KINDS:
                skipped_types.add(str(kind))
                continue
            step = rec.get("steps_completed")
            if isinstance(step, bool) or not isinstance(step, (int, float)) or not math.isfinite(step):
                raise InputError(f"{where}: line {lineno} has no numeric \"steps_completed\"")
            metrics = rec.get("metrics")
            if not isinstance(metrics, dict):
                raise InputError(f"{where}: line {lineno} has no \"metrics\" object")
            epoch = rec.get("epoch")
            records += 1
            for name, value in metrics.items():
                series.setdefault(name, {}).setdefault(kind, {})[step] = (as_number(value), epoch)
    if skipped_types:
        notes.append("ignored records of type " + ", ".join(sorted(skipped_types)))
    if records == 0:
        raise InputError(f"{path} has no training or validation records")
    # Metrics that never had a number (e.g. a list-valued metric) have nothing to draw.
    empty = [n for n, kinds in series.items() if all(v is None for pts in kinds.values() for v, _ in pts.values())]
    for name in empty:
        del series[name]
    if empty:
        notes.append("no numeric values for " + ", ".join(empty))
    return series, records, notes


def nice_step(span, target):
    """A 1/2/5 x 10^k step giving about `target` intervals over `span`."""
    raw = span / max(target, 1)
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def ticks(lo, hi, target):
    """Nice tick values within [lo, hi] and their spacing."""
    step = nice_step(hi - lo, target)
    first = math.ceil(lo / step - 1e-9)
    out = []
    k = first
    while k * step <= hi + step * 1e-9:
        out.append(k * step)
        k += 1
    return out, step


def fmt_tick(v, step):
    """A tick label with no more decimals than the spacing needs."""
    if abs(v) < step * 1e-6:
        v = 0.0
    if step >= 1 and abs(v) < 1e15:
        return f"{int(round(v)):,}" if abs(v) >= 10000 else str(int(round(v)))
    if abs(v) >= 1e5 or step < 1e-4:
        return f"{v:.2g}" if v else "0"
    decimals = max(0, -math.floor(math.log10(step)))
    return f"{v:.{decimals}f}"


def fmt_value(v):
    """A value in a hover title or the table: 6 significant digits."""
    return f"{v:.6g}"


def padded_range(values):
    """[min, max] of `values` with 5% headroom, so no point sits on the frame."""
    lo, hi = min(values), max(values)
    if lo == hi:  # a single point or a flat line: centre it
        pad = abs(lo) * 0.1 or 1.0
        return lo - pad, hi + pad
    pad = (hi - lo) * 0.05
    return lo - pad, hi + pad


def decimate(points, limit):
    """At most about `limit` points keeping each bucket's first, min and max: spikes (a loss
    blowing up) stay visible, unlike with plain striding."""
    if len(points) <= limit:
        return points
    buckets = max(1, limit // 3)
    size = len(points) / buckets
    out = []
    for b in range(buckets):
        chunk = points[int(b * size):int((b + 1) * size)]
        if not chunk:
            continue
        keep = {0, min(range(len(chunk)), key=lambda i: chunk[i][1]), max(range(len(chunk)), key=lambda i: chunk[i][1])}
        out.extend(chunk[i] for i in sorted(keep))
    if out[-1] is not points[-1]:
        out.append(points[-1])
    return out


def segments(points):
    """Runs of consecutive numeric points: a gap (NaN/null) breaks the line."""
    run = []
    for p in points:
        if p[1] is None:
            if run:
                yield run
            run = []
        else:
            run.append(p)
    if run:
        yield run


def chart(name, kinds, index):
    """One metric's <svg>."""
    all_points = {k: sorted((s, v, e) for s, (v, e) in kinds[k].items()) for k in KINDS if k in kinds}
    numeric = [(s, v) for pts in all_points.values() for s, v, _ in pts if v is not None]
    steps = [s for s, _ in numeric]
    x_lo, x_hi = min(steps), max(steps)
    if x_lo == x_hi:  # one step only: centre it
        x_lo, x_hi = padded_range(steps)
    elif 0 <= x_lo <= x_hi - x_lo:
        x_lo = 0  # a run seen from its start; a late window of a long run keeps its own origin
    y_lo, y_hi = padded_range([v for _, v in numeric])
    plot_w = WIDTH - MARGIN_LEFT - MARGIN_RIGHT
    plot_h = HEIGHT - MARGIN_TOP - MARGIN_BOTTOM

    def sx(x):
        return MARGIN_LEFT + (x - x_lo) / (x_hi - x_lo) * plot_w

    def sy(y):
        return MARGIN_TOP + (1 - (y - y_lo) / (y_hi - y_lo)) * plot_h

    esc = html.escape
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" id="metric-{index}" class="chart" width="{WIDTH}" '
           f'height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{esc(name)}" font-family="sans-serif">',
           f'<title>{esc(name)}</title>',
           f'<text class="name" font-size="15" font-weight="bold" x="{MARGIN_LEFT}" y="20">{esc(name)}</text>']
    # Grid and ticks.
    xt, xstep = ticks(x_lo, x_hi, 8)
    yt, ystep = ticks(y_lo, y_hi, 5)
    x_axis_y = MARGIN_TOP + plot_h
    for x in xt:
        px = sx(x)
        out.append(f'<line class="grid" stroke="#e8e8e8" x1="{px:.1f}" y1="{MARGIN_TOP}" x2="{px:.1f}" y2="{x_axis_y}"/>')
        out.append(f'<text class="tick" font-size="12" fill="#444" x="{px:.1f}" y="{x_axis_y + 16}" text-anchor="middle">{fmt_tick(x, xstep)}</text>')
    for y in yt:
        py = sy(y)
        out.append(f'<line class="grid" stroke="#e8e8e8" x1="{MARGIN_LEFT}" y1="{py:.1f}" x2="{WIDTH - MARGIN_RIGHT}" y2="{py:.1f}"/>')
        out.append(f'<text class="tick" font-size="12" fill="#444" x="{MARGIN_LEFT - 6}" y="{py + 4:.1f}" text-anchor="end">{fmt_tick(y, ystep)}</text>')
    out.append(f'<rect class="frame" fill="none" stroke="#999" x="{MARGIN_LEFT}" y="{MARGIN_TOP}" width="{plot_w}" height="{plot_h}"/>')
    out.append(f'<text class="label" font-size="12" fill="#444" x="{MARGIN_LEFT + plot_w / 2:.1f}" y="{HEIGHT - 8}" '
               f'text-anchor="middle">steps completed (batches)</text>')
    cy = MARGIN_TOP + plot_h / 2
    out.append(f'<text class="label" font-size="12" fill="#444" x="14" y="{cy:.1f}" text-anchor="middle" '
               f'transform="rotate(-90 14 {cy:.1f})">{esc(name)}</text>')

    # Curves, then markers with hover titles on top.
    legend = []
    for kind, points in all_points.items():
        color = COLORS[kind]
        numeric_points = [p for p in points if p[1] is not None]
        gaps = len(points) - len(numeric_points)
        legend.append((kind, color, len(numeric_points), gaps))
        out.append(f'<g class="series {kind}">')
        for run in segments(points):
            run = decimate(run, MAX_LINE_POINTS)
            if len(run) > 1:
                coords = " ".join(f"{sx(s):.1f},{sy(v):.1f}" for s, v, _ in run)
                out.append(f'<polyline points="{coords}" fill="none" stroke="{color}" stroke-width="1.5"/>')
        stride = max(1, math.ceil(len(numeric_points) / MAX_MARKERS))
        markers = numeric_points[::stride]
        if numeric_points and markers[-1] is not numeric_points[-1]:
            markers.append(numeric_points[-1])
        shown = "shown" if len(numeric_points) <= VISIBLE_MARKERS else "hover"
        for s, v, e in markers:
            epoch = f", epoch {e}" if e is not None else ""
            opacity = "" if shown == "shown" else ' fill-opacity="0" pointer-events="all"'
            out.append(f'<circle class="{shown}" cx="{sx(s):.1f}" cy="{sy(v):.1f}" r="3" fill="{color}"{opacity}>'
                       f'<title>{kind} step {s}{epoch}: {esc(name)} = {fmt_value(v)}</title></circle>')
        out.append('</g>')

    # Legend, top right: the swatch at the right edge and the text right-aligned before it, since
    # SVG cannot measure text to place anything after it.
    lx = WIDTH - MARGIN_RIGHT
    for i, (kind, color, n, gaps) in enumerate(legend):
        text = f"{kind} ({n} point{'s' if n != 1 else ''}" + (f", {gaps} missing" if gaps else "") + ")"
        y = 14 + 14 * i
        out.append(f'<g class="legend"><line x1="{lx - 20}" y1="{y - 4}" x2="{lx}" y2="{y - 4}" '
                   f'stroke="{color}" stroke-width="3"/><text font-size="12" fill="#444" x="{lx - 26}" y="{y}" '
                   f'text-anchor="end">{esc(text)}</text></g>')
    out.append('</svg>')
    return "\n".join(out)


def summary_row(index, name, kinds):
    """The table row of one metric: last, min and max per kind, each with its step."""
    cells = []
    for kind in KINDS:
        pts = sorted((s, v) for s, (v, _) in kinds.get(kind, {}).items() if v is not None)
        if not pts:
            cells.append("<td></td><td></td><td></td>")
            continue
        last_s, last_v = pts[-1]
        lo = min(pts, key=lambda p: p[1])
        hi = max(pts, key=lambda p: p[1])
        cells.append(f"<td>{fmt_value(last_v)} @ {last_s}</td><td>{fmt_value(lo[1])} @ {lo[0]}</td>"
                     f"<td>{fmt_value(hi[1])} @ {hi[0]}</td>")
    return f'<tr><td><a href="#metric-{index}">{html.escape(name)}</a></td>{"".join(cells)}</tr>'


STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; }
h1 { font-size: 18px; margin: 0 0 4px; }
.note { color: #666; margin: 0 0 12px; }
table { border-collapse: collapse; margin: 8px 0 20px; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: right; }
th:first-child, td:first-child { text-align: left; }
svg.chart { display: block; margin: 0 0 18px; background: #fff; }
svg circle.hover:hover, svg circle.shown:hover { fill-opacity: 1; stroke: #000; }
"""


def render(series, source, records, notes):
    """The whole page: a summary table, then one chart per metric in order of first appearance."""
    names = list(series)
    esc = html.escape
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>{esc(str(source))} — metrics</title>", f"<style>{STYLE}</style></head><body>",
             f"<h1>{esc(str(source))}</h1>",
             f'<p class="note">{records} records, {len(names)} metric{"s" if len(names) != 1 else ""}. '
             "Hover a point for its value.</p>"]
    for note in notes:
        parts.append(f'<p class="note">Note: {esc(note)}.</p>')
    parts.append("<table><tr><th>metric</th><th>training last</th><th>min</th><th>max</th>"
                 "<th>validation last</th><th>min</th><th>max</th></tr>")
    parts.extend(summary_row(i, n, series[n]) for i, n in enumerate(names))
    parts.append("</table>")
    parts.extend(chart(n, series[n], i) for i, n in enumerate(names))
    parts.append("</body></html>\n")
    return "\n".join(parts)


def main(argv=None):
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("input", help="a run's metrics.jsonl")
    parser.add_argument("-o", "--output", help="the HTML file to write (default: the input with .html)")
    args = parser.parse_args(argv)
    source = Path(args.input)
    output = Path(args.output) if args.output else source.with_suffix(".html")
    try:
        series, records, notes = read_records(source)
    except InputError as e:
        fail(str(e))
    if not series:
        fail(f"{source} has no numeric metric values")
    page = render(series, source, records, notes)
    try:
        output.write_text(page, encoding="utf-8")
    except OSError as e:
        fail(f"cannot write {output}: {e.strerror}")
    print(f"{PROG}: wrote {output} ({len(series)} metric{'s' if len(series) != 1 else ''}, {records} records)")


if __name__ == "__main__":
    main()
