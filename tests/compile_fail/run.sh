#!/usr/bin/env bash
# Compile-fail tests: every tests/compile_fail/*.cpp whose first line is `// expect: TEXT` must
# fail to compile with TEXT in what the compiler prints up to its first error, which ends the
# compile (`// expect-first: TEXT`: in the error line itself); `// expect-compiles` files must compile,
# without a warning under -Wall -Wextra -Wpedantic (-Werror).
# Usage: run.sh CXX [compiler flags...]   (runs two compilers at a time)
set -u
here=$(cd "$(dirname "$0")" && pwd)
cxx=$1; shift
flags=("$@")
out=$(mktemp -d)
# DTL_COMPILE_FAIL_ONLY=expect-compiles: only the programs that must compile (warning-free).
cases=("$here"/*.cpp)
if [ "${DTL_COMPILE_FAIL_ONLY:-}" = expect-compiles ]; then
  cases=()
  for f in "$here"/*.cpp; do [ "$(head -n1 "$f")" = "// expect-compiles" ] && cases+=("$f"); done
fi
# The misuse cases that include LibTorch (through dtl/trainer.hpp or the data loader) parse a
# precompiled <dtl/trainer.hpp>, built once, in libdtl's mode (DTL_COMPILED_LIB: the headers only
# declare dtl's non-template functions): ~11 s a case instead of ~30. The diagnostics are static
# assertions in templates, the same in both modes. A PCH that does not fit is ignored by g++.
mkdir -p "$out/pch"
if [ "${DTL_COMPILE_FAIL_ONLY:-}" != expect-compiles ]; then
  printf '#include <dtl/trainer.hpp>\n' >"$out/pch/dtl_cf.hpp"
  "$cxx" -std=c++20 "${flags[@]}" -DDTL_COMPILED_LIB -x c++-header "$out/pch/dtl_cf.hpp" -o "$out/pch/dtl_cf.hpp.gch" \
    2>"$out/pch.log" || rm -f "$out/pch/dtl_cf.hpp.gch"
fi
check() {
  local f=$1 name first expect
  name=$(basename "$f" .cpp)
  first=$(head -n1 "$f")
  local pch=()
  # (not for the cases that must compile warning-free: a PCH would hide its headers' warnings)
  [ "$first" != "// expect-compiles" ] && grep -qE '#include (<dtl/trainer.hpp>|<dtl/data/data_loader.hpp>|"trial_base.hpp")' "$f" &&
    [ -f "$out/pch/dtl_cf.hpp.gch" ] && pch=(-DDTL_COMPILED_LIB -include "$out/pch/dtl_cf.hpp")
  local strict=(-Wfatal-errors)
  # A misuse stops at its first error (-Wfatal-errors): the diagnostic must be the error the user
  # reads first, and g++ skips the end-of-file instantiation of the pending templates of LibTorch
  # and dtl that follows it (~18 s a case down to 0.2-4.5 s, measured).
  # A program that compiles must compile cleanly too: dtl's headers may not warn a consumer.
  # (-Wmissing-field-initializers flags the consumer's own designated initializers, not dtl.)
  [ "$first" = "// expect-compiles" ] && strict=(-Wall -Wextra -Wpedantic -Werror -Wno-missing-field-initializers)
  if "$cxx" -std=c++20 -fsyntax-only "${flags[@]}" "${pch[@]}" "${strict[@]}" "$f" >"$out/$name.log" 2>&1; then
    if [ "$first" = "// expect-compiles" ]; then echo "PASS $name"; else echo "FAIL $name: compiled, but a misuse must not"; fi
  else
    if [ "$first" = "// expect-compiles" ]; then
      echo "FAIL $name: does not compile:"; head -n 20 "$out/$name.log"
    else
      if [[ "$first" == "// expect-first: "* ]]; then
        # The message must be the compiler's first error, not one after an unrelated one.
        expect=${first#// expect-first: }
        if grep -m1 'error' "$out/$name.log" | grep -qF -- "$expect"; then echo "PASS $name"
        else echo "FAIL $name: the first error does not say '$expect':"; grep -m3 'error' "$out/$name.log"; fi
      else
        expect=${first#// expect: }
        if grep -qF -- "$expect" "$out/$name.log"; then echo "PASS $name"
        else echo "FAIL $name: error does not say '$expect':"; grep -m3 'error' "$out/$name.log"; fi
      fi
    fi
  fi
}
export -f check
export cxx out
export DTL_FLAGS="${flags[*]}"
results=$(printf '%s\n' "${cases[@]}" | xargs -P 2 -I{} bash -c 'flags=($DTL_FLAGS); check "$@"' _ {})
echo "$results"
pass=$(grep -c '^PASS' <<<"$results")
fail=$(grep -c '^FAIL' <<<"$results")
echo "compile-fail: $pass passed, $fail failed"
rm -rf "$out"
[ "$fail" -eq 0 ]
