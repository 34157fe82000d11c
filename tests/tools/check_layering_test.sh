#!/usr/bin/env bash
# Tests for tools/check_layering.py, torch-free. On copies of include/ and docs/ (--root), each case
# breaks one rule and the check must fail naming the file, the arrow and the rule: a forbidden
# include, an include no part's uses allows, a header in no part or in two, an include cycle, a
# header over its limit, a stale parts table (which --write-docs then rewrites), a parts file that
# names no part or makes parts use each other in a cycle, a header reached only through -inl files,
# an [[inl_only]] entry that names no header or one a declaration header includes, a declaration
# header a trial parses that includes c10d (kept to -inl files by [[inl_only_outside]]), and such an
# entry that no header includes. A small tree that keeps every rule passes.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tool="$root/tools/check_layering.py"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

fresh() {  # a copy of the checkout's include/ and docs/ at $tmp/$1; trainer.hpp's limit out of the way
  mkdir -p "$tmp/$1/docs"
  cp -r "$root/include" "$tmp/$1/include"
  cp "$root/docs/parts.toml" "$root/docs/architecture.md" "$tmp/$1/docs/"
  sed -i 's/^lines = [0-9]*$/lines = 100000/' "$tmp/$1/docs/parts.toml"
}

expect() {  # case, text a violation line must contain
  local out
  if out=$(python3 "$tool" --root "$tmp/$1" 2>&1); then fail "$1: passed, expected: $2"; fi
  grep -F -- "$2" <<<"$out" | grep -q '^check_layering: ' || fail "$1: expected '$2' in: $out"
  echo "ok $1"
}

fresh forbidden
sed -i '0,/^#include <dtl\/detail\/abi.hpp>/s//&\n#include <dtl\/trainer.hpp>/' "$tmp/forbidden/include/dtl/checkpoint/store.hpp"
expect forbidden "dtl/checkpoint/store.hpp includes dtl/trainer.hpp (checkpoint -> loop): never: nothing includes the loop"
expect forbidden "never: checkpoint/ never includes the context, callbacks, init or the loop"

fresh uses
sed -i '0,/^#include <dtl\/detail\/abi.hpp>/s//&\n#include <dtl\/optim\/step_options.hpp>/' "$tmp/uses/include/dtl/nn/dropout.hpp"
expect uses "dtl/nn/dropout.hpp includes dtl/optim/step_options.hpp (nn -> optim): part nn may not include part optim"

fresh unlisted
printf '#include <dtl/detail/abi.hpp>\n' >"$tmp/unlisted/include/dtl/stray.hpp"
expect unlisted "dtl/stray.hpp is in no part"

fresh two_parts
sed -i 's|^headers = \["dtl/optim/"\]|headers = ["dtl/optim/", "dtl/nn/"]|' "$tmp/two_parts/docs/parts.toml"
expect two_parts "dtl/nn/dropout.hpp is in two parts (optim, nn)"

fresh cycle
sed -i '0,/^#include <dtl\/detail\/abi.hpp>/s//&\n#include <dtl\/samplers\/pipeline.hpp>/' "$tmp/cycle/include/dtl/samplers/node.hpp"
out=$(python3 "$tool" --root "$tmp/cycle" 2>&1) && fail "cycle: passed"
grep '^check_layering: include cycle: ' <<<"$out" | grep -q 'dtl/samplers/node.hpp -> dtl/samplers/pipeline.hpp' ||
  fail "cycle: expected an include cycle through node.hpp -> pipeline.hpp in: $out"
echo "ok cycle"

fresh limit
sed -i 's/^lines = 100000$/lines = 10/' "$tmp/limit/docs/parts.toml"
expect limit "over its limit of 10 (docs/parts.toml): the loop only schedules"

fresh stale_docs
sed -i 's/^Mixed precision: GradScaler/Mixed precision, changed: GradScaler/' "$tmp/stale_docs/docs/parts.toml"
expect stale_docs "docs/architecture.md: the parts table differs from docs/parts.toml's: run tools/check_layering.py --write-docs"
python3 "$tool" --root "$tmp/stale_docs" --write-docs >/dev/null 2>&1 || true
grep -q "Mixed precision, changed: GradScaler" "$tmp/stale_docs/docs/architecture.md" || fail "stale_docs: --write-docs did not rewrite the table"
! python3 "$tool" --root "$tmp/stale_docs" 2>&1 | grep -q "parts table differs" || fail "stale_docs: the table still differs after --write-docs"
echo "ok stale_docs --write-docs"

fresh unknown_part
sed -i 's/^uses = \["samplers"\]$/uses = ["samplerz"]/' "$tmp/unknown_part/docs/parts.toml"
expect unknown_part "part data's uses names 'samplerz', which is no part"

fresh bad_key
sed -i 's/^uses = \["samplers"\]$/use = ["samplers"]/' "$tmp/bad_key/docs/parts.toml"
expect bad_key "has keys headers, name, owns, use; it needs headers, name, owns and may have shared, uses"

fresh part_cycle
sed -i '/^name = "samplers"$/,/^uses = \[\]$/s/^uses = \[\]$/uses = ["data"]/' "$tmp/part_cycle/docs/parts.toml"
expect part_cycle "docs/parts.toml: parts use each other in a cycle: "

fresh inl_only
sed -i '\|^#include <dtl/checkpoint/state_dict.hpp>$|d' "$tmp/inl_only/include/dtl/checkpoint/checkpoint.hpp"
expect inl_only "dtl/checkpoint/state_dict.hpp is included only by -inl.hpp files (dtl/checkpoint/checkpoint-inl.hpp): a trial built against libdtl (DTL_COMPILED_LIB) does not see it"

fresh inl_only_stale
printf '\n[[inl_only]]\nheader = "dtl/gone.hpp"\nreason = "was"\n' >>"$tmp/inl_only_stale/docs/parts.toml"
expect inl_only_stale "docs/parts.toml: [[inl_only]] names dtl/gone.hpp, which is no header under include/"

fresh inl_only_reached
printf '\n[[inl_only]]\nheader = "dtl/checkpoint/state_dict.hpp"\nreason = "was"\n' >>"$tmp/inl_only_reached/docs/parts.toml"
expect inl_only_reached "docs/parts.toml: [[inl_only]] lists dtl/checkpoint/state_dict.hpp, but a declaration header includes it"

fresh inl_only_transitive
sed -i '/^\[\[inl_only\]\]$/{N;/dtl\/cluster\/http.hpp/{N;d}}' "$tmp/inl_only_transitive/docs/parts.toml"
expect inl_only_transitive "dtl/cluster/http.hpp is reached only through -inl.hpp files (dtl/cluster/master.hpp)"

fresh outside
sed -i '0,/^#include <dtl\/errors.hpp>/s//&\n#include <torch\/csrc\/distributed\/c10d\/ProcessGroup.hpp>/' "$tmp/outside/include/dtl/distributed/distributed_context.hpp"
expect outside "dtl/distributed/distributed_context.hpp includes <torch/csrc/distributed/c10d/ProcessGroup.hpp>, but a trial parses dtl/distributed/distributed_context.hpp (a declaration header) and [[inl_only_outside]] keeps torch/csrc/distributed/c10d/ to -inl files"

fresh outside_transitive  # through a header only -inl files reached before
sed -i '0,/^#include <dtl\/errors.hpp>/s//&\n#include <dtl\/detail\/torch_compat_c10d.hpp>/' "$tmp/outside_transitive/include/dtl/context.hpp"
expect outside_transitive "dtl/detail/torch_compat_c10d.hpp includes <torch/csrc/distributed/c10d/ProcessGroup.hpp>, but a trial parses"

fresh outside_stale
printf '\n[[inl_only_outside]]\ninclude = "torch/csrc/gone/"\nreason = "was"\n' >>"$tmp/outside_stale/docs/parts.toml"
expect outside_stale "docs/parts.toml: [[inl_only_outside]] names torch/csrc/gone/, which no header includes"

# A tree that keeps every rule passes: an -inl file goes with its header, a listed header that does
# not exist is no error, a shared part is included without being named.
mkdir -p "$tmp/good/include/dtl/base" "$tmp/good/include/dtl/top" "$tmp/good/docs"
printf '#include <dtl/top/a-inl.hpp>\n#include <dtl/base/b.hpp>\n' >"$tmp/good/include/dtl/top/a.hpp"
printf '#include <dtl/top/a.hpp>\n#include <dtl/util.hpp>\n' >"$tmp/good/include/dtl/top/a-inl.hpp"
printf '#include <dtl/util.hpp>\n' >"$tmp/good/include/dtl/base/b.hpp"
printf '// nothing\n' >"$tmp/good/include/dtl/util.hpp"
cat >"$tmp/good/docs/parts.toml" <<'EOT'
[[part]]
name = "top"
headers = ["dtl/top/"]
owns = "the top"
uses = ["base"]

[[part]]
name = "base"
headers = ["dtl/base/", "dtl/base_later.hpp"]
owns = "the base"

[[part]]
name = "util"
headers = ["dtl/util.hpp"]
owns = "what everyone uses"
shared = true

[[never]]
rule = "base never includes top"
from = ["base"]
to = ["top"]
reason = "it is below"

[[limit]]
header = "dtl/top/a.hpp"
lines = 2
reason = "short"
EOT
printf '# Good\n\n<!-- parts: generated by tools/check_layering.py --write-docs; edit docs/parts.toml -->\n<!-- parts: end -->\n' >"$tmp/good/docs/architecture.md"
python3 "$tool" --root "$tmp/good" --write-docs >"$tmp/good.out" 2>&1 || { cat "$tmp/good.out"; fail "good: failed"; }
grep -q "^| \*\*base\*\* | \`base/\`, \`base_later.hpp\` | the base | no other part |$" "$tmp/good/docs/architecture.md" ||
  { cat "$tmp/good/docs/architecture.md"; fail "good: the generated table lacks base's row"; }
out=$(python3 "$tool" --root "$tmp/good") || { echo "$out"; fail "good: failed after --write-docs"; }
[ "$out" = "check_layering: 4 headers; layering holds (3 parts), no include cycle, a.hpp 2 lines, the parts table is current" ] ||
  fail "good: unexpected output: $out"
echo "ok good"

echo "check_layering_test: all passed"
