"""Builds the grassaudit package against the torch of the Python that runs it:

    python3 -m pip install --no-build-isolation ./src/python

torch.utils.cpp_extension supplies that torch's include paths, libraries and ABI flags, so the
engine (the CLI's own src/audit, src/runtime, src/util and src/report/figures sources, compiled here: no prebuilt
library of another LibTorch is linked) matches whatever torch the Python has: Debian's 1.13, or
a venv's pip torch 2.x. Needs a C++17 compiler and the headers of fmt and nlohmann-json
(Debian: libfmt-dev nlohmann-json3-dev); property=N also RapidCheck (librapidcheck-dev: see
RAPIDCHECK below).

ccache is used when installed (as the CMake build does): GRASSAUDIT_NO_CCACHE=1 turns it off.
"""
import glob
import os
import subprocess
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

# The engine's sources the in-process audit runs, by folder, as the CMake build's layers are: the
# engine (src/audit; the module is live, so nothing of src/formats, the model readers, is
# compiled) apart from the RapidCheck runner (its own module below), and what it stands on: the
# runtime (single-process here: no GRASSAUDIT_C10D), util, and the report's figure code
# (Report.plot draws the leak map as the CLI does).
ENGINE_DIRS = ["audit", "audit/checks", "runtime", "util", "report/figures"]
RAPIDCHECK_RUNNER = "audit/property_runner_rc.cpp"
ENGINE = sorted(os.path.relpath(p, SRC) for d in ENGINE_DIRS for p in glob.glob(os.path.join(SRC, d, "*.cpp"))
                if os.path.relpath(p, SRC) != RAPIDCHECK_RUNNER)


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


# The precompiled header of the engine's units (src/pch/README.md), as the CMake build uses it: the
# LibTorch, fmt and nlohmann-json headers parsed once instead of once per unit. GCC falls back to
# parsing the header (with a -Winvalid-pch warning) where the compiled one does not fit.
PCH_HEADER = "pch/aten_headers.h"


def compile_with_pch(build, inner):
    """build.compiler.compile (torch's: ninja, every unit in parallel), with the precompiled header
    compiled first, by the same compiler with the same flags as the units, and each unit given it."""
    def compile(sources, output_dir=None, macros=None, include_dirs=None, debug=0, extra_preargs=None,
                extra_postargs=None, depends=None):
        cc = build.compiler
        out = os.path.abspath(output_dir or build.build_temp)
        _, _, post, pp_opts, _ = cc._setup_compile(out, macros, include_dirs, [], depends, extra_postargs)
        post = list(post["cxx"] if isinstance(post, dict) else post)
        flags = cc.compiler_so[1:] + cc._get_cc_args(pp_opts, debug, extra_preargs)
        pch_dir = os.path.join(out, "grassaudit_pch")
        os.makedirs(pch_dir, exist_ok=True)
        header = os.path.join(pch_dir, os.path.basename(PCH_HEADER))
        with open(header, "w") as f:
            f.write('#include "%s"\n' % PCH_HEADER)
        cxx = os.environ.get("CXX", "c++")  # torch's ninja file compiles with $CXX, or c++
        subprocess.check_call([cxx] + flags + ["-x", "c++-header", header, "-o", header + ".gch"] + post)
        with_pch = post + ["-include", header, "-Winvalid-pch"]
        if isinstance(extra_postargs, dict):
            extra_postargs = dict(extra_postargs, cxx=with_pch)
        else:
            extra_postargs = with_pch
        return inner(sources, output_dir=output_dir, macros=macros, include_dirs=include_dirs, debug=debug,
                     extra_preargs=extra_preargs, extra_postargs=extra_postargs, depends=depends)
    return compile


# Unity batches as the CMake build makes them (src/pch/README.md): the engine's sources of one
# folder, 8 to a unit, so the header's cost is paid once per batch. scripts/check-unity-names.py
# reads these batches as it reads CMake's and stops the build where two files of a batch could
# change each other's meaning.
UNITY_BATCH = 8
CHECK_UNITY = os.path.join(os.path.dirname(SRC), "scripts", "check-unity-names.py")


def unity_batches(build_temp, files):
    """The unity sources for files (absolute .cpp paths): one per folder and batch of UNITY_BATCH,
    named longest first, since torch's ninja file lists its units by name: the longest units start
    first and the two cores finish together. The binding (csrc/) is the longest whatever its size
    (it parses pybind11 and torch's Python headers), then the engine's batches by size."""
    unity_dir = os.path.join(os.path.abspath(build_temp), "grassaudit_unity", "Unity")
    os.makedirs(unity_dir, exist_ok=True)
    by_folder = {}
    for f in files:
        by_folder.setdefault(os.path.dirname(f), []).append(f)
    batches = []
    for folder, group in sorted(by_folder.items()):
        tag = os.path.relpath(folder, SRC).replace(os.sep, "_")
        for k in range(0, len(group), UNITY_BATCH):
            batches.append(("%s_%d" % (tag, k // UNITY_BATCH), group[k:k + UNITY_BATCH]))
    batches.sort(key=lambda b: (not b[1][0].startswith(HERE + os.sep), -sum(os.path.getsize(f) for f in b[1])))
    wanted = {}
    for rank, (name, group) in enumerate(batches):
        path = os.path.join(unity_dir, "unity_%02d_%s_cxx.cxx" % (rank, name))
        wanted[path] = "".join('#include "%s"\n' % f for f in group)
    for old in glob.glob(os.path.join(unity_dir, "unity_*.cxx")):
        if old not in wanted:
            os.remove(old)
    for path, text in wanted.items():
        if not os.path.exists(path) or open(path).read() != text:  # unchanged: ninja keeps its object
            with open(path, "w") as fh:
                fh.write(text)
    if os.path.exists(CHECK_UNITY):
        subprocess.check_call([sys.executable, CHECK_UNITY, os.path.dirname(unity_dir)])
    return list(wanted)


class Build(BuildExtension):
    """torch's BuildExtension gives every extension torch's C++ ABI flag; the runner uses none of
    torch, only RapidCheck, whose library is built with the system's (the new) std::string ABI.
    The engine's units share one precompiled header and compile in unity batches."""

    def build_extension(self, ext):
        if ext.name == "grassaudit._property_runner":
            ext.extra_compile_args = [a for a in ext.extra_compile_args
                                      if not a.startswith("-D_GLIBCXX_USE_CXX11_ABI")] + ["-D_GLIBCXX_USE_CXX11_ABI=1"]
            super().build_extension(ext)
            return
        ext.sources = unity_batches(self.build_temp, [os.path.join(HERE, f) for f in ext.sources])
        inner = self.compiler.compile
        self.compiler.compile = compile_with_pch(self, inner)
        try:
            super().build_extension(ext)
        finally:
            self.compiler.compile = inner


# ccache's masquerading c++ (torch's compiler check runs `which $CXX`: one word only).
CCACHE_CXX = "/usr/lib/ccache/c++"
if os.path.exists(CCACHE_CXX) and not os.environ.get("GRASSAUDIT_NO_CCACHE") and "CXX" not in os.environ:
    os.environ["CXX"] = CCACHE_CXX
    # ccache caches units compiled with a precompiled header only with this sloppiness.
    os.environ.setdefault("CCACHE_SLOPPINESS", "pch_defines,time_macros")
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
