#!/usr/bin/env bash
# Tests for tools/plot_metrics.py: a hand-written metrics.jsonl (gaps, a single point, a
# validation-only metric, a metric on both curves) becomes one well-formed <svg> per metric; a
# long run is decimated; a missing file and a malformed line fail with a message naming them.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tool="$root/tools/plot_metrics.py"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

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
import html.parser, re, sys, xml.etree.ElementTree as ET
page = open(sys.argv[1], encoding="utf-8").read()
html.parser.HTMLParser().feed(page)
assert "<script" not in page and "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', ""), \
    "the page must be self-contained"
svgs = re.findall(r"<svg\b.*?</svg>", page, re.S)
ns = "{http://www.w3.org/2000/svg}"
titles = []
for s in svgs:
    root = ET.fromstring(s)
    titles.append(root.find(ns + "title").text)
    texts = [t.text for t in root.iter(ns + "text")]
    assert "steps completed (batches)" in texts, texts
    assert sum(1 for t in texts if t and t[0].isdigit()) >= 4, f"too few tick labels: {texts}"
assert titles == ["loss", "lr", "accuracy", "f1<&>"], titles
by_name = dict(zip(titles, svgs))
# loss: both curves, a legend entry each, the null is a gap (counted, not drawn as a point).
loss = ET.fromstring(by_name["loss"])
groups = {g.get("class"): g for g in loss.iter(ns + "g") if g.get("class", "").startswith("series")}
assert set(groups) == {"series training", "series validation"}, groups
assert len(groups["series training"].findall(ns + "circle")) == 3
legend = " ".join(t.text for g in loss.iter(ns + "g") if g.get("class") == "legend" for t in g.iter(ns + "text"))
assert "training (3 points, 1 missing)" in legend and "validation (2 points)" in legend, legend
hover = [c.find(ns + "title").text for c in loss.iter(ns + "circle")]
assert "validation step 200, epoch 1: loss = 0.61" in hover, hover
# accuracy is validation-only; f1 is a single point.
acc = ET.fromstring(by_name["accuracy"])
assert [g.get("class") for g in acc.iter(ns + "g") if g.get("class", "").startswith("series")] == ["series validation"]
f1 = ET.fromstring(by_name["f1<&>"])
assert len(list(f1.iter(ns + "circle"))) == 1 and not list(f1.iter(ns + "polyline"))
EOF

# Default output: next to the input.
python3 "$tool" "$tmp/metrics.jsonl" >/dev/null
test -s "$tmp/metrics.html" || fail "default output path"

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
import re, sys, xml.etree.ElementTree as ET
page = open(sys.argv[1], encoding="utf-8").read()
svg = ET.fromstring(re.search(r"<svg\b.*?</svg>", page, re.S).group(0))
ns = "{http://www.w3.org/2000/svg}"
vertices = sum(len(p.get("points").split()) for p in svg.iter(ns + "polyline"))
assert 100 < vertices <= 2100, vertices
# The spike at step 20000 survives decimation: some vertex reaches the top of the plot.
ys = [float(v.split(",")[1]) for p in svg.iter(ns + "polyline") for v in p.get("points").split()]
assert min(ys) < 60, min(ys)  # without it the top vertex would be near y=220
assert len(page) < 1_000_000, len(page)
EOF

# Errors: one line on stderr naming the problem, non-zero exit.
if python3 "$tool" "$tmp/nonexistent.jsonl" 2>"$tmp/err"; then fail "missing file accepted"; fi
grep -q "no such file: .*nonexistent.jsonl" "$tmp/err" || fail "missing-file message: $(cat "$tmp/err")"

head -n 2 "$tmp/metrics.jsonl" >"$tmp/bad.jsonl"
echo '{"type":"training","steps_completed":150,"metrics":{"loss":0.5}' >>"$tmp/bad.jsonl"
if python3 "$tool" "$tmp/bad.jsonl" 2>"$tmp/err"; then fail "malformed line accepted"; fi
grep -q "bad.jsonl:3: line 3 is not valid JSON" "$tmp/err" || fail "malformed-line message: $(cat "$tmp/err")"
test ! -e "$tmp/bad.html" || fail "output written despite the error"

echo '{"type":"training","epoch":0,"metrics":{"loss":0.5}}' >"$tmp/nostep.jsonl"
if python3 "$tool" "$tmp/nostep.jsonl" 2>"$tmp/err"; then fail "record without steps accepted"; fi
grep -q "nostep.jsonl:1: .*steps_completed" "$tmp/err" || fail "missing-field message: $(cat "$tmp/err")"

: >"$tmp/empty.jsonl"
if python3 "$tool" "$tmp/empty.jsonl" 2>"$tmp/err"; then fail "empty file accepted"; fi
grep -q "no training or validation records" "$tmp/err" || fail "empty-file message: $(cat "$tmp/err")"

echo "plot_metrics: all checks passed"
