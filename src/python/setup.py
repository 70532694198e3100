"""Builds the grassaudit package against the torch of the Python that runs it:

    python3 -m pip install --no-build-isolation ./src/python

torch.utils.cpp_extension supplies that torch's include paths, libraries and ABI flags, so the
engine (the CLI's own src/util, src/core and src/audit sources, compiled here: no prebuilt
library of another LibTorch is linked) matches whatever torch the Python has: Debian's 1.13, or
a venv's pip torch 2.x. Needs a C++17 compiler and the headers of fmt and nlohmann-json
(Debian: libfmt-dev nlohmann-json3-dev); property=N also RapidCheck (librapidcheck-dev: see
RAPIDCHECK below).

ccache is used when installed (as the CMake build does): GRASSAUDIT_NO_CCACHE=1 turns it off.
"""
import glob
import os
import sys

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)  # the repository's src/: the engine's sources and include root
# Where the objects go (default: build/ here). The test suite gives each CMake build tree its own,
# so the 1.13 and the 2.6 builds never mix objects compiled against different torch headers.
BUILD = os.environ.get("GRASSAUDIT_PY_BUILD_DIR")

try:
    import torch  # noqa: F401
    from torch.utils.cpp_extension import BuildExtension, CppExtension
except ImportError:
    sys.exit("grassaudit: this Python has no torch; install PyTorch (>= 1.13) first, then "
             "python3 -m pip install --no-build-isolation ./src/python")

# The engine's sources the in-process audit runs: the whole of src/audit (the engine, by folder;
# the module is live, so nothing of src/formats, the model readers, is compiled), apart from the
# RapidCheck runner (its own module below); and what the engine uses beneath it.
ENGINE_DIRS = ["audit", "audit/checks"]
RAPIDCHECK_RUNNER = "audit/property_runner_rc.cpp"
BENEATH = [
    "core/distributed.cpp",          # single-process here (no GRASSAUDIT_C10D)
    "report/figures.cpp",            # Report.plot: the leak map drawn by the report's own figure code
    "report/gnuplot.cpp",
    "report/gnuplot_script.cpp",
    "report/leak_map_figure.cpp",
    "util/atomic_file.cpp",
    "util/error_text.cpp",
    "util/sha256.cpp",
    "util/write_points.cpp",
]
ENGINE = sorted(os.path.relpath(p, SRC) for d in ENGINE_DIRS for p in glob.glob(os.path.join(SRC, d, "*.cpp"))
                if os.path.relpath(p, SRC) != RAPIDCHECK_RUNNER) + BENEATH


def find_rapidcheck():
    """Debian's librapidcheck.a (and its headers), or None: property=N then raises its one line."""
    for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib", "/usr/local/lib"):
        lib = os.path.join(d, "librapidcheck.a")
        if os.path.exists(lib) and any(os.path.exists(os.path.join(i, "rapidcheck.h"))
                                       for i in ("/usr/include", "/usr/local/include")):
            return lib
    return None


sources = ["csrc/engine.cpp"] + [os.path.join(SRC, s) for s in ENGINE]
COMPILE = ["-std=c++17", "-O2", "-g0"]  # -g0: Python's own CFLAGS ask for debug info (3x the compile time)
ext_modules = [
    CppExtension(
        name="grassaudit._engine",
        sources=sources,
        include_dirs=[SRC],
        libraries=["fmt"],
        extra_compile_args=COMPILE + ["-Wno-unused-function", "-Wno-deprecated-declarations"],
    )
]

# RAPIDCHECK: property=N draws its cases with the CLI's RapidCheck runner (audit/property_runner.h),
# built here into a module of its own. Debian ships RapidCheck only as a static library compiled for
# executables (-fPIE): its code reaches libstdc++'s vtables, VTTs and std::cerr by direct
# PC-relative references, which no shared object can resolve against the system's libstdc++.so. So
# the runner links libstdc++ and libgcc statically, exports nothing but PyInit (the version script:
# every other symbol local, so those references resolve inside it), and hands the engine a plain C
# function pointer (a PyCapsule): only C types cross between the two libstdc++ copies, and no
# exception does.
RAPIDCHECK = find_rapidcheck()
if RAPIDCHECK:
    ext_modules.append(Extension(
        name="grassaudit._property_runner",
        sources=["csrc/property_runner_module.cpp", os.path.join(SRC, RAPIDCHECK_RUNNER)],
        include_dirs=[SRC],
        language="c++",
        extra_compile_args=COMPILE + ["-fno-gnu-unique"],
        extra_objects=[RAPIDCHECK],
        extra_link_args=["-static-libstdc++", "-static-libgcc",
                         "-Wl,--version-script=" + os.path.join(HERE, "csrc", "property_runner.map")],
    ))


class Build(BuildExtension):
    """torch's BuildExtension gives every extension torch's C++ ABI flag; the runner uses none of
    torch, only RapidCheck, whose library is built with the system's (the new) std::string ABI."""

    def build_extension(self, ext):
        if ext.name == "grassaudit._property_runner":
            ext.extra_compile_args = [a for a in ext.extra_compile_args
                                      if not a.startswith("-D_GLIBCXX_USE_CXX11_ABI")] + ["-D_GLIBCXX_USE_CXX11_ABI=1"]
        super().build_extension(ext)


# ccache's masquerading c++ (torch's compiler check runs `which $CXX`: one word only).
CCACHE_CXX = "/usr/lib/ccache/c++"
if os.path.exists(CCACHE_CXX) and not os.environ.get("GRASSAUDIT_NO_CCACHE") and "CXX" not in os.environ:
    os.environ["CXX"] = CCACHE_CXX
os.environ.setdefault("MAX_JOBS", str(os.cpu_count() or 1))

setup(
    name="grassaudit",
    version="0.3.0",
    description="Causality audit of a live torch.nn.Module, with the grassaudit CLI's C++ engine",
    packages=["grassaudit"],
    python_requires=">=3.8",
    ext_modules=ext_modules,
    cmdclass={"build_ext": Build},
    options={"build": {"build_base": BUILD}} if BUILD else {},
    zip_safe=False,
)
