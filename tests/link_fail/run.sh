#!/usr/bin/env bash
# Link-fail tests: dtl's inline namespace (include/dtl/detail/abi.hpp) turns a program that mixes
# what must not be mixed into a link error, where it would otherwise build with two definitions
# of one function:
#   1. control: main.cpp and helper.cpp both compiled against libdtl (DTL_COMPILED_LIB) link and run;
#   2. helper.cpp header-only, main.cpp against libdtl: undefined reference (v0_header_only vs v0_compiled);
#   3. with DTL_OTHER_LIBDTL set (scripts/test.sh: the libdtl.a of the other LibTorch version):
#      main.cpp and helper.cpp against that libdtl: undefined references to this version's names.
# Usage: run.sh CXX LIBDTL [compile flags...] -- [link flags...]
set -u
here=$(cd "$(dirname "$0")" && pwd)
cxx=$1 libdtl=$2
shift 2
cflags=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do cflags+=("$1"); shift; done
shift
lflags=("$@")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
passed=0 failed=0
result() { if [ "$1" = ok ]; then echo "PASS $2"; passed=$((passed + 1)); else echo "FAIL $2"; failed=$((failed + 1)); fi; }
compile() {  # source, object, extra flags...
  local src=$1 obj=$2
  shift 2
  "$cxx" -std=c++20 -c "${cflags[@]}" "$@" "$here/$src" -o "$obj" 2>"$obj.log" || { cat "$obj.log"; return 1; }
}
link() {  # output, libdtl, objects...
  local exe=$1 lib=$2
  shift 2
  "$cxx" "$@" "$lib" "${lflags[@]}" -o "$exe" 2>"$exe.log"
}
# Two compilers at a time: the header-only one (the longest) beside the two against libdtl.
compile helper.cpp "$out/helper_h.o" &
header_only=$!
compile main.cpp "$out/main.o" -DDTL_COMPILED_LIB || exit 1
compile helper.cpp "$out/helper_c.o" -DDTL_COMPILED_LIB || exit 1
wait "$header_only" || exit 1

if link "$out/ok" "$libdtl" "$out/main.o" "$out/helper_c.o" && [ "$("$out/ok" --run-dir "$out/run" 2>&1 | tail -n1)" = 0.5 ]; then
  result ok "link_fail_control_links_and_runs"
else
  cat "$out/ok.log"; result no "link_fail_control_links_and_runs"
fi

expect_link_failure() {  # case, output, libdtl, the undefined reference expected, objects...
  local name=$1 exe=$2 lib=$3 want=$4
  shift 4
  if link "$exe" "$lib" "$@"; then
    echo "$name: linked, but it must not"; result no "$name"
  elif grep -q "undefined reference to .*$want" "$exe.log"; then
    result ok "$name"
  else
    head -n 5 "$exe.log"; result no "$name"
  fi
}
# A header-only translation unit in a program built against libdtl.
expect_link_failure link_fail_mixed_modes "$out/mixed" "$libdtl" "link_test_learning_rate(dtl::v0_compiled_torch" \
  "$out/main.o" "$out/helper_h.o"
# Against the libdtl of the other LibTorch: this version's names are missing from it.
if [ -n "${DTL_OTHER_LIBDTL:-}" ]; then
  # From a demangled name ("dtl::v0_compiled_torch2::init(...)"): a mangled one that nm left as it
  # is runs the next name's length into the digits ("v0_compiled_torch211SummaryWriter").
  this=$(nm -C "$libdtl" 2>/dev/null | grep -o 'dtl::v0_compiled_torch[0-9]*::' | head -n1 | sed 's/^dtl:://; s/::$//')
  expect_link_failure link_fail_other_libtorch "$out/other" "$DTL_OTHER_LIBDTL" "dtl::$this::" \
    "$out/main.o" "$out/helper_c.o"
fi
echo "link-fail: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
