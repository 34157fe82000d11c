#!/usr/bin/env bash
# Proves each way of consuming dtl from someone else's project, by building and running the same
# small external trial (tests/consumers/trial.cpp) through it:
#   1. pkg-config on the installed tree: one plain g++ command (dtl), and dtl-compiled (libdtl) with a
#      precompiled <dtl/pch.hpp>: the two commands of docs/building.md, "Faster trial builds";
#   2. CMake on the installed tree: find_package(dtl CONFIG REQUIRED) + dtl::dtl, and dtl::compiled
#      with target_precompile_headers(... <dtl/pch.hpp>);
#   3. a meson project with dtl as a subproject through a wrap file: dependency('dtl');
#   4. the Conan recipe, by a real Conan 2 client (the test suite's .venv has one): `conan create`
#      with no remote, header-only and libdtl, then the trial built from each Conan package through
#      the pkg-config file Conan generates.
# Each way header-only and against libdtl (dtl-compiled, dtl::compiled), except the meson
# subproject (header-only: its libdtl build is meson's own, already tested here; and dtl's own build
# builds its examples against libdtl with a shared precompiled header). Every build with
# a precompiled header fails if g++ cannot use it (-Werror=invalid-pch), instead of parsing the
# headers unnoticed.
# Usage: tests/consumers/run.sh [WORKDIR] [TORCH]   (default: build-consumers/, /usr)
#   TORCH: meson's torch_prefix, a LibTorch prefix or a python3 whose torch carries LibTorch.
# DTL_CONSUMERS_ONLY=header-only: pkg-config and CMake, header-only (what scripts/test.sh runs for
# the second LibTorch version).
# DTL_CONSUMERS_DOCS_ROUTES=1: leave out the header-only pkg-config, CMake and meson-subproject
# builds, which the docs check (tools/check_docs.py) makes next with the docs' own commands
# (pkg-config and CMake against this prefix; the meson subproject, a link to this checkout as here,
# against Debian's LibTorch).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:-$root/build-consumers}
torch=${2:-/usr}
cxx=${CXX:-g++-12}
only=${DTL_CONSUMERS_ONLY:-}
docs_routes=${DTL_CONSUMERS_DOCS_ROUTES:-}
compiled=true
[ "$only" = header-only ] && compiled=false
rm -rf "$work"
mkdir -p "$work"
prefix="$work/prefix"
# A step that fails ends the script: the side-by-side jobs (below) end with it.
trap 'kill $(jobs -p) 2>/dev/null || true' EXIT

conan_packages() {  # `conan create` (no remote) header-only and libdtl, then `conan install` of each
  export CONAN_HOME="$work/conan-home"
  "$conan" profile detect --force >/dev/null 2>&1
  # Conan copies the recipe's sources: from a clean tree of this checkout (no build directories, no .venv).
  mkdir -p "$work/conan-src"
  git -C "$root" ls-files -z --cached --others --exclude-standard | (cd "$root" && xargs -0 cp --parents -t "$work/conan-src")
  local mode opts
  for mode in False True; do
    opts=(-s compiler.cppstd=20 -s "compiler.version=$("$cxx" -dumpversion | cut -d. -f1)" -o "dtl/*:torch=$torch"
          -o "dtl/*:compiled=$mode" -c "tools.build:compiler_executables={'cpp': '$cxx'}")
    "$conan" create "$work/conan-src" "${opts[@]}" >"$work/conan-create-$mode.log" 2>&1 ||
      { echo "consumers: conan create (compiled=$mode) failed:"; tail -n 30 "$work/conan-create-$mode.log"; return 1; }
    "$conan" install --requires=dtl/0.1.0 "${opts[@]}" -g PkgConfigDeps --output-folder "$work/conan-use-$mode" \
      >"$work/conan-install-$mode.log" 2>&1 ||
      { echo "consumers: conan install (compiled=$mode) failed:"; tail -n 30 "$work/conan-install-$mode.log"; return 1; }
  done
}

# The machine has two cores and most steps compile one translation unit, so independent steps run
# side by side: the Conan packages (their own libdtl) beside the install and the pkg-config and CMake
# builds; the pkg-config builds beside the CMake ones. Each app runs once it is built.
conan_job=
if [ "$only" != header-only ]; then
  conan=$(command -v conan || true)
  [ -z "$conan" ] && [ -x "$root/.venv/bin/conan" ] && conan=$root/.venv/bin/conan
  if [ -z "$conan" ]; then
    echo "no Conan client (scripts/setup.sh --tests installs one in .venv)" >&2
    exit 1
  fi
  echo "== Conan: conan create (no remote), header-only and libdtl (beside what follows)"
  conan_packages & conan_job=$!
fi

echo "== meson install into $prefix (LibTorch: $torch)"
meson setup "$work/dtl" "$root" --prefix "$prefix" -Dtests=false -Dexamples=false -Dtorch_prefix="$torch" \
  -Dcompiled_lib=$compiled >/dev/null
meson install -C "$work/dtl" >/dev/null
pcdir=$(dirname "$(find "$prefix" -name dtl.pc | head -n1)")
# The plotter the end-of-run summary names is installed as a command.
"$prefix/bin/dtl-plot" --help | grep -q metrics.jsonl || { echo "consumers: $prefix/bin/dtl-plot does not run"; exit 1; }

run_app() {  # the trial trains y = 2x + 1 and exits 0 when it learned w = 2
  "$1" --run-dir "$work/runs/$2" | tee "$work/$2.out"
  grep -q '^consumer: w = ' "$work/$2.out"
}
pkgconfig_build() {  # name, PKG_CONFIG_PATH, module: one plain g++ command
  local flags
  echo "== pkg-config ($1): $cxx trial.cpp \$(pkg-config --cflags --libs $3)"
  flags=$(PKG_CONFIG_PATH="$2" pkg-config --cflags --libs "$3")
  # shellcheck disable=SC2086
  "$cxx" "$root/tests/consumers/trial.cpp" $flags -o "$work/app-$1"
}
pkgconfig_pch_build() {  # name, PKG_CONFIG_PATH, module: the .gch of <dtl/pch.hpp>, then the trial with it
  local cflags libs includedir
  echo "== pkg-config ($1): <dtl/pch.hpp> precompiled with \$(pkg-config --cflags $3), then" \
    "$cxx -Ipch -include dtl/pch.hpp trial.cpp \$(pkg-config --cflags --libs $3)"
  cflags=$(PKG_CONFIG_PATH="$2" pkg-config --cflags "$3")
  libs=$(PKG_CONFIG_PATH="$2" pkg-config --libs "$3")
  includedir=$(PKG_CONFIG_PATH="$2" pkg-config --variable=includedir "$3")
  mkdir -p "$work/pch-$1/dtl"
  # -pthread: the .pc has it among the link flags, and in a compile it defines _REENTRANT, which a
  # precompiled header must agree on.
  # shellcheck disable=SC2086
  "$cxx" $cflags -pthread -x c++-header "$includedir/dtl/pch.hpp" -o "$work/pch-$1/dtl/pch.hpp.gch"
  # -H lists what the compile read: the .gch must be the first ("! NAME.gch": used).
  # shellcheck disable=SC2086
  "$cxx" -H -Werror=invalid-pch -I"$work/pch-$1" -include dtl/pch.hpp "$root/tests/consumers/trial.cpp" $cflags $libs \
    -o "$work/app-$1" 2>"$work/$1.includes" || { grep -v '^\.' "$work/$1.includes"; return 1; }
  grep -qx "! $work/pch-$1/dtl/pch.hpp.gch" "$work/$1.includes" ||
    { echo "consumers: $1 did not use $work/pch-$1/dtl/pch.hpp.gch"; return 1; }
}
pkg_jobs=()
if [ -z "$docs_routes" ]; then pkgconfig_build pkgconfig "$pcdir" dtl & pkg_jobs+=($!); fi
if $compiled; then pkgconfig_pch_build pkgconfig-compiled "$pcdir" dtl-compiled & pkg_jobs+=($!); fi

echo "== CMake: find_package(dtl CONFIG REQUIRED)"
cmake -S "$root/tests/consumers/cmake" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_COMPILER="$cxx" >/dev/null
if [ -z "$docs_routes" ]; then
  cmake --build "$work/cmake" -j 2 >/dev/null
elif $compiled; then
  cmake --build "$work/cmake" --target app_compiled >/dev/null
fi
for job in "${pkg_jobs[@]}"; do wait "$job"; done
[ -z "$docs_routes" ] && run_app "$work/app-pkgconfig" pkgconfig
$compiled && run_app "$work/app-pkgconfig-compiled" pkgconfig-compiled
[ -z "$docs_routes" ] && run_app "$work/cmake/app" cmake
$compiled && run_app "$work/cmake/app_compiled" cmake-compiled
if [ "$only" = header-only ]; then
  echo "consumers: all passed (header-only: pkg-config, CMake)"
  exit 0
fi

if [ -z "$docs_routes" ]; then
  echo "== meson: dependency('dtl') through subprojects/dtl.wrap"
  cp -rL "$root/tests/consumers/meson" "$work/meson-src"
  ln -s "$root" "$work/meson-src/subprojects/dtl"
  CXX="$cxx" meson setup "$work/meson" "$work/meson-src" -Ddtl:torch_prefix="$torch" >/dev/null
  ninja -C "$work/meson" app >/dev/null
  run_app "$work/meson/app" meson
fi

echo "== Conan: the trial from each package, through the pkg-config file Conan generates"
wait "$conan_job"
pkgconfig_build conan-header-only "$work/conan-use-False" dtl &
build1=$!
pkgconfig_build conan-compiled "$work/conan-use-True" dtl
wait "$build1"
run_app "$work/app-conan-header-only" conan-header-only
run_app "$work/app-conan-compiled" conan-compiled
echo "consumers: all passed"
