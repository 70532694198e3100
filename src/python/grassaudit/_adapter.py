"""The live module as the C++ engine sees it (csrc/engine.cpp, PyModuleTarget).

Only what needs Python is here: calling the module, its float64 copy, reading and writing its
attributes and tensors by dotted name. Every check and every decision is the engine's.
"""
import copy
import dataclasses
import inspect
import os
import traceback
import warnings
from collections.abc import Mapping
from typing import Any, Dict, List, Tuple

import torch
from torch.utils._pytree import tree_flatten, tree_unflatten

_DTYPES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16, "bfloat16": torch.bfloat16}
_NAMES = {v: k for k, v in _DTYPES.items()}


def last_line(exc: BaseException) -> str:
    """The last line of the exception's traceback, as Python prints it ("ValueError: ...")."""
    lines = traceback.format_exception_only(type(exc), exc)
    text = lines[-1].strip() if lines else type(exc).__name__
    return text.splitlines()[-1] if text else type(exc).__name__


def annotation_str(annotation: Any) -> str:
    if annotation is inspect.Parameter.empty:
        return "Any"
    if annotation is torch.Tensor:
        return "Tensor"
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation).replace("typing.", "").replace("torch.Tensor", "Tensor")


def normalize_output(out: Any) -> Any:
    """Tensors, tuples, lists and dicts as they are; Hugging Face ModelOutput (an OrderedDict whose
    None fields are absent) and other mappings as dicts; dataclasses as dicts of their non-None
    fields, in field order; outputs on another device brought to the CPU the probes compare on."""
    if isinstance(out, torch.Tensor):
        return out if out.device.type == "cpu" else out.cpu()
    if isinstance(out, tuple):  # a namedtuple too: by index, as TorchScript's NamedTuple reaches the CLI
        return tuple(normalize_output(v) for v in out)
    if isinstance(out, list):
        return [normalize_output(v) for v in out]
    if isinstance(out, Mapping):
        return {k: normalize_output(v) for k, v in out.items()}
    if dataclasses.is_dataclass(out) and not isinstance(out, type):
        return {f.name: normalize_output(getattr(out, f.name)) for f in dataclasses.fields(out)
                if getattr(out, f.name) is not None}
    return out


def _source(m: torch.nn.Module) -> str:
    """ "Class.forward, file.py:N" for a module's forward ("" when Python cannot say)."""
    cls = type(m)
    try:
        path = inspect.getsourcefile(cls.forward) or ""
        line = inspect.getsourcelines(cls.forward)[1]
    except (OSError, TypeError):
        return ""
    return f"{cls.__name__}.forward, {os.path.basename(path)}:{line}"


def _owner(root: torch.nn.Module, name: str) -> Tuple[Any, str]:
    parts = name.split(".")
    m = root
    for p in parts[:-1]:
        m = getattr(m, p)
    return m, parts[-1]


class ModuleAdapter:
    """The module (own dtype) and, made on first use, its copies in other dtypes (float64)."""

    def __init__(self, model: torch.nn.Module):
        self.model = model
        self.own = next((p.dtype for p in model.parameters() if p.is_floating_point()), torch.float32)
        self.copies: Dict[torch.dtype, torch.nn.Module] = {}
        self.active = model
        self.device = next((p.device for p in model.parameters()), torch.device("cpu"))
        forward = model.forward
        self.params = [p for p in inspect.signature(forward).parameters.values()
                       if p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)]
        self.positional_only = {p.name for p in self.params if p.kind == inspect.Parameter.POSITIONAL_ONLY}

    # ---- what the engine asks -----------------------------------------------------------------
    def arguments(self) -> List[Tuple[str, str, bool]]:
        return [(p.name, annotation_str(p.annotation), p.default is not inspect.Parameter.empty) for p in self.params]

    def describe(self) -> str:
        return type(self.model).__name__

    def own_dtype(self) -> str:
        return _NAMES.get(self.own, "float32")

    def device_name(self) -> str:
        return str(self.device)

    def to_device(self, name: str) -> str:
        """Moves the module (and its copies in other dtypes) to device `name`: "" when done, else why not."""
        try:
            device = torch.device(name)
            self.model.to(device)
            for c in self.copies.values():
                c.to(device)
        except Exception as e:  # noqa: BLE001 -- any failure means: it does not run there
            return last_line(e)
        self.device = device
        return ""

    def call(self, kwargs: Dict[str, torch.Tensor]) -> Any:
        if self.device.type != "cpu":
            kwargs = {k: v.to(self.device) for k, v in kwargs.items()}
        if self.positional_only:
            args = [kwargs.pop(p.name) for p in self.params if p.name in self.positional_only and p.name in kwargs]
            return normalize_output(self.active(*args, **kwargs))
        return normalize_output(self.active(**kwargs))

    def set_train(self, train: bool) -> None:
        self.active.train(train)

    def is_training(self) -> bool:
        return self.active.training

    def to_dtype(self, name: str) -> str:
        """Switches forward to the module in dtype `name`: "" when done, else why not."""
        dtype = _DTYPES[name]
        training = self.active.training
        if dtype == self.own:
            self.active = self.model
        else:
            if dtype not in self.copies:
                try:
                    c = copy.deepcopy(self.model)
                    c.to(dtype)  # floating parameters and buffers only, as Module.double() does
                except Exception as e:  # noqa: BLE001 -- any failure means: no copy in that dtype
                    return f"the module could not be copied to {name}: {last_line(e)}"
                self.copies[dtype] = c
            self.active = self.copies[dtype]
        self.active.train(training)
        return ""

    def named_tensors(self, which: str) -> List[Tuple[str, torch.Tensor]]:
        module = self.active if which == "active_parameters" else self.model
        buffers = which == "own_buffers"
        out = []
        for prefix, m in module.named_modules(remove_duplicate=False):
            table = m._buffers if buffers else m._parameters
            for k, t in table.items():
                if t is not None:
                    out.append((f"{prefix}.{k}" if prefix else k, t))
        return out

    def set_parameter(self, name: str, value: torch.Tensor) -> None:
        """The structural pass's redraw (and its undo), in the module and every copy."""
        with torch.no_grad():
            for module in [self.model, *self.copies.values()]:
                owner, leaf = _owner(module, name)
                p = getattr(owner, leaf)
                p.copy_(value.to(dtype=p.dtype, device=p.device))

    def state_items(self) -> List[Tuple[str, Any]]:
        """What forward may change: buffers, plain tensor attributes, and int, float, bool and str
        attributes of every submodule (`training` aside: the audit sets it)."""
        out = []
        for prefix, m in self.active.named_modules():
            for k, b in m._buffers.items():
                if b is not None:
                    out.append((f"{prefix}.{k}" if prefix else k, b))
            for k, v in vars(m).items():
                if k == "training" or k in ("_parameters", "_buffers", "_modules"):
                    continue
                if isinstance(v, torch.nn.Parameter):
                    continue
                if isinstance(v, (torch.Tensor, bool, int, float, str)):
                    out.append((f"{prefix}.{k}" if prefix else k, v))
        return out

    def state_value(self, name: str) -> Any:
        owner, leaf = _owner(self.active, name)
        return getattr(owner, leaf, None)

    def set_state(self, name: str, value: Any) -> None:
        owner, leaf = _owner(self.active, name)
        now = getattr(owner, leaf, None)
        if isinstance(value, torch.Tensor):
            if isinstance(now, torch.Tensor) and now.shape == value.shape and now.dtype == value.dtype:
                with torch.no_grad():
                    now.copy_(value)
            else:
                setattr(owner, leaf, value.clone().to(self.device))
        elif now is not value and now != value:
            setattr(owner, leaf, value)

    def scripted_for_proof(self) -> Any:
        """The module compiled by torch.jit.script (its torch._C.ScriptModule), for the engine's
        train-mode proof from the graph of the module's own code; None when it does not script, or
        when its code asks whether it is being scripted or traced (the graph may then not be the
        code eager runs). The engine also checks that an eval-mode pass draws no random numbers."""
        for cls in {type(m) for m in self.model.modules()}:
            try:
                source = inspect.getsource(cls)
            except (OSError, TypeError):
                continue
            if "is_scripting" in source or "is_tracing" in source or "_get_tracing_state" in source:
                return None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return torch.jit.script(self.model)._c
        except Exception:  # noqa: BLE001 -- most modern model code does not script: no proof then
            return None

    # ---- where a leak enters: the submodules as units (the engine decides; this records and replaces) --
    def units(self) -> List[Tuple[str, str, str, int]]:
        """(path, class name, "Class.forward, file.py:N", parent index) of the module and of each
        submodule, in named_modules() order (parents first; 0 is the module itself)."""
        named = list(self.model.named_modules())
        index = {name: i for i, (name, _) in enumerate(named)}
        out = []
        for name, m in named:
            parent = -1
            if name:
                p = name.rsplit(".", 1)[0] if "." in name else ""
                parent = index.get(p, 0)
            out.append((name, type(m).__name__, _source(m), parent))
        return out

    def call_units(self, kwargs: Dict[str, torch.Tensor], fed: Dict[int, List[torch.Tensor]],
                   held: Dict[int, List[torch.Tensor]]) -> Tuple[Any, List[Tuple[bool, List[torch.Tensor], List[torch.Tensor]]]]:
        """call(kwargs) with each submodule's first call recorded: its tensor inputs and outputs as
        flattened leaves; the tensor inputs of the units in `fed`, and the tensor outputs of those in
        `held`, replaced by the given tensors (and recorded as replaced). Each submodule's forward is
        wrapped for this call only (an instance attribute, which nn.Module.__call__ finds first)."""
        modules = [m for _, m in self.active.named_modules()]
        records: List[Any] = [None] * len(modules)
        patched = []

        def wrap(i: int, original: Any) -> Any:
            def forward(*args: Any, **kw: Any) -> Any:
                leaves, spec = tree_flatten((args, kw))
                at = [k for k, v in enumerate(leaves) if isinstance(v, torch.Tensor)]
                if i in fed:
                    for k, t in zip(at, fed[i]):
                        leaves[k] = t.to(device=leaves[k].device)
                    args, kw = tree_unflatten(leaves, spec)
                y = original(*args, **kw)
                ys, yspec = tree_flatten(y)
                yat = [k for k, v in enumerate(ys) if isinstance(v, torch.Tensor)]
                if i in held:
                    for k, t in zip(yat, held[i]):
                        ys[k] = t.to(device=ys[k].device)
                    y = tree_unflatten(ys, yspec)
                if records[i] is None:
                    records[i] = ([leaves[k].detach().cpu() for k in at], [ys[k].detach().cpu() for k in yat])
                return y
            return forward

        try:
            for i, m in enumerate(modules):
                if i == 0:
                    continue
                had = m.__dict__.get("forward")
                m.__dict__["forward"] = wrap(i, m.forward)
                patched.append((m, had))
            out = self.call(kwargs)
        finally:
            for m, had in patched:
                if had is None:
                    del m.__dict__["forward"]
                else:
                    m.__dict__["forward"] = had
        return out, [(r is not None, r[0] if r else [], r[1] if r else []) for r in records]

    # ---- the incremental path: the module's init_state(batch) / step(x, state) ----------------------
    def incremental_missing(self) -> str:
        """The CLI's line for a module without the incremental API ("" when it has one); the contract
        is the same, as plain Python methods (no @torch.jit.export, any state object)."""
        has_init = callable(getattr(self.model, "init_state", None))
        has_step = callable(getattr(self.model, "step", None))
        if has_init and has_step:
            return ""
        what = "init_state and no step" if not has_init and not has_step else ("init_state" if not has_init else "step")
        return (f"no incremental API: the module has no {what} method; --incremental needs "
                "init_state(self, batch: int) -> state and step(self, x: Tensor, state) -> Tuple[Tensor, state] "
                "(methods of the module)")

    def invoke(self, method: str, a: Any, b: Any) -> Any:
        f = getattr(self.active, method)
        if method == "init_state":
            return f(a)
        if isinstance(a, torch.Tensor) and self.device.type != "cpu":
            a = a.to(self.device)
        y, state = f(a, b)
        return (normalize_output(y), state)
