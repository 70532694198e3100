"""The OpenBLAS this process runs (the one torch loaded), so threads=N sets its threads as the
CLI's --threads does: torch.set_num_threads sets torch's own pool, not the BLAS's workers, and a
GEMM split over another number of workers may round a row otherwise. Found through
/proc/self/maps (torch loads it privately: its symbols are not global); None elsewhere (another
BLAS, another OS), and then only torch's threads are set."""
import ctypes
from typing import Optional

_LIB: Optional[ctypes.CDLL] = None
_LOOKED = False


def _openblas() -> Optional[ctypes.CDLL]:
    global _LIB, _LOOKED
    if _LOOKED:
        return _LIB
    _LOOKED = True
    try:
        with open("/proc/self/maps") as maps:
            paths = sorted({line.split()[-1] for line in maps if "blas" in line.rsplit("/", 1)[-1]})
    except OSError:
        return None
    for path in paths:
        try:
            lib = ctypes.CDLL(path)  # already loaded: the same library, not a second copy
            lib.openblas_get_num_threads.restype = ctypes.c_int
            lib.openblas_set_num_threads.argtypes = [ctypes.c_int]
            lib.openblas_get_corename.restype = ctypes.c_char_p
        except (OSError, AttributeError):
            continue
        _LIB = lib
        break
    return _LIB


def threads() -> Optional[int]:
    lib = _openblas()
    return None if lib is None else int(lib.openblas_get_num_threads())


def set_threads(n: int) -> None:
    lib = _openblas()
    if lib is not None:
        lib.openblas_set_num_threads(int(n))


def core() -> Optional[str]:
    """The kernel family OpenBLAS chose ("Haswell", "Cooperlake", ...), None without OpenBLAS."""
    lib = _openblas()
    return None if lib is None else lib.openblas_get_corename().decode()
