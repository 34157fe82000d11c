"""Conan 2 recipe for dtl: header-only by default, or libdtl with `-o dtl/*:compiled=True`.

Built and consumed by a real Conan 2 client in tests/consumers/run.sh (`conan create` with no
remote, then a trial built from the Conan package). It builds and installs through dtl's own
meson.build, so the package holds exactly what `meson install` installs, and the flags a consumer
gets are the ones of the installed pkg-config file (LibTorch's included).

LibTorch, nlohmann_json, yaml-cpp and zlib come from the system, not from ConanCenter: LibTorch
is not there, and the others are taken as Debian's -dev packages (as the rest of the build does).
The option `torch` names the LibTorch as meson's `torch_prefix` does: a prefix (Debian's `/usr`,
an unpacked pytorch.org archive) or a python3 whose torch package carries LibTorch.

    conan create . -s compiler.cppstd=20 -o 'dtl/*:torch=/path/to/.venv/bin/python3' [-o 'dtl/*:compiled=True']
"""

import shlex
from pathlib import Path

from conan import ConanFile
from conan.tools.files import copy
from conan.tools.layout import basic_layout
from conan.tools.meson import Meson, MesonToolchain


class DtlConan(ConanFile):
    name = "dtl"
    version = "0.1.0"
    license = "Apache-2.0"
    description = "Determined AI's PyTorch training API for C++ on LibTorch"
    topics = ("deep-learning", "libtorch", "training", "header-only")
    settings = "os", "arch", "compiler", "build_type"
    options = {"compiled": [True, False], "torch": ["ANY"], "cuda": [True, False]}
    default_options = {"compiled": False, "torch": "/usr", "cuda": False}
    exports_sources = ("include/*", "src/*", "cmake/*", "tools/plot_metrics.py", "meson.build", "meson_options.txt",
                       "LICENSE*")

    def configure(self):
        self.package_type = "static-library" if self.options.compiled else "header-library"

    def layout(self):
        basic_layout(self, src_folder=".")

    def package_id(self):
        # Header-only: the compiler settings do not change the package, the LibTorch does.
        if not self.info.options.compiled:
            self.info.settings.clear()

    def generate(self):
        tc = MesonToolchain(self)
        tc.project_options.update({
            "torch_prefix": str(self.options.torch),
            "cuda": bool(self.options.cuda),
            "compiled_lib": bool(self.options.compiled),
            "tests": False,
            "examples": False,
        })
        tc.generate()

    def build(self):
        meson = Meson(self)
        meson.configure()
        meson.build()

    def package(self):
        Meson(self).install()
        copy(self, "LICENSE*", src=self.source_folder, dst=str(Path(self.package_folder) / "licenses"))

    def package_info(self):
        """The installed pkg-config file's flags (the one source of LibTorch's flags), as cpp_info."""
        name = "dtl-compiled" if self.options.compiled else "dtl"
        pc = next(Path(self.package_folder).rglob(f"{name}.pc"))
        fields = _read_pc(pc, self.package_folder)
        info = self.cpp_info
        info.bindirs = ["bin"]  # dtl-plot
        info.includedirs, info.libdirs, info.libs, info.defines, info.cxxflags = [], [], [], [], []
        flags = shlex.split(fields.get("Cflags", ""))
        i = 0
        while i < len(flags):
            f = flags[i]
            if f in ("-I", "-isystem"):
                info.includedirs.append(flags[i + 1])
                i += 1
            elif f.startswith("-isystem"):
                info.includedirs.append(f[len("-isystem"):])
            elif f.startswith("-I"):
                info.includedirs.append(f[2:])
            elif f.startswith("-D"):
                info.defines.append(f[2:])
            else:  # -std=c++20 too: a consumer's plain compiler line needs it (LibTorch 2.x's headers do)
                info.cxxflags.append(f)
            i += 1
        # libdtl first, then LibTorch's flags verbatim: their order (--no-as-needed, libstdc++
        # before LibTorch) matters, so they travel as link flags rather than as a library list.
        raw = []
        for f in shlex.split(fields.get("Libs", "")):
            if f == "-ldtl":
                info.libs.append("dtl")
            elif f.startswith("-L") and f[2:].startswith(self.package_folder):
                info.libdirs.append(f[2:])
            else:
                raw.append(f)
        raw += ["-lyaml-cpp", "-lz"]  # the .pc's Requires (nlohmann_json is header-only)
        if "libcurl" in fields.get("Requires", ""):  # built with the Determined cluster client
            raw.append("-lcurl")
        info.exelinkflags = raw
        info.sharedlinkflags = raw


def _read_pc(path, prefix):
    """A pkg-config file's fields with its ${variables} expanded (prefix= set to the package's)."""
    variables, fields = {"pcfiledir": str(path.parent)}, {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        for k, v in variables.items():
            line = line.replace("${" + k + "}", v)
        if "=" in line and (":" not in line or line.index("=") < line.index(":")):
            k, v = line.split("=", 1)
            variables[k.strip()] = prefix if k.strip() == "prefix" else v.strip()
        elif ":" in line:
            k, v = line.split(":", 1)
            fields[k.strip()] = v.strip()
    return fields
