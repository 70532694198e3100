"""The model comes back as it was: whatever the audit did, raised or was interrupted by.

The engine already puts back what it changes (mode, dtype, the state forward touches, the
structural pass's redraws, the precision floor's jitter); this is the guarantee at the boundary,
independent of how the engine ended: a record taken before, put back after, in a finally.
"""
import contextlib
from typing import Any, Dict, Iterator, List, Optional, Tuple

import torch

from . import _blas


def _plain_attributes(m: torch.nn.Module) -> Dict[str, Any]:
    return {k: v for k, v in vars(m).items()
            if isinstance(v, (bool, int, float, str, type(None), torch.Tensor)) and not isinstance(v, torch.nn.Parameter)
            and k not in ("_parameters", "_buffers", "_modules")}


@contextlib.contextmanager
def preserved(model: torch.nn.Module, threads: Optional[int] = None, cuda: bool = False) -> Iterator[None]:
    """`cuda`: the audit runs on a CUDA device, whose generators its train-mode passes reseed."""
    modules = list(model.named_modules(remove_duplicate=False))
    training = [(m, m.training) for _, m in modules]
    params: List[Tuple[torch.nn.Parameter, torch.Tensor, torch.Tensor, bool]] = []
    seen = set()
    buffers: List[Tuple[torch.nn.Module, str, torch.Tensor, torch.Tensor]] = []
    attributes: List[Tuple[torch.nn.Module, Dict[str, Any], Dict[str, Any]]] = []
    for _, m in modules:
        if id(m) in seen:
            continue
        seen.add(id(m))
        for k, p in m._parameters.items():
            if p is not None:
                # the tensor object forward sees (p.data) and its bits
                params.append((p, p.data, p.detach().clone(), p.requires_grad))
        for k, b in m._buffers.items():
            if b is not None:
                buffers.append((m, k, b, b.detach().clone()))
        plain = _plain_attributes(m)
        # each plain attribute: the object itself and, for a tensor, its bits
        attributes.append((m, dict(m._buffers), {k: (v, v.detach().clone() if isinstance(v, torch.Tensor) else None)
                                                 for k, v in plain.items()}))
    rng = torch.get_rng_state()
    cuda_rng = (torch.cuda.get_rng_state_all()
                if torch.cuda.is_available() and (cuda or torch.cuda.is_initialized()) else None)
    grad_enabled = torch.is_grad_enabled()
    num_threads = torch.get_num_threads()
    blas_threads = _blas.threads()
    if threads is not None:  # both pools, as the CLI's --threads sets them
        torch.set_num_threads(int(threads))
        _blas.set_threads(int(threads))
    try:
        yield
    finally:
        with torch.no_grad():
            for p, data, bits, requires_grad in params:
                if p.data is not data:
                    p.data = data
                if p.dtype != bits.dtype or p.shape != bits.shape:
                    p.data = bits
                else:
                    p.data.copy_(bits)
                p.requires_grad_(requires_grad)
            for m, k, b, bits in buffers:
                if m._buffers.get(k) is not b:
                    m._buffers[k] = b
                if b.dtype == bits.dtype and b.shape == bits.shape:
                    b.copy_(bits)
                else:
                    m._buffers[k] = bits
            for m, bufs, plain in attributes:
                for k in list(m._buffers):
                    if k not in bufs:
                        del m._buffers[k]
                for k in list(_plain_attributes(m)):
                    if k not in plain:  # added by forward
                        del m.__dict__[k]
                for k, (v, bits) in plain.items():
                    if vars(m).get(k, None) is not v:
                        m.__dict__[k] = v
                    if bits is not None:
                        if v.dtype == bits.dtype and v.shape == bits.shape:
                            v.copy_(bits)
                        else:
                            m.__dict__[k] = bits
        for m, mode in training:
            m.training = mode
        torch.set_rng_state(rng)
        if cuda_rng is not None:
            torch.cuda.set_rng_state_all(cuda_rng)
        torch.set_grad_enabled(grad_enabled)
        torch.set_num_threads(num_threads)
        if blas_threads is not None:
            _blas.set_threads(blas_threads)
