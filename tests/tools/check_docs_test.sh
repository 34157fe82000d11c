#!/usr/bin/env bash
# Tests for tools/check_docs.py, torch-free: each page below breaks one rule and must fail naming
# it; a page that keeps them all passes; a page's sh blocks run in order, in one directory, with the
# substitutions, and a failing or hanging block fails the check while the others still run; the
# repository's own README.md and docs/ keep the rules. (Their commands and fragments, which need
# LibTorch, are scripts/test.sh's torch2:docs_commands.)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tool="$root/tools/check_docs.py"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
t='```'

expect_error() {  # name, text the error must contain; the page is $tmp/name.md
  local out
  if out=$(python3 "$tool" --static "$tmp/$1.md" 2>&1); then fail "$1: passed, expected: $2"; fi
  grep -qF -- "$2" <<<"$out" || fail "$1: expected '$2' in: $out"
  echo "ok $1"
}

printf '%s\nls\n%s\n' "$t" "$t" >"$tmp/no_language.md"
expect_error no_language "fence language '' is not one the docs check knows"

printf '%scpp\nint x;\n%s\n' "$t" "$t" >"$tmp/cpp_unclassified.md"
expect_error cpp_unclassified "a cpp block needs file=NAME"

printf '%ssh norun: long\nls\n%s\n' "$t" "$t" >"$tmp/info_string.md"
expect_error info_string "the info string is the language alone"

printf '<!-- check: norun: -->\n%ssh\nls\n%s\n' "$t" "$t" >"$tmp/norun_no_reason.md"
expect_error norun_no_reason "norun: needs a reason"

printf '<!-- check: file=a.cpp -->\n%scpp\nint f() { return 0; }\n%s\n' "$t" "$t" >"$tmp/file_no_main.md"
expect_error file_no_main "it has no main()"

printf '<!-- check: fragment=nowhere -->\n%scpp\nint x;\n%s\n' "$t" "$t" >"$tmp/bad_context.md"
expect_error bad_context "fragment=nowhere: contexts are"

printf '<!-- check: excerpt=tests/tools/check_docs_test.sh -->\n%scpp\nset -euo pipefail\nthis line is not in the file\n%s\n' "$t" "$t" >"$tmp/excerpt.md"
expect_error excerpt "line not found (in order) in the file: this line is not in the file"

printf 'Run `scripts/train.sh --max-length batches=5` first.\n' >"$tmp/inline.md"
expect_error inline "inline command \`scripts/train.sh --max-length batches=5\` is in no fence"

printf 'A span over two lines: `g++-12 -O2\nx.cpp -o x`.\n' >"$tmp/inline_two_lines.md"
expect_error inline_two_lines "inline command \`g++-12 -O2 x.cpp -o x\` is in no fence"

printf '<!-- check: file=a.cpp -->\n%scpp\nint main() {}\n%s\n\n<!-- check: file=a.cpp -->\n%scpp\nint main() {}\n%s\n' "$t" "$t" "$t" "$t" >"$tmp/same_file.md"
expect_error same_file "file=a.cpp is also written by"

printf '<!-- check: norun: x -->\n\n%ssh\nls\n%s\n' "$t" "$t" >"$tmp/orphan.md"
expect_error orphan "must be on the line just before its fence"

cat >"$tmp/good.md" <<EOT
Run \`scripts/train.sh --max-length batches=5\`, shown below; \`meson install\` is a step's name.

<!-- check: norun: trains for minutes -->
${t}sh
scripts/train.sh --max-length batches=5
${t}

<!-- check: excerpt=tests/tools/check_docs_test.sh -->
${t}cpp
set -euo pipefail
...
fail() { echo "FAIL: \$*" >&2; exit 1; }
${t}

${t}text
output
${t}
EOT
python3 "$tool" --static "$tmp/good.md" >"$tmp/good.out" 2>&1 || { cat "$tmp/good.out"; fail "good.md failed"; }
echo "ok good"
# Run mode, torch-free: blocks run in order in one project directory, with the substitutions; a
# failing block and a hanging one fail the check, each named, and the others still run.
mkdir -p "$tmp/prefix/include" "$tmp/prefix/lib/pkgconfig"
printf 'Name: dtl\nDescription: x\nVersion: 0\nCflags: -I${pcfiledir}/../../include\n' >"$tmp/prefix/lib/pkgconfig/dtl.pc"
cat >"$tmp/run.md" <<EOT
<!-- check: file=hello.yaml -->
${t}yaml
greeting: hello
${t}

${t}sh
grep -q 'greeting: hello' hello.yaml && test -d path/to/dtl/include && test "\$(pkg-config --variable=pcfiledir dtl)" = <prefix>/lib/pkgconfig
echo ran > first.txt
${t}

${t}sh
test "\$(cat first.txt)" = ran
false
${t}

${t}sh
sleep 30 &
sleep 30
${t}

${t}sh
echo after > after.txt
${t}
EOT
if DTL_DOCS_FENCE_TIMEOUT=2 python3 "$tool" --prefix "$tmp/prefix" --work "$tmp/work" "$tmp/run.md" >"$tmp/run.out" 2>&1; then
  cat "$tmp/run.out"; fail "run.md passed"
fi
grep -q "^ran    .*run.md:6 " "$tmp/run.out" || { cat "$tmp/run.out"; fail "run.md:6 did not run"; }
grep -q "^FAILED .*run.md:11 " "$tmp/run.out" || { cat "$tmp/run.out"; fail "run.md:11 did not fail"; }
grep -q "^FAILED .*run.md:16 " "$tmp/run.out" && grep -q "stopped after 2 s" "$tmp/run.out" || { cat "$tmp/run.out"; fail "run.md:16 did not time out"; }
grep -q "^ran    .*run.md:21 " "$tmp/run.out" && test "$(cat "$tmp/work/project/after.txt")" = after || { cat "$tmp/run.out"; fail "run.md:21 did not run"; }
grep -q "docs check: 2 failed" "$tmp/run.out" || { cat "$tmp/run.out"; fail "run.md: not 2 failures"; }
echo "ok run mode"

python3 "$tool" --static >"$tmp/repo.out" 2>&1 || { cat "$tmp/repo.out"; fail "the repository's docs fail the check"; }
echo "ok repository docs"
echo "check_docs_test: all passed"
