#!/usr/bin/env python3
"""Plot one or several dtl runs' metrics.jsonl as a self-contained HTML page: one inline-SVG chart
per metric, training and validation curves against steps_completed, several runs overlaid.
Standard library only (no matplotlib), no script, external CSS or network, so the page opens
anywhere and can be attached to a report.

    python3 tools/plot_metrics.py runs/<run>                  # writes runs/<run>/metrics.html
    python3 tools/plot_metrics.py runs/<run>/metrics.jsonl [-o runs/<run>/metrics.html]
    python3 tools/plot_metrics.py runs/lr-0.1 runs/lr-0.01 -o compare.html

Each input is a metrics.jsonl file or a run directory holding one. Input: one JSON object per
line, as include/dtl/log/reporter.hpp writes it:
    {"type": "training" | "validation", "steps_completed": N, "epoch": E,
     "metrics": {name: value, ...}, "batches": B, "seconds": S}
Non-numeric values (null, which is how NaN is written, strings, lists) are gaps, not errors.
A validation metric named validation_<m> (or val_<m>), as Determined trials report it, is drawn
on the chart of the training metric <m> when training reports <m> and validation does not.
"""

import argparse
import html
import json
import math
import sys
from pathlib import Path

PROG = "plot_metrics"
KINDS = ("training", "validation")
# One run: a colour per kind. Several runs: a colour per run, and the kind is the line style.
COLORS = {"training": "#1f77b4", "validation": "#e6550d"}
RUN_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
              "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22")
DASH = {"training": "", "validation": "6 4"}
VALIDATION_PREFIXES = ("validation_", "val_")
# The page is laid out so that every chart of a typical run (up to about 12 metrics) is on screen
# at once in this viewport; the charts' own coordinates are drawn for it, so that text is at its
# designed size there, and scale with the window elsewhere.
VIEWPORT_W, VIEWPORT_H = 1200, 900
PAGE_PAD_X, PAGE_PAD_Y, GRID_GAP = 16, 8, 10
HEADER_H = 56          # about what the title and the line under it take, more with a run legend
MIN_CHART_H = 180      # below this a chart is unreadable: the page scrolls instead
MARGIN_LEFT, MARGIN_RIGHT, MARGIN_BOTTOM = 72, 24, 40
MARKER_R = 3
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


class Run:
    """One input: its name on the page, its file, and what read_records made of it."""

    def __init__(self, source, series, records, notes):
        self.source = source
        self.series = series     # {metric: {kind: {step: (value or None, epoch)}}}
        self.records = records
        self.notes = notes
        self.name = str(source)
        self.color = None


def resolve_input(arg):
    """The metrics.jsonl that an argument names: the file itself, or the one in a run directory."""
    path = Path(arg)
    if path.is_dir():
        path = path / "metrics.jsonl"
        if not path.is_file():
            raise InputError(f"no metrics.jsonl in directory {arg}")
    elif not path.exists():
        raise InputError(f"no such file: {arg}")
    return path


def run_names(paths):
    """A short name per run: its directory's name (the file's stem for a file not called
    metrics.jsonl), with as many parent directories as it takes to tell different runs apart;
    the same file given twice is told apart by a number."""
    def parts(path):
        tail = () if path.name == "metrics.jsonl" else (path.stem,)
        return [p for p in path.parent.parts if p != path.anchor] + list(tail) or [str(path)]

    resolved = [p.resolve() for p in paths]
    unique = list(dict.fromkeys(resolved))
    all_parts = [parts(p) for p in unique]
    depth = [1] * len(unique)
    while True:
        names = ["/".join(ps[-d:]) for ps, d in zip(all_parts, depth)]
        grew = False
        for i, name in enumerate(names):
            if names.count(name) > 1 and depth[i] < len(all_parts[i]):
                depth[i] += 1
                grew = True
        if not grew:
            break
    name_of = dict(zip(unique, names))
    out, seen = [], {}
    for path in resolved:
        seen[path] = seen.get(path, 0) + 1
        out.append(name_of[path] if resolved.count(path) == 1 else f"{name_of[path]} #{seen[path]}")
    return out


def merge_validation_names(runs):
    """Draws validation_<m> (validation) on <m>'s chart when training reports <m> and validation
    does not, in every run: Determined trials report `loss` in training and `validation_loss` in
    validation. Returns {chart: {kind: metric name in the file}} for the renamed ones."""
    trained = {n for r in runs for n, kinds in r.series.items() if "training" in kinds}
    validated = {n for r in runs for n, kinds in r.series.items() if "validation" in kinds}
    renames, taken = {}, set()
    for prefix in VALIDATION_PREFIXES:
        for name in sorted(validated):
            base = name[len(prefix):]
            if name.startswith(prefix) and base in trained and base not in validated and base not in taken:
                renames[name] = base
                taken.add(base)
    for run in runs:
        merged = {}
        for name, kinds in run.series.items():
            base = renames.get(name)
            if base and "validation" in kinds:
                merged.setdefault(base, {})["validation"] = kinds["validation"]
                rest = {k: v for k, v in kinds.items() if k != "validation"}
                if rest:
                    merged.setdefault(name, {}).update(rest)
            else:
                merged.setdefault(name, {}).update(kinds)
        run.series = merged
    return {base: {"validation": name} for name, base in renames.items()}


def grid_shape(n):
    """Columns and rows of the chart grid for n charts."""
    cols = 1 if n <= 2 else 2 if n <= 6 else 3 if n <= 12 else 4
    return cols, math.ceil(n / cols)


def chart_size(n, header_h):
    """The size of each chart in the target viewport, in CSS pixels."""
    cols, rows = grid_shape(n)
    width = (VIEWPORT_W - 2 * PAGE_PAD_X - (cols - 1) * GRID_GAP) / cols
    height = (VIEWPORT_H - header_h - 2 * PAGE_PAD_Y - GRID_GAP - (rows - 1) * GRID_GAP) / rows
    height = max(MIN_CHART_H, min(height, width * 0.6))
    return int(width), int(height)


def text_width(text, size, bold=False):
    """About how wide sans-serif text is drawn (SVG cannot measure it for us); errs wide."""
    return len(text) * size * (0.72 if bold else 0.62)


def shorten(text, limit=28):
    return text if len(text) <= limit else text[:limit - 1] + "…"


def chart(name, entries, index, size, multi, labels):
    """One metric's <svg>. entries: (run, kind, points) with points [(step, value or None, epoch)]
    sorted by step; labels: {kind: name in the file} where it is not `name`."""
    width, height = size
    esc = html.escape
    numeric = [(s, v) for _, _, pts in entries for s, v, _ in pts if v is not None]

    # Legend: one run, a line per kind; several runs, a line per run with a swatch per kind.
    legend = []  # (text, [(kind, color)], hover title or None)
    if multi:
        for run in dict.fromkeys(r for r, _, _ in entries):
            kinds = [(k, run.color) for r, k, _ in entries if r is run]
            counts = []
            for r, k, pts in entries:
                if r is run:
                    n = sum(1 for p in pts if p[1] is not None)
                    counts.append(f"{k} {n} point{'s' if n != 1 else ''}"
                                  + (f", {len(pts) - n} missing" if len(pts) > n else ""))
            legend.append((shorten(run.name), kinds, f"{run.name}: " + "; ".join(counts)))
    else:
        for run, kind, pts in entries:
            n = sum(1 for p in pts if p[1] is not None)
            gaps = len(pts) - n
            text = f"{kind} ({n} point{'s' if n != 1 else ''}" + (f", {gaps} missing" if gaps else "") + ")"
            legend.append((text, [(kind, COLORS[kind])], None))
    swatches_w = 2 * 24 if multi else 24
    heading_w = MARGIN_LEFT + text_width(name, 15, bold=True)
    if labels:
        heading_w += text_width(" + " + ", ".join(labels.values()), 12)
    first_w = text_width(legend[0][0], 12) + swatches_w + 6 if legend else 0
    # A legend line beside a long title would run into it: start the legend under the title.
    legend_y0 = 36 if heading_w + 12 > width - MARGIN_RIGHT - first_w else 14
    margin_top = max(34, legend_y0 + 14 * (len(legend) - 1) + 8)
    plot_w = width - MARGIN_LEFT - MARGIN_RIGHT
    plot_h = height - margin_top - MARGIN_BOTTOM

    # Axes: the data's range with headroom on every side, so that no point (the last one
    # included) sits on the frame or is cut by it.
    steps = [s for s, _ in numeric]
    x_lo, x_hi = min(steps), max(steps)
    if x_lo == x_hi:  # one step only: centre it
        x_lo, x_hi = padded_range(steps)
    else:
        span = x_hi - x_lo
        if 0 <= x_lo <= span:
            x_lo = 0  # a run seen from its start; a late window of a long run keeps its own origin
        else:
            x_lo -= span * max(0.02, (MARKER_R + 4) / plot_w)
        x_hi += (x_hi - x_lo) * max(0.02, (MARKER_R + 4) / plot_w)
    values = [v for _, v in numeric]
    y_lo, y_hi = padded_range(values)
    if min(values) != max(values):
        pad = (max(values) - min(values)) * max(0.05, (MARKER_R + 4) / plot_h)
        y_lo, y_hi = min(values) - pad, max(values) + pad

    def sx(x):
        return MARGIN_LEFT + (x - x_lo) / (x_hi - x_lo) * plot_w

    def sy(y):
        return margin_top + (1 - (y - y_lo) / (y_hi - y_lo)) * plot_h

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" id="metric-{index}" class="chart" width="{width}" '
           f'height="{height}" viewBox="0 0 {width} {height}" preserveAspectRatio="xMidYMin meet" role="img" '
           f'aria-label="{esc(name)}" font-family="sans-serif">',
           f'<title>{esc(name)}</title>']
    extra = ""
    if labels:
        extra = (f'<tspan font-size="12" font-weight="normal" fill="#666"> + '
                 f'{esc(", ".join(f"{v} ({k})" for k, v in labels.items()))}</tspan>')
    out.append(f'<text class="name" font-size="15" font-weight="bold" x="{MARGIN_LEFT}" y="20">{esc(name)}{extra}</text>')
    # Grid and ticks.
    xt, xstep = ticks(x_lo, x_hi, max(3, int(plot_w / 90)))
    yt, ystep = ticks(y_lo, y_hi, max(4, int(plot_h / 40)))
    x_axis_y = margin_top + plot_h
    for x in xt:
        px = sx(x)
        out.append(f'<line class="grid" stroke="#e8e8e8" x1="{px:.1f}" y1="{margin_top}" x2="{px:.1f}" y2="{x_axis_y}"/>')
        out.append(f'<text class="tick" font-size="12" fill="#444" x="{px:.1f}" y="{x_axis_y + 16}" text-anchor="middle">{fmt_tick(x, xstep)}</text>')
    for y in yt:
        py = sy(y)
        out.append(f'<line class="grid" stroke="#e8e8e8" x1="{MARGIN_LEFT}" y1="{py:.1f}" x2="{width - MARGIN_RIGHT}" y2="{py:.1f}"/>')
        out.append(f'<text class="tick" font-size="12" fill="#444" x="{MARGIN_LEFT - 6}" y="{py + 4:.1f}" text-anchor="end">{fmt_tick(y, ystep)}</text>')
    out.append(f'<rect class="frame" fill="none" stroke="#999" x="{MARGIN_LEFT}" y="{margin_top}" width="{plot_w}" height="{plot_h}"/>')
    out.append(f'<text class="label" font-size="12" fill="#444" x="{MARGIN_LEFT + plot_w / 2:.1f}" y="{height - 8}" '
               f'text-anchor="middle">steps completed (batches)</text>')
    cy = margin_top + plot_h / 2
    out.append(f'<text class="label" font-size="12" fill="#444" x="14" y="{cy:.1f}" text-anchor="middle" '
               f'transform="rotate(-90 14 {cy:.1f})">{esc(name)}</text>')

    # Curves, then markers with hover titles on top. Validation: dashed, hollow markers.
    for run, kind, points in entries:
        color = run.color if multi else COLORS[kind]
        label = labels.get(kind, name)
        numeric_points = [p for p in points if p[1] is not None]
        run_attr = f' data-run="{esc(run.name)}"' if multi else ""
        out.append(f'<g class="series {kind}"{run_attr}>')
        dash = f' stroke-dasharray="{DASH[kind]}"' if DASH[kind] else ""
        for seg in segments(points):
            seg = decimate(seg, MAX_LINE_POINTS)
            if len(seg) > 1:
                coords = " ".join(f"{sx(s):.1f},{sy(v):.1f}" for s, v, _ in seg)
                out.append(f'<polyline points="{coords}" fill="none" stroke="{color}" stroke-width="1.5"{dash}/>')
        stride = max(1, math.ceil(len(numeric_points) / MAX_MARKERS))
        markers = numeric_points[::stride]
        if numeric_points and markers[-1] is not numeric_points[-1]:
            markers.append(numeric_points[-1])
        shown = "shown" if len(numeric_points) <= VISIBLE_MARKERS else "hover"
        if shown == "hover":
            paint = f'fill="{color}" fill-opacity="0" pointer-events="all"'
        elif kind == "validation":
            paint = f'fill="#fff" stroke="{color}" stroke-width="1.5"'
        else:
            paint = f'fill="{color}"'
        who = f"{esc(run.name)}: " if multi else ""
        for s, v, e in markers:
            epoch = f", epoch {e}" if e is not None else ""
            out.append(f'<circle class="{shown}" cx="{sx(s):.1f}" cy="{sy(v):.1f}" r="{MARKER_R}" {paint}>'
                       f'<title>{who}{kind} step {s}{epoch}: {esc(label)} = {fmt_value(v)}</title></circle>')
        out.append('</g>')

    # Legend, top right: the swatches at the right edge and the text right-aligned before them,
    # since SVG cannot measure text to place anything after it.
    lx = width - MARGIN_RIGHT
    for i, (text, kinds, title) in enumerate(legend):
        y = legend_y0 + 14 * i
        parts = ['<g class="legend">']
        if title:
            parts.append(f"<title>{esc(title)}</title>")
        for kind, color in kinds:
            right = lx - (24 if multi and kind == "training" else 0)
            dash = f' stroke-dasharray="{DASH[kind]}"' if DASH[kind] else ""
            parts.append(f'<line x1="{right - 20}" y1="{y - 4}" x2="{right}" y2="{y - 4}" stroke="{color}" '
                         f'stroke-width="3"{dash}/>')
        parts.append(f'<text font-size="12" fill="#444" x="{lx - swatches_w - 6}" y="{y}" '
                     f'text-anchor="end">{esc(text)}</text></g>')
        out.append("".join(parts))
    out.append('</svg>')
    return "\n".join(out)


def summary_cells(kinds):
    """Last, min and max per kind, each with its step."""
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
    return "".join(cells)


STYLE = """
html, body { margin: 0; }
body { font: 14px/1.4 system-ui, sans-serif; color: #222; }
.screen { box-sizing: border-box; min-height: 100vh; padding: %(py)dpx %(px)dpx; display: flex;
          flex-direction: column; gap: %(gap)dpx; }
header { flex: none; }
h1 { font-size: 17px; margin: 0; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
header p { margin: 2px 0 0; }
.note { color: #666; margin: 0; }
.runs span.run { margin-right: 14px; white-space: nowrap; }
.swatch { display: inline-block; width: 22px; margin: 0 4px 4px 0; border-top: 3px solid; vertical-align: middle; }
.swatch.validation { border-top-style: dashed; }
.charts { flex: 1 1 auto; display: grid; gap: %(gap)dpx; grid-template-columns: repeat(%(cols)d, minmax(0, 1fr));
          grid-template-rows: repeat(%(rows)d, minmax(%(min_h)dpx, 1fr)); }
svg.chart { display: block; width: 100%%; height: 100%%; min-width: 0; min-height: 0; background: #fff; }
svg circle.hover:hover, svg circle.shown:hover { fill-opacity: 1; stroke: #000; }
.details { padding: 4px %(px)dpx 20px; }
table { border-collapse: collapse; margin: 8px 0 12px; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: right; }
th.l, td.l { text-align: left; }
"""


def render(runs, charts, relabels):
    """The whole page: a screenful of charts, one per metric in order of first appearance, with
    several runs overlaid; then the notes and a table of each metric's last, min and max."""
    esc = html.escape
    multi = len(runs) > 1
    records = sum(r.records for r in runs)
    n = len(charts)
    cols, rows = grid_shape(n)
    size = chart_size(n, HEADER_H + (22 if multi else 0))
    style = STYLE % {"px": PAGE_PAD_X, "py": PAGE_PAD_Y, "gap": GRID_GAP, "cols": cols, "rows": rows,
                     "min_h": MIN_CHART_H}
    title = str(runs[0].source) if not multi else f"{len(runs)} runs: " + ", ".join(r.name for r in runs)
    notes = [(f"{r.name}: " if multi else "") + note for r in runs for note in r.notes]
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f"<title>{esc(title)} — metrics</title>", f"<style>{style}</style></head><body>",
             '<div class="screen"><header>', f'<h1 title="{esc(title)}">{esc(title)}</h1>']
    if multi:
        parts.append('<p class="runs">' + "".join(
            f'<span class="run" title="{esc(str(r.source))}"><span class="swatch" style="color: {r.color}"></span>'
            f'{esc(r.name)}</span>' for r in runs)
            + '<span class="run"><span class="swatch"></span>training</span>'
              '<span class="run"><span class="swatch validation"></span>validation</span></p>')
    parts.append(f'<p class="note">{records} records, {n} metric{"s" if n != 1 else ""}'
                 + (f", {len(runs)} runs" if multi else "")
                 + ". Hover a point for its value; the table of values"
                 + (f" and {len(notes)} note{'s' if len(notes) != 1 else ''}" if notes else "")
                 + " below the charts.</p></header>")
    parts.append('<main class="charts">')
    for i, name in enumerate(charts):
        entries = []
        for run in runs:
            for kind in KINDS:
                pts = run.series.get(name, {}).get(kind)
                if pts:
                    entries.append((run, kind, sorted((s, v, e) for s, (v, e) in pts.items())))
        parts.append(chart(name, entries, i, size, multi, relabels.get(name, {})))
    parts.append('</main></div><div class="details">')
    for note in notes:
        parts.append(f'<p class="note">Note: {esc(note)}.</p>')
    run_th = '<th class="l">run</th>' if multi else ""
    parts.append(f'<table><tr><th class="l">metric</th>{run_th}<th>training last</th><th>min</th><th>max</th>'
                 "<th>validation last</th><th>min</th><th>max</th></tr>")
    for i, name in enumerate(charts):
        shown = name + "".join(f" + {v} ({k})" for k, v in relabels.get(name, {}).items())
        for run in runs:
            if name not in run.series:
                continue
            run_td = f'<td class="l">{esc(run.name)}</td>' if multi else ""
            parts.append(f'<tr><td class="l"><a href="#metric-{i}">{esc(shown)}</a></td>{run_td}'
                         f"{summary_cells(run.series[name])}</tr>")
    parts.append("</table></div>")
    parts.append("</body></html>\n")
    return "\n".join(parts)


def main(argv=None):
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("inputs", nargs="+", metavar="input",
                        help="a run's metrics.jsonl or its run directory; several are overlaid")
    parser.add_argument("-o", "--output", help="the HTML file to write (default with one input: the "
                        "input's .jsonl file with .html, e.g. runs/x/metrics.html; required with several)")
    args = parser.parse_args(argv)
    if len(args.inputs) > 1 and not args.output:
        fail(f"{len(args.inputs)} runs to compare: say where the page goes with -o (e.g. -o compare.html)")
    runs = []
    try:
        sources = [resolve_input(a) for a in args.inputs]
        for source in sources:
            series, records, notes = read_records(source)
            if not series:
                raise InputError(f"{source} has no numeric metric values")
            runs.append(Run(source, series, records, notes))
    except InputError as e:
        fail(str(e))
    output = Path(args.output) if args.output else sources[0].with_suffix(".html")
    if len(runs) > 1:
        for run, name in zip(runs, run_names(sources)):
            run.name = name
    for i, run in enumerate(runs):
        run.color = RUN_COLORS[i % len(RUN_COLORS)]
    relabels = merge_validation_names(runs)
    charts = list(dict.fromkeys(n for r in runs for n in r.series))
    page = render(runs, charts, relabels)
    try:
        output.write_text(page, encoding="utf-8")
    except OSError as e:
        fail(f"cannot write {output}: {e.strerror}")
    records = sum(r.records for r in runs)
    what = f"{len(runs)} runs, " if len(runs) > 1 else ""
    print(f"{PROG}: wrote {output} ({what}{len(charts)} metric{'s' if len(charts) != 1 else ''}, {records} records)")


if __name__ == "__main__":
    main()
