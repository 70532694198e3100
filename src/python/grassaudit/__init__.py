"""grassaudit: the causality audit of the grassaudit CLI, run in-process on a live torch.nn.Module.

    import grassaudit
    report = grassaudit.audit(model, inputs=["tokens:64"], seq_len=64)
    print(report)                 # the CLI's text summary
    report.causal, report.leak_horizon, report.to_dict()   # to_dict(): the CLI's --json

The engine is the CLI's C++ code (src/audit), compiled into grassaudit._engine; this package
only hands it the module. See src/python/README.md.
"""
import html
import json
import os
from typing import Any, Dict, List, Optional, Sequence, Union

import torch

from . import _engine

try:  # the property search's RapidCheck runner: its own module (src/python/setup.py says why)
    from . import _property_runner
    _engine.set_property_runner(_property_runner.search)
except ImportError as e:
    _engine.set_property_runner(None, f"the package was built without its RapidCheck runner: {e}")
from ._adapter import ModuleAdapter
from ._infer import infer_inputs
from ._preserve import preserved

__all__ = ["audit", "Report", "AuditError", "ModelError", "ForwardError", "RefusedError"]
__version__ = "0.3.0"  # the CLI's (CMakeLists.txt project VERSION)


class AuditError(Exception):
    """The audit could not take the model (the CLI's exit 2 for a model, with its one line)."""


class ModelError(AuditError):
    """The model is not one the audit can take: its outputs, its dtype, state its forward changes."""


class RefusedError(ModelError):
    """No verdict is possible for the model, for `reason`: "state" (forward changes state it keeps
    between calls), "nondeterministic" (the same input gives different outputs) or "incremental"
    (incremental=True on a module without init_state / step). The message is the CLI's line."""

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason


class ForwardError(ModelError):
    """The model's forward (or init_state / step) raised; the message ends with the Python
    traceback's last line, and __cause__ is the exception itself."""


class Report:
    """The result of one audit: the CLI's JSON (to_dict()) and text summary (str())."""

    def __init__(self, json_text: str, summary: str):
        self._json_text = json_text
        self._dict = json.loads(json_text)
        self._summary = summary

    def to_dict(self) -> Dict[str, Any]:
        """Exactly what `grassaudit audit --json` writes (a fresh copy)."""
        return json.loads(self._json_text)

    def to_json(self) -> str:
        """The text `grassaudit audit --json FILE` writes into FILE."""
        return self._json_text

    @property
    def verdict(self) -> str:
        return self._dict["verdict"]

    @property
    def causal(self) -> bool:
        """True when every property of the contract holds (the CLI's exit status 0)."""
        return self._dict["verdict"] != "leaky"

    @property
    def leak_horizon(self) -> int:
        return self._dict["leak_horizon"]

    @property
    def past_horizon(self) -> Optional[int]:
        return self._dict.get("past_horizon")

    @property
    def horizon_bound(self) -> str:
        """"exact", or "lower" where a routing search ended on its budget (the horizon is then a
        lower bound, and the contract is not proven)."""
        return self._dict.get("horizon_bound", "exact")

    @property
    def discrete_routing(self) -> Optional[Dict[str, Any]]:
        """A selection over time the audit saw (ops, cells that switched between trials) and the
        searches it ran beyond the tables' horizons; None when none showed."""
        return self._dict.get("discrete_routing")

    @property
    def leak_sites(self) -> Optional[List[Dict[str, Any]]]:
        """Where the leak enters: the smallest submodules (by their named_modules() path; "" for
        the model's own forward code) that read their own inputs' future, each with its own
        horizon; None when not looked for (a causal verdict, no_localise=True)."""
        return self._dict.get("leak_sites")

    @property
    def violations(self) -> List[Dict[str, Any]]:
        return self._dict.get("violations", [])

    @property
    def lengths_probed(self) -> List[int]:
        """The sequence lengths the audit ran at."""
        return list(self._dict["lengths_probed"]["lengths"])

    @property
    def lengths_skipped(self) -> List[Dict[str, Any]]:
        """Lengths of the schedule where the model does not run, each {length, reason} (the model
        raised, or returned NaN or Inf there); empty when it ran at every one."""
        return self._dict.get("lengths_skipped", [])

    @property
    def outputs(self) -> List[Dict[str, Any]]:
        """Every output leaf, audited or skipped (one entry, path "", for a one-tensor output)."""
        return self._dict.get("outputs", [])

    def __getitem__(self, key: str) -> Any:
        return self._dict[key]

    def __str__(self) -> str:
        return self._summary

    def __repr__(self) -> str:
        return f"<grassaudit.Report {self.verdict} leak_horizon={self.leak_horizon}>"

    def plot(self, path: Optional[str] = None) -> Optional[bytes]:
        """The leak map as a picture, drawn as `grassaudit audit --leak-map FILE` draws it (gnuplot,
        by the engine: the same bytes for the same JSON). path ending in .svg or .png: written there
        (atomically), None returned; no path: the SVG's bytes. AuditError when the report has no
        leak map, gnuplot is missing or the path names another format."""
        ext = "svg" if path is None else os.path.splitext(path)[1].lower().lstrip(".")
        if ext not in ("svg", "png"):
            raise AuditError(f"plot: {path}: the name must end in .svg or .png")
        try:
            picture = _engine.leak_map_picture(self._json_text, ext)
        except RuntimeError as e:
            raise AuditError(f"plot: {e}") from None
        if path is None:
            return picture
        tmp = f"{path}.tmp.{os.getpid()}"
        try:
            with open(tmp, "wb") as f:
                f.write(picture)
            os.replace(tmp, path)
        except OSError as e:
            if os.path.exists(tmp):
                os.remove(tmp)
            raise AuditError(f"plot: cannot write {path}: {e.strerror}") from None
        return None

    def _repr_html_(self) -> str:
        """A notebook shows the summary and, where gnuplot is at hand, the leak map inline."""
        body = "<pre>" + html.escape(self._summary) + "</pre>"
        if "leak_map" in self._dict:
            try:
                body += _engine.leak_map_picture(self._json_text, "svg").decode("utf-8")
            except RuntimeError as e:
                body += "<p>(" + html.escape(str(e)) + ")</p>"
        return body


def _seq_lens(value: Union[None, str, Sequence[int]]) -> List[int]:
    if value is None:
        return []
    if isinstance(value, str):  # the CLI's form, "64,63,32"
        try:
            return [int(v) for v in value.split(",")]
        except ValueError:
            raise ValueError(f"--seq-lens '{value}': a comma-separated list of integers") from None
    return [int(v) for v in value]


def audit(model: torch.nn.Module, inputs: Union[None, str, Sequence[str]] = None, seq_len: Optional[int] = None, *,
          seq_lens: Union[None, str, Sequence[int]] = None, time_axis: int = 1, mode: str = "both",
          output: Optional[str] = None, allow_lookahead: int = 0, window: Optional[int] = None,
          batch: int = 32, trials: int = 3, seed: int = 1234, feature_scale: float = 1.0,
          no_gradient_check: bool = False, weights_as_given: bool = False, no_length_check: bool = False,
          no_batch_check: bool = False, no_localise: bool = False, no_train_proof: bool = False,
          property: Optional[int] = None,
          incremental: bool = False, probe_every_row: bool = False, routing_budget: int = 8192,
          threads: Optional[int] = 0,
          device: Union[None, str, torch.device] = None) -> Report:
    """Audits `model` as `grassaudit audit --model FILE` audits a saved one.

    inputs: the CLI's --input values ([NAME=]tokens:V | features:C | ones | zeros), one per
    forward argument, matched to forward's signature in order or by NAME. Left out (None), they are
    read from the module (grassaudit/_infer.py): input_ids-like arguments tokens:V from the first
    nn.Embedding, a mask ones, the other argument from the first nn.Embedding, nn.Linear or
    nn.Conv1d; the report's `inputs_inferred` and its summary say what. The other keywords are
    the CLI's flags by name (--allow-lookahead K is allow_lookahead=K, --no-length-check is
    no_length_check=True; seq_lens takes a list or the CLI's "64,32"). device: where the model runs
    and is probed ("cpu", "cuda", "cuda:N", a torch.device); None audits it where it is (its first
    parameter's device).

    The model comes back as it was given: parameters and buffers bit for bit, dtype, device,
    train/eval mode, requires_grad flags, attributes, and torch's RNG state; also when the audit
    raises or is interrupted.

    Raises ValueError for bad arguments, ModelError (an AuditError) for a model the audit cannot
    take, ForwardError (a ModelError) when forward raises; each with the CLI's one-line message.
    """
    if not isinstance(model, torch.nn.Module):
        raise ValueError(f"grassaudit.audit takes a torch.nn.Module, got {type(model).__name__}")
    if isinstance(model, torch.jit.ScriptModule):
        raise ValueError("grassaudit.audit takes an eager torch.nn.Module, got a TorchScript module: pass the module "
                         "before torch.jit.script, or save it (torch.jit.save) and run grassaudit audit --model FILE")
    if seq_len is None:
        raise ValueError("grassaudit.audit needs seq_len (the sequence length L)")
    inferred = None
    if inputs is None:
        inferred = infer_inputs(model, f"nn.Module {type(model).__name__}")
        inputs = [f"{name}={kind}" for name, kind in inferred]
    if isinstance(inputs, str):
        inputs = [inputs]
    options: Dict[str, Any] = dict(
        seq_lens=_seq_lens(seq_lens), time_axis=int(time_axis), mode=mode, output=output,
        allow_lookahead=int(allow_lookahead), window=None if window is None else int(window), batch=int(batch),
        trials=int(trials), seed=int(seed), feature_scale=float(feature_scale),
        no_gradient_check=bool(no_gradient_check), weights_as_given=bool(weights_as_given),
        no_length_check=bool(no_length_check), no_batch_check=bool(no_batch_check), no_localise=bool(no_localise),
        no_train_proof=bool(no_train_proof), property=None if property is None else int(property),
        incremental=bool(incremental), probe_every_row=bool(probe_every_row), routing_budget=int(routing_budget),
        device=None if device is None else str(device), inputs_inferred=inferred)
    if threads is not None and int(threads) < 0:
        raise ValueError(f"--threads must be >= 0 (0 = all cores), got {threads}")
    adapter = ModuleAdapter(model)
    on_cuda = (options["device"] or adapter.device_name()).startswith("cuda")
    with preserved(model, threads=threads or None, cuda=on_cuda):
        got = _engine.run(adapter, [str(i) for i in inputs], int(seq_len), options)
    if got["ok"]:
        return Report(got["json"], got["summary"])
    kind, message, cause = got["kind"], got["message"], got["cause"]
    if kind == "value":
        raise ValueError(message)
    if kind == "refused":
        raise RefusedError(message, got["reason"]) from None
    error = ForwardError(message) if kind == "forward" else ModelError(message)
    if cause is not None:
        raise error from cause
    raise error from None


from . import testing  # noqa: E402  (grassaudit.testing needs audit above)
