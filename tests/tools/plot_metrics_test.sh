#!/usr/bin/env bash
# Tests for tools/plot_metrics.py: a hand-written metrics.jsonl (gaps, a single point, a
# validation-only metric, a metric on both curves) becomes one well-formed <svg> per metric;
# Determined's `loss` (training) and `validation_loss` (validation) share one chart; a run directory
# is an input; several runs are overlaid, named in a legend, each in its colour; the last point of
# every curve lies inside its plot area; the charts are laid out for one 1200x900 screen; a long
# run is decimated; a missing file, a directory without metrics.jsonl, an empty file and a
# malformed line fail with one line naming them.
# With a headless Chromium on PATH (chromium, chromium-browser or chromium-headless-shell;
# PLOT_METRICS_BROWSER=/path/to/it picks one, PLOT_METRICS_BROWSER=skip skips), the pages are also
# opened at 1200x900 and checked as a person would look at them: every chart on screen, no
# sideways scrolling, the last points inside the plot areas, each run's colour drawn in each chart.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tool="$root/tools/plot_metrics.py"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

# Helpers for the checks below: a page's charts, their series and legends, and where the last
# point of each curve lies relative to its plot area (the frame).
cat >"$tmp/svgcheck.py" <<'EOF'
import re, xml.etree.ElementTree as ET
NS = "{http://www.w3.org/2000/svg}"

def page(path):
    return open(path, encoding="utf-8").read()

def charts(path):
    """{title: <svg> element}, in page order."""
    out = {}
    for s in re.findall(r"<svg\b.*?</svg>", page(path), re.S):
        svg = ET.fromstring(s)
        out[svg.find(NS + "title").text] = svg
    return out

def series(svg):
    return [g for g in svg.iter(NS + "g") if g.get("class", "").startswith("series")]

def legend(svg):
    return [" ".join(t.text for t in g.iter(NS + "text")) for g in svg.iter(NS + "g") if g.get("class") == "legend"]

def frame(svg):
    r = next(r for r in svg.iter(NS + "rect") if r.get("class") == "frame")
    x, y = float(r.get("x")), float(r.get("y"))
    return x, y, x + float(r.get("width")), y + float(r.get("height"))

def check_last_points(path):
    """The last point of every curve, its whole marker included, lies inside the plot area: not
    on the frame, not cut by it, and the frame inside the drawing."""
    for name, svg in charts(path).items():
        x0, y0, x1, y1 = frame(svg)
        _, _, vw, vh = map(float, svg.get("viewBox").split())
        assert 0 < x0 < x1 <= vw and 0 < y0 < y1 <= vh, (path, name, (x0, y0, x1, y1), (vw, vh))
        for g in series(svg):
            if not g.findall(NS + "circle"):
                continue  # a curve with no number at all (only in its legend)
            last = max(g.findall(NS + "circle"), key=lambda c: float(c.get("cx")))
            cx, cy, r = (float(last.get(k)) for k in ("cx", "cy", "r"))
            assert x0 + r <= cx <= x1 - r and y0 + r <= cy <= y1 - r, \
                f"{path}: {name} {g.get('class')}: last point ({cx}, {cy}) r={r} outside ({x0}, {y0})-({x1}, {y1})"
            for line in g.findall(NS + "polyline"):
                px, py = map(float, line.get("points").split()[-1].split(","))
                assert x0 <= px <= x1 and y0 <= py <= y1, (path, name, px, py)
EOF
export PYTHONPATH="$tmp${PYTHONPATH:+:$PYTHONPATH}"

# Shaped as include/dtl/log/reporter.hpp writes it; NaN is written as null.
cat >"$tmp/metrics.jsonl" <<'EOF'
{"type":"training","steps_completed":50,"epoch":0,"metrics":{"loss":0.91,"lr":0.1},"batches":50,"seconds":0.4}
{"type":"training","steps_completed":100,"epoch":0,"metrics":{"loss":null,"lr":0.1},"batches":50,"seconds":0.4}
{"type":"validation","steps_completed":100,"epoch":0,"metrics":{"loss":0.8,"accuracy":0.71,"f1<&>":0.5},"batches":10,"seconds":0.1}

{"type":"training","steps_completed":150,"epoch":1,"metrics":{"loss":0.52,"lr":0.05},"batches":50,"seconds":0.4}
{"type":"training","steps_completed":200,"epoch":1,"metrics":{"loss":0.43,"lr":0.05},"batches":50,"seconds":0.4}
{"type":"validation","steps_completed":200,"epoch":1,"metrics":{"loss":0.61,"accuracy":0.83},"batches":10,"seconds":0.1}
EOF

python3 "$tool" "$tmp/metrics.jsonl" -o "$tmp/out.html" >"$tmp/stdout" || fail "tool exited $?"
test -s "$tmp/out.html" || fail "no output"
grep -q "4 metrics" "$tmp/stdout" || fail "stdout: $(cat "$tmp/stdout")"

# Structure: html.parser takes the page; every <svg> is well-formed XML; one per metric, titled.
python3 - "$tmp/out.html" <<'EOF'
import html.parser, sys
from svgcheck import NS, charts, legend, page, series, check_last_points
text = page(sys.argv[1])
html.parser.HTMLParser().feed(text)
assert "<script" not in text and "http://" not in text.replace('xmlns="http://www.w3.org/2000/svg"', ""), \
    "the page must be self-contained"
by_name = charts(sys.argv[1])
for svg in by_name.values():
    texts = [t.text for t in svg.iter(NS + "text")]
    assert "steps completed (batches)" in texts, texts
    assert sum(1 for t in texts if t and t[0].isdigit()) >= 4, f"too few tick labels: {texts}"
assert list(by_name) == ["loss", "lr", "accuracy", "f1<&>"], list(by_name)
# loss: both curves, a legend entry each, the null is a gap (counted, not drawn as a point).
loss = by_name["loss"]
groups = {g.get("class"): g for g in series(loss)}
assert set(groups) == {"series training", "series validation"}, groups
assert len(groups["series training"].findall(NS + "circle")) == 3
assert legend(loss) == ["training (3 points, 1 missing)", "validation (2 points)"], legend(loss)
hover = [c.find(NS + "title").text for c in loss.iter(NS + "circle")]
assert "validation step 200, epoch 1: loss = 0.61" in hover, hover
# Validation is told apart from training by the line too, not only by colour.
dashes = {g.get("class"): {p.get("stroke-dasharray") for p in g.findall(NS + "polyline")} for g in series(loss)}
assert dashes == {"series training": {None}, "series validation": {"6 4"}}, dashes
# accuracy is validation-only; f1 is a single point.
assert [g.get("class") for g in series(by_name["accuracy"])] == ["series validation"]
f1 = by_name["f1<&>"]
assert len(list(f1.iter(NS + "circle"))) == 1 and not list(f1.iter(NS + "polyline"))
check_last_points(sys.argv[1])
EOF

# Default output: next to the input.
python3 "$tool" "$tmp/metrics.jsonl" >/dev/null
test -s "$tmp/metrics.html" || fail "default output path"

# Two runs as Determined trials report them: `loss` in training, `validation_loss` in validation,
# plus metrics of one kind only; the second run is shorter (an early-stopped trial) and has a
# metric the first lacks.
python3 - "$tmp" <<'EOF'
import json, os, sys
for name, lr, last in (("lr-0.1", 0.1, 3000), ("lr-0.01", 0.01, 2000)):
    os.makedirs(os.path.join(sys.argv[1], name), exist_ok=True)
    with open(os.path.join(sys.argv[1], name, "metrics.jsonl"), "w") as f:
        for step in range(100, last + 1, 100):
            loss = 2.3 * (1 - lr) ** (step / 100) + 0.1
            m = {"loss": loss, "lr": lr, "grad_norm": 1 + (step % 700) / 700}
            if lr == 0.01:
                m["loss_scale"] = 65536.0
            f.write(json.dumps({"type": "training", "steps_completed": step, "epoch": step // 1000, "metrics": m}) + "\n")
            if step % 500 == 0:
                f.write(json.dumps({"type": "validation", "steps_completed": step, "epoch": step // 1000,
                                    "metrics": {"validation_loss": loss + 0.1, "accuracy": 1 - loss / 3}}) + "\n")
EOF

# A run directory is an input; its page goes beside its metrics.jsonl.
python3 "$tool" "$tmp/lr-0.1" >"$tmp/stdout" || fail "run directory: exited $?"
test -s "$tmp/lr-0.1/metrics.html" || fail "run directory: no lr-0.1/metrics.html"
grep -q "wrote $tmp/lr-0.1/metrics.html (4 metrics, 36 records)" "$tmp/stdout" || fail "stdout: $(cat "$tmp/stdout")"
python3 - "$tmp/lr-0.1/metrics.html" <<'EOF'
import sys
from svgcheck import NS, charts, legend, series, check_last_points
by_name = charts(sys.argv[1])
# Training loss and validation loss on ONE chart, against the same steps; no validation_loss chart.
assert list(by_name) == ["loss", "lr", "grad_norm", "accuracy"], list(by_name)
loss = by_name["loss"]
assert [g.get("class") for g in series(loss)] == ["series training", "series validation"]
assert legend(loss) == ["training (30 points)", "validation (6 points)"], legend(loss)
heading = "".join(next(t for t in loss.iter(NS + "text") if t.get("class") == "name").itertext())
assert heading == "loss + validation_loss (validation)", heading
hover = [c.find(NS + "title").text for c in series(loss)[1].iter(NS + "circle")]
assert hover[-1].startswith("validation step 3000, epoch 3: validation_loss = "), hover
# Same x axis: the step of the last point of both curves is at the same x.
last = [max(float(c.get("cx")) for c in g.iter(NS + "circle")) for g in series(loss)]
assert last[0] == last[1], last
check_last_points(sys.argv[1])
EOF

# Several runs overlaid: a file and a directory mixed; -o names the page.
python3 "$tool" "$tmp/lr-0.1/metrics.jsonl" "$tmp/lr-0.01" -o "$tmp/compare.html" >"$tmp/stdout" \
  || fail "several runs: exited $?"
grep -q "wrote $tmp/compare.html (2 runs, 5 metrics, 60 records)" "$tmp/stdout" || fail "stdout: $(cat "$tmp/stdout")"
python3 - "$tmp/compare.html" <<'EOF'
import html.parser, re, sys
from svgcheck import NS, charts, legend, page, series, check_last_points
text = page(sys.argv[1])
html.parser.HTMLParser().feed(text)
assert "<script" not in text
by_name = charts(sys.argv[1])
assert list(by_name) == ["loss", "lr", "grad_norm", "accuracy", "loss_scale"], list(by_name)
# The page names both runs, each with its colour, and says which line style is which kind.
runs = re.findall(r'<span class="run" title="[^"]*"><span class="swatch" style="color: (#[0-9a-f]{6})"></span>([^<]*)</span>', text)
assert [r[1] for r in runs] == ["lr-0.1", "lr-0.01"], runs
assert runs[0][0] != runs[1][0], runs
assert '<span class="swatch validation"></span>validation' in text
color = dict((name, c) for c, name in runs)
loss = by_name["loss"]
# Each chart's legend names each run in it; each run's curves are in its colour; training solid,
# validation dashed; every point of both runs is drawn.
assert legend(loss) == ["lr-0.1", "lr-0.01"], legend(loss)
got = [(g.get("data-run"), g.get("class"), len(g.findall(NS + "circle")),
        {p.get("stroke") for p in g.findall(NS + "polyline")}, {p.get("stroke-dasharray") for p in g.findall(NS + "polyline")})
       for g in series(loss)]
assert got == [("lr-0.1", "series training", 30, {color["lr-0.1"]}, {None}),
               ("lr-0.1", "series validation", 6, {color["lr-0.1"]}, {"6 4"}),
               ("lr-0.01", "series training", 20, {color["lr-0.01"]}, {None}),
               ("lr-0.01", "series validation", 4, {color["lr-0.01"]}, {"6 4"})], got
hover = [c.find(NS + "title").text for c in loss.iter(NS + "circle")]
assert any(h.startswith("lr-0.01: validation step 2000, epoch 2: validation_loss = ") for h in hover), hover
# The shorter run ends left of the longer one, on the same x axis.
ends = {g.get("data-run"): max(float(c.get("cx")) for c in g.iter(NS + "circle")) for g in series(loss)}
assert ends["lr-0.01"] < ends["lr-0.1"], ends
# A metric of one run only: that run alone, in its colour.
only = by_name["loss_scale"]
assert [g.get("data-run") for g in series(only)] == ["lr-0.01"] and legend(only) == ["lr-0.01"]
assert {c.get("fill") for c in only.iter(NS + "circle")} == {color["lr-0.01"]}
# The table has a row per run for each metric.
assert len(re.findall(r'<tr><td class="l"><a href="#metric-0">', text)) == 2
check_last_points(sys.argv[1])
# Laid out for one 1200x900 screen: five charts in a 2x3 grid, drawn at the size they get there.
assert "grid-template-columns: repeat(2, minmax(0, 1fr))" in text and "repeat(3, minmax(180px, 1fr))" in text
sizes = {(int(s.get("width")), int(s.get("height"))) for s in by_name.values()}
assert len(sizes) == 1, sizes
w, h = sizes.pop()
assert 2 * w + 10 + 2 * 16 <= 1200 and 3 * h + 2 * 10 + 100 <= 900, (w, h)
EOF

# Runs whose directories have the same name are told apart by their parents.
mkdir -p "$tmp/a/trial" "$tmp/b/trial"
cp "$tmp/lr-0.1/metrics.jsonl" "$tmp/a/trial/"
cp "$tmp/lr-0.01/metrics.jsonl" "$tmp/b/trial/"
python3 "$tool" "$tmp/a/trial" "$tmp/b/trial" -o "$tmp/same.html" >/dev/null || fail "same-named runs: exited $?"
python3 - "$tmp/same.html" <<'EOF'
import sys
from svgcheck import charts, legend, series
loss = charts(sys.argv[1])["loss"]
assert legend(loss) == ["a/trial", "b/trial"], legend(loss)
assert {g.get("data-run") for g in series(loss)} == {"a/trial", "b/trial"}
EOF

# A long run: 30000 training points are drawn with at most a few thousand vertices.
python3 - "$tmp/long.jsonl" <<'EOF'
import json, math, sys
with open(sys.argv[1], "w") as f:
    for i in range(1, 30001):
        f.write(json.dumps({"type": "training", "steps_completed": i, "epoch": 0,
                            "metrics": {"loss": 1 / math.sqrt(i) + (5 if i == 20000 else 0)}}) + "\n")
EOF
python3 "$tool" "$tmp/long.jsonl" -o "$tmp/long.html" >/dev/null
python3 - "$tmp/long.html" <<'EOF'
import sys
from svgcheck import NS, charts, frame, page, check_last_points
svg = charts(sys.argv[1])["loss"]
vertices = sum(len(p.get("points").split()) for p in svg.iter(NS + "polyline"))
assert 100 < vertices <= 2100, vertices
# The spike at step 20000 survives decimation: some vertex reaches the top of the plot.
_, top, _, bottom = frame(svg)
ys = [float(v.split(",")[1]) for p in svg.iter(NS + "polyline") for v in p.get("points").split()]
assert min(ys) < top + 0.1 * (bottom - top), (min(ys), top, bottom)  # dropped, the top vertex (1.0) would be 3/4 down
assert len(page(sys.argv[1])) < 1_000_000, len(page(sys.argv[1]))
check_last_points(sys.argv[1])
EOF

# Twelve metrics still fit one screen: a 3x4 grid.
python3 - "$tmp/twelve.jsonl" <<'EOF'
import json, sys
with open(sys.argv[1], "w") as f:
    for step in range(10, 201, 10):
        f.write(json.dumps({"type": "training", "steps_completed": step, "epoch": 0,
                            "metrics": {f"m{i}": (i + 1) / step for i in range(12)}}) + "\n")
EOF
python3 "$tool" "$tmp/twelve.jsonl" >/dev/null
grep -q "grid-template-columns: repeat(3, minmax(0, 1fr))" "$tmp/twelve.html" || fail "twelve metrics: not 3 columns"
python3 -c "import svgcheck, sys; svgcheck.check_last_points(sys.argv[1])" "$tmp/twelve.html"

# Errors: one line on stderr naming the problem, exit status 1, nothing written.
expect_error() {  # pattern, tool arguments...: the tool fails with one line matching the pattern
  local pattern=$1; shift
  local rc=0
  python3 "$tool" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
  [ "$rc" = 1 ] || fail "$* exited $rc, not 1: $(cat "$tmp/err")"
  [ "$(wc -l <"$tmp/err")" = 1 ] || fail "$*: not one line on stderr: $(cat "$tmp/err")"
  grep -q "^plot_metrics: error: $pattern" "$tmp/err" || fail "$*: message: $(cat "$tmp/err")"
}
expect_error "no such file: .*nonexistent.jsonl" "$tmp/nonexistent.jsonl"

head -n 2 "$tmp/metrics.jsonl" >"$tmp/bad.jsonl"
echo '{"type":"training","steps_completed":150,"metrics":{"loss":0.5}' >>"$tmp/bad.jsonl"
expect_error ".*bad.jsonl:3: line 3 is not valid JSON" "$tmp/bad.jsonl"
test ! -e "$tmp/bad.html" || fail "output written despite the error"

echo '{"type":"training","epoch":0,"metrics":{"loss":0.5}}' >"$tmp/nostep.jsonl"
expect_error ".*nostep.jsonl:1: .*steps_completed" "$tmp/nostep.jsonl"

: >"$tmp/empty.jsonl"
expect_error ".*empty.jsonl has no training or validation records" "$tmp/empty.jsonl"

mkdir -p "$tmp/not-a-run"
expect_error "no metrics.jsonl in directory .*not-a-run" "$tmp/not-a-run"
expect_error "no metrics.jsonl in directory .*not-a-run" "$tmp/lr-0.1" "$tmp/not-a-run" -o "$tmp/x.html"
expect_error ".*empty.jsonl has no training or validation records" "$tmp/lr-0.1" "$tmp/empty.jsonl" -o "$tmp/x.html"
expect_error "no such file: .*nonexistent.jsonl" "$tmp/lr-0.1" "$tmp/nonexistent.jsonl" -o "$tmp/x.html"
test ! -e "$tmp/x.html" || fail "several runs: output written despite the error"
expect_error "2 runs to compare: say where the page goes with -o" "$tmp/lr-0.1" "$tmp/lr-0.01"

# In a browser, at 1200x900, as a person would look at the pages: the browser's own layout of a
# copy of each page with a probe script added (the page itself has none), and a screenshot.
browser=${PLOT_METRICS_BROWSER:-}
if [ -z "$browser" ]; then
  browser=$(command -v chromium || command -v chromium-browser || command -v chromium-headless-shell || true)
fi
if [ "$browser" = skip ]; then
  echo "SKIP: headless-browser check (PLOT_METRICS_BROWSER=skip)"
elif [ -z "$browser" ]; then
  echo "SKIP: headless-browser check (no chromium, chromium-browser or chromium-headless-shell on PATH;" \
       "on Debian: apt-get install --no-install-recommends chromium-headless-shell)"
else
  cat >"$tmp/probe.js" <<'EOF'
(function () {
  function box(e) { var r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; }
  var charts = [];
  document.querySelectorAll("svg.chart").forEach(function (svg) {
    var series = [];
    svg.querySelectorAll("g.series").forEach(function (g) {
      var c = g.querySelectorAll("circle"), last = c[c.length - 1];
      if (!last) return;  // a curve with no number at all (only in its legend)
      series.push({kind: g.getAttribute("class"), run: g.getAttribute("data-run"), last: box(last),
                   color: last.getAttribute("fill") === "#fff" ? last.getAttribute("stroke") : last.getAttribute("fill")});
    });
    charts.push({name: svg.querySelector("title").textContent, box: box(svg),
                 frame: box(svg.querySelector("rect.frame")), series: series});
  });
  var out = document.createElement("pre");
  out.id = "layout-report";
  out.textContent = JSON.stringify({w: innerWidth, h: innerHeight, scroll_w: document.documentElement.scrollWidth,
                                    dpr: devicePixelRatio, charts: charts});
  document.body.appendChild(out);
})();
EOF
  cat >"$tmp/browsercheck.py" <<'EOF'
import json, re, struct, sys, zlib
page, dom_path, png_path = sys.argv[1:4]

def read_png(path):
    """(width, height, rows of RGB(A) bytes) of an 8-bit, non-interlaced RGB or RGBA PNG."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    pos, idat, ihdr = 8, [], None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", data[pos + 8:pos + 8 + n])
        elif kind == b"IDAT":
            idat.append(data[pos + 8:pos + 8 + n])
        pos += 12 + n
    w, h, depth, color_type, _, _, interlace = ihdr
    assert depth == 8 and color_type in (2, 6) and interlace == 0, f"unexpected PNG format {ihdr}"
    bpp = 3 if color_type == 2 else 4
    raw, stride, rows, prev = zlib.decompress(b"".join(idat)), w * bpp, [], bytearray(w * bpp)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return w, h, bpp, rows

dom = open(dom_path, encoding="utf-8").read()
found = re.search(r'<pre id="layout-report">(.*?)</pre>', dom, re.S)
assert found, f"{page}: the browser ran no probe (its DOM dump has no report)"
report = json.loads(found.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&"))
W, H = report["w"], report["h"]
assert W <= 1200 and 600 <= H <= 900, f"{page}: the browser's viewport is {W}x{H}, not 1200x900"
assert report["scroll_w"] <= W, f"{page}: {report['scroll_w']} px wide in a {W}-px window: it scrolls sideways"
inside = lambda a, b: b[0] - 0.5 <= a[0] and b[1] - 0.5 <= a[1] and a[2] <= b[2] + 0.5 and a[3] <= b[3] + 0.5
for c in report["charts"]:
    assert inside(c["box"], [0, 0, W, H]), f"{page}: chart {c['name']} at {c['box']} is not on the {W}x{H} screen"
    for s in c["series"]:
        assert inside(s["last"], c["frame"]), f"{page}: {c['name']} {s['kind']}: last point {s['last']} outside {c['frame']}"

# The screenshot: what is on screen. Inside each chart's plot area, the colour of each run (of
# each kind, with one run) it draws is there: its curves were painted, not only laid out.
w, h, bpp, rows = read_png(png_path)
assert (w, h) == (W, H), f"{page}: screenshot {w}x{h}, viewport {W}x{H}"
for c in report["charts"]:
    x0, y0, x1, y1 = (int(round(v)) for v in c["frame"])
    for color in {s["color"] for s in c["series"]}:
        want = bytes.fromhex(color[1:])
        hits = sum(1 for y in range(y0, y1) for x in range(x0, x1)
                   if all(abs(rows[y][x * bpp + k] - want[k]) <= 48 for k in range(3)))
        assert hits >= 12, f"{page}: chart {c['name']}: {hits} pixels of {color} in its plot area on screen"
print(f"{page}: {len(report['charts'])} charts on a {W}x{H} screen")
EOF
  browse() {  # flags...: the browser at 1200x900, its output in $tmp/dom.html, its messages in $tmp/browser.log
    timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --hide-scrollbars \
      --no-first-run --force-device-scale-factor=1 --user-data-dir="$tmp/browser-profile" --window-size=1200,900 \
      "$@" >"$tmp/dom.html" 2>"$tmp/browser.log" || fail "$browser $*: exited $?: $(tail -n 3 "$tmp/browser.log")"
  }
  for page in compare.html out.html twelve.html; do
    sed 's#</body>#<script src="probe.js"></script></body>#' "$tmp/$page" >"$tmp/probe.html"
    rm -f "$tmp/shot.png"
    # One start of the browser for both where it does both at once (chromium-headless-shell does).
    browse --dump-dom --screenshot="$tmp/shot.png" "file://$tmp/probe.html"
    if ! grep -q 'id="layout-report"' "$tmp/dom.html"; then
      browse --dump-dom "file://$tmp/probe.html"
    fi
    if [ ! -s "$tmp/shot.png" ]; then
      browse --screenshot="$tmp/shot.png" "file://$tmp/probe.html"
    fi
    test -s "$tmp/shot.png" || fail "$browser wrote no screenshot of $page: $(tail -n 3 "$tmp/browser.log")"
    python3 "$tmp/browsercheck.py" "$page" "$tmp/dom.html" "$tmp/shot.png" || fail "in the browser: $page"
  done
  # And the check sees a page that does not fit: the same charts, each 400 px high.
  sed -e 's#minmax(180px, 1fr)#400px#' -e 's#</body>#<script src="probe.js"></script></body>#' \
    "$tmp/compare.html" >"$tmp/probe.html"
  rm -f "$tmp/shot.png"
  browse --dump-dom --screenshot="$tmp/shot.png" "file://$tmp/probe.html"
  if python3 "$tmp/browsercheck.py" too-tall.html "$tmp/dom.html" "$tmp/shot.png" 2>"$tmp/err"; then
    fail "the browser check passed a page whose charts run off the screen"
  fi
  grep -q "is not on the 1200x900 screen" "$tmp/err" || fail "too-tall page: $(tail -n 1 "$tmp/err")"
  echo "headless-browser check passed ($browser)"
fi

echo "plot_metrics: all checks passed"
