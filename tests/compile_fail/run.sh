#!/usr/bin/env bash
# Compile-fail tests: every tests/compile_fail/*.cpp whose first line is `// expect: TEXT` must
# fail to compile with TEXT in the compiler's output (`// expect-first: TEXT`: in its first
# error); `// expect-compiles` files must compile,
# without a warning under -Wall -Wextra -Wpedantic (-Werror).
# Usage: run.sh CXX [compiler flags...]   (runs two compilers at a time)
set -u
here=$(cd "$(dirname "$0")" && pwd)
cxx=$1; shift
flags=("$@")
out=$(mktemp -d)
check() {
  local f=$1 name first expect
  name=$(basename "$f" .cpp)
  first=$(head -n1 "$f")
  local strict=()
  # A program that compiles must compile cleanly too: dtl's headers may not warn a consumer.
  # (-Wmissing-field-initializers flags the consumer's own designated initializers, not dtl.)
  [ "$first" = "// expect-compiles" ] && strict=(-Wall -Wextra -Wpedantic -Werror -Wno-missing-field-initializers)
  if "$cxx" -std=c++20 -fsyntax-only "${flags[@]}" "${strict[@]}" "$f" >"$out/$name.log" 2>&1; then
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
results=$(ls "$here"/*.cpp | xargs -P 2 -I{} bash -c 'flags=($DTL_FLAGS); check "$@"' _ {})
echo "$results"
pass=$(grep -c '^PASS' <<<"$results")
fail=$(grep -c '^FAIL' <<<"$results")
echo "compile-fail: $pass passed, $fail failed"
rm -rf "$out"
[ "$fail" -eq 0 ]
