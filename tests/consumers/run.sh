#!/usr/bin/env bash
# Proves each way of consuming dtl from someone else's project, by building and running the same
# small external trial (tests/consumers/trial.cpp) through it:
#   1. pkg-config on the installed tree: one plain g++ command (dtl, and dtl-compiled: libdtl);
#   2. CMake on the installed tree: find_package(dtl CONFIG REQUIRED) + dtl::dtl, and dtl::compiled;
#   3. a meson project with dtl as a subproject through a wrap file;
#   4. the Conan recipe, by a real Conan 2 client where one is installed (the test suite's .venv):
#      `conan create` with no remote, then a consumer built from the Conan package; else (no client)
#      it checks that the recipe parses and that package() copies exactly what meson installs.
# Usage: tests/consumers/run.sh [WORKDIR] [TORCH]   (default: build-consumers/, /usr)
#   TORCH: meson's torch_prefix, a LibTorch prefix or a python3 whose torch carries LibTorch.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:-$root/build-consumers}
torch=${2:-/usr}
cxx=${CXX:-g++-12}
rm -rf "$work"
mkdir -p "$work"
prefix="$work/prefix"

echo "== meson install into $prefix (LibTorch: $torch)"
meson setup "$work/dtl" "$root" --prefix "$prefix" -Dtests=false -Dexamples=false -Dtorch_prefix="$torch" >/dev/null
meson install -C "$work/dtl" >/dev/null
pcdir=$(dirname "$(find "$prefix" -name dtl.pc | head -n1)")
cmakedir=$(dirname "$(find "$prefix" -name dtlConfig.cmake | head -n1)")

run_app() {  # the trial trains y = 2x + 1 and exits 0 when it learned w = 2
  "$1" --run-dir "$work/runs/$2" | tee "$work/$2.out"
  grep -q '^consumer: w = ' "$work/$2.out"
}

echo "== pkg-config: $cxx trial.cpp \$(pkg-config --cflags --libs dtl)"
flags=$(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs dtl)
# shellcheck disable=SC2086
"$cxx" "$root/tests/consumers/trial.cpp" $flags -o "$work/app-pkgconfig"
run_app "$work/app-pkgconfig" pkgconfig

echo "== pkg-config, compiled: $cxx trial.cpp \$(pkg-config --cflags --libs dtl-compiled)"
flags=$(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs dtl-compiled)
# shellcheck disable=SC2086
"$cxx" "$root/tests/consumers/trial.cpp" $flags -o "$work/app-pkgconfig-compiled"
run_app "$work/app-pkgconfig-compiled" pkgconfig-compiled

echo "== CMake: find_package(dtl CONFIG REQUIRED)"
cmake -S "$root/tests/consumers/cmake" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_COMPILER="$cxx" >/dev/null
cmake --build "$work/cmake" >/dev/null
run_app "$work/cmake/app" cmake
run_app "$work/cmake/app_compiled" cmake-compiled

echo "== meson: dependency('dtl') through subprojects/dtl.wrap"
cp -rL "$root/tests/consumers/meson" "$work/meson-src"
ln -s "$root" "$work/meson-src/subprojects/dtl"
CXX="$cxx" meson setup "$work/meson" "$work/meson-src" -Ddtl:torch_prefix="$torch" >/dev/null
ninja -C "$work/meson" >/dev/null
run_app "$work/meson/app" meson
run_app "$work/meson/app_compiled" meson-compiled

echo "== Conan recipe: parses; package() copies what meson installs"
python3 - "$root/conanfile.py" "$prefix/include" "$root/include" <<'PY'
import ast, fnmatch, os, sys
recipe, installed, source = sys.argv[1:]
tree = ast.parse(open(recipe).read())
cls = next(n for n in tree.body if isinstance(n, ast.ClassDef))
fields = {t.id: ast.literal_eval(n.value) for n in cls.body if isinstance(n, ast.Assign)
          for t in n.targets if isinstance(t, ast.Name) and isinstance(n.value, ast.Constant)}
assert fields["package_type"] == "header-library", fields
package = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "package")
copies = [c for c in ast.walk(package) if isinstance(c, ast.Call) and getattr(c.func, "id", "") == "copy"]
pattern = ast.literal_eval(copies[0].args[1])
def files(top, pat="*"):
    return sorted(os.path.relpath(os.path.join(d, f), top) for d, _, fs in os.walk(top) for f in fs if fnmatch.fnmatch(f, pat))
conan = files(source, pattern)
meson = files(installed)
if conan != meson:
    print("conan package() and meson install differ:", sorted(set(conan) ^ set(meson)))
    sys.exit(1)
print(f"conanfile.py: parses; package() copies the {len(conan)} headers meson installs")
PY
echo "consumers: all passed"
