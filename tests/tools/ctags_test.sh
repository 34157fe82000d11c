#!/usr/bin/env bash
# Code tools see dtl (docs/architecture.md, "Code tools"): Universal Ctags, with the repository's
# .ctags.d/dtl.ctags, lists dtl's classes and functions in their namespaces. ctags (5.9, Debian 12)
# does not parse the C++20 opener `namespace dtl::inline DTL_ABI::detail {` and then tags nothing
# in the header, so the headers open dtl's inline namespace the C++11 way (namespace dtl {, inline
# namespace DTL_ABI {, ...); this fails, naming the headers, if one does not show in ctags' output.
# Torch-free; it needs universal-ctags (scripts/setup.sh --tests installs it) and skips without it.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"

if ! command -v ctags >/dev/null 2>&1; then
  echo "skipped: no universal-ctags (no ctags on PATH; Debian: apt-get install universal-ctags)"
  exit 0
fi
if ! ctags --version 2>/dev/null | grep -q '^Universal Ctags'; then
  echo "skipped: no universal-ctags (ctags here is: $(ctags --version 2>&1 | head -n 1))"
  exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tags="$tmp/tags"
# As a person runs it, from the repository root, so that ctags reads .ctags.d/dtl.ctags, but with
# no option files of the user's ($HOME/.ctags.d, $XDG_CONFIG_HOME/ctags). Line numbers instead of
# search patterns, so that every field is tab-separated; kinds by name, scopes as scope:KIND:NAME.
env -u XDG_CONFIG_HOME HOME="$tmp" ctags -R -f "$tags" --excmd=number --fields=+KZ include

missing=()
# has NAME KIND SCOPE: ctags lists NAME of KIND in SCOPE (e.g. namespace:dtl::DTL_ABI).
has() {
  awk -F'\t' -v name="$1" -v kind="$2" -v scope="scope:$3" '
    $1 == name && $4 == kind { for (i = 5; i <= NF; i++) if ($i == scope) found = 1 }
    END { exit !found }' "$tags"
}
has Trainer class namespace:dtl::DTL_ABI || missing+=("class dtl::Trainer (include/dtl/trainer.hpp)")
has PyTorchTrialContext class namespace:dtl::DTL_ABI ||
  missing+=("class dtl::PyTorchTrialContext (include/dtl/context.hpp)")
has edit_distance function namespace:dtl::DTL_ABI::detail ||
  missing+=("function dtl::detail::edit_distance (include/dtl/detail/did_you_mean.hpp)")
# .ctags.d/dtl.ctags was read: it defines DTL_INLINE, which otherwise shows as a return type.
if grep -q $'\ttyperef:typename:DTL_INLINE' "$tags"; then
  missing+=("return types without DTL_INLINE (ctags did not read .ctags.d/dtl.ctags)")
fi
detail_functions=$(awk -F'\t' '$4 == "function" && /\tscope:namespace:dtl::DTL_ABI::detail(\t|$)/' "$tags" | wc -l)
[ "$detail_functions" -ge 20 ] ||
  missing+=("functions in dtl::detail: $detail_functions listed, expected at least 20")

# Every header that opens dtl's inline namespace shows it in ctags' output; one that does not
# (a C++20 opener, or anything else ctags cannot parse there) has lost its tags.
opening=$(grep -rlE '^[[:space:]]*(inline[[:space:]]+)?namespace[[:space:]]+[^/]*\bDTL_ABI\b' include | sort || true)
seen=$(awk -F'\t' '$1 == "DTL_ABI" && $4 == "namespace" && /\tscope:namespace:dtl(\t|$)/ { print $2 }' "$tags" | sort -u)
lost=$(comm -23 <(printf '%s\n' "$opening") <(printf '%s\n' "$seen"))
if [ -n "$lost" ]; then
  while IFS= read -r f; do
    missing+=("$f: no tags in dtl's inline namespace ($(grep -nE -m 1 '^[[:space:]]*(inline[[:space:]]+)?namespace[[:space:]]+[^/]*\bDTL_ABI\b' "$f"))")
  done <<<"$lost"
fi

if [ ${#missing[@]} -gt 0 ]; then
  echo "FAIL: ctags ($(ctags --version | head -n 1)) does not list:" >&2
  printf '  %s\n' "${missing[@]}" >&2
  echo "(a header that opens its namespace as \`namespace dtl::inline DTL_ABI::x {\`, C++20, loses its" >&2
  echo " tags: open it as \`namespace dtl {\` \`inline namespace DTL_ABI {\` \`namespace x {\`, docs/architecture.md)" >&2
  exit 1
fi
echo "ok: ctags lists dtl::Trainer, dtl::PyTorchTrialContext, $detail_functions functions in dtl::detail," \
  "and tags in each of the $(printf '%s\n' "$opening" | grep -c .) headers that open dtl's namespace"
echo "ctags_test: all passed"
