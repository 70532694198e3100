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
    return path


@pytest.fixture(autouse=True)
def one_thread():
    # The controls are tiny: one intra-op thread, as the CLI tests run them (OMP_NUM_THREADS=1).
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)
