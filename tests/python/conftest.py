"""The grassaudit package's tests (run by ctest: tests/CMakeLists.txt, python_package).

The package is imported from GRASSAUDIT_PY_TARGET when set (ctest installs it there with the one
pip command of the README), else from the Python's own site-packages. The audit controls come
from reference/make_audit_controls.py, imported, not copied; GRASSAUDIT_CLI is the CLI the
equality tests compare with.
"""
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TARGET = os.environ.get("GRASSAUDIT_PY_TARGET")
if TARGET:
    sys.path.insert(0, TARGET)
sys.path.insert(0, os.path.join(ROOT, "reference"))

torch = pytest.importorskip("torch", reason="this Python has no torch")


@pytest.fixture(scope="session")
def cli() -> str:
    path = os.environ.get("GRASSAUDIT_CLI", os.path.join(ROOT, "build", "grassaudit"))
    if not os.access(path, os.X_OK):
        pytest.skip(f"no grassaudit CLI at {path} (GRASSAUDIT_CLI)")
    cli_torch = os.environ.get("GRASSAUDIT_CLI_TORCH", "")
    if cli_torch and cli_torch.split(".")[:2] != torch.__version__.split("+")[0].split(".")[:2]:
        pytest.skip(f"the CLI is built with LibTorch {cli_torch}, this Python has torch {torch.__version__}: "
                    "equal reports need the same torch")
    # The same torch version is not the same arithmetic: a pip torch runs MKL, the CLI the system's
    # OpenBLAS. Equal reports need this process to run an OpenBLAS too (cli_env then gives the CLI
    # its kernel family).
    from grassaudit import _blas
    if _blas.core() is None:
        pytest.skip("this Python's torch does not run OpenBLAS, the CLI's BLAS: equal reports need the same kernels")
    return path


def cli_env(threads: int) -> dict:
    """The environment the CLI runs in beside this process: its own, at `threads` threads, and
    OpenBLAS's kernel family set to the one this process runs. The CLI picks a better family when
    OpenBLAS's detection falls short of the CPU (src/cli/main.cpp); this process cannot (OpenBLAS
    reads OPENBLAS_CORETYPE when it loads), so on such a CPU (an Intel Xeon that 0.3.21 reports as
    Prescott) the two would run different GEMM kernels, whose results differ in the last bits. A
    family the user set wins in the CLI, so the two run the same kernels on any CPU."""
    from grassaudit import _blas
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    core = _blas.core()
    if core:
        env["OPENBLAS_CORETYPE"] = core
    return env


@pytest.fixture(autouse=True)
def one_thread():
    # The controls are tiny: one intra-op thread, as the CLI tests run them (OMP_NUM_THREADS=1).
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)
