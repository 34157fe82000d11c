"""Conan 2 recipe for dtl, a header-only C++20 library.

Not exercised here: no Conan client can be installed on the build machine (Debian has no conan
package and PyPI is out of reach). tests/consumers/run.sh checks what can be checked without one:
that this file parses and that package() copies exactly the headers `meson install` installs.

LibTorch is not on ConanCenter: it is taken from the system (Debian's libtorch-dev, or a user's
LibTorch via Torch_DIR) and declared in package_info as system libraries.
"""

from conan import ConanFile
from conan.tools.files import copy
from conan.tools.layout import basic_layout


class DtlConan(ConanFile):
    name = "dtl"
    version = "0.1.0"
    license = "Apache-2.0"
    description = "Determined AI's PyTorch training API for C++ on LibTorch (header-only)"
    topics = ("deep-learning", "libtorch", "training", "header-only")
    package_type = "header-library"
    settings = "os", "arch", "compiler", "build_type"
    exports_sources = "include/*", "LICENSE*"
    no_copy_source = True

    def requirements(self):
        self.requires("nlohmann_json/3.11.2")
        self.requires("yaml-cpp/0.7.0")
        self.requires("zlib/1.2.13")

    def layout(self):
        basic_layout(self, src_folder=".")

    def package_id(self):
        self.info.clear()

    def package(self):
        copy(self, "*.hpp", src=f"{self.source_folder}/include", dst=f"{self.package_folder}/include")
        copy(self, "LICENSE*", src=self.source_folder, dst=f"{self.package_folder}/licenses")

    def package_info(self):
        self.cpp_info.bindirs = []
        self.cpp_info.libdirs = []
        self.cpp_info.defines = ["USE_DISTRIBUTED", "USE_C10D_GLOO", "_GLIBCXX_USE_CXX11_ABI=1"]
        # System LibTorch (see the module docstring); add its include dirs with Torch_DIR/-isystem.
        self.cpp_info.includedirs = ["include", "/usr/include/torch/csrc/api/include"]
        self.cpp_info.system_libs = ["torch", "torch_cpu", "c10", "glog", "pthread"]
