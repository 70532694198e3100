"""Asserts for test suites (pytest or unittest, no plugin): the audit as an assertion."""
from typing import Any, Dict, Optional, Sequence, Union

import torch


def _evidence(report: Any, kinds: Optional[Sequence[str]] = None) -> str:
    for v in report.violations:
        if kinds is not None and v.get("kind") not in kinds:
            continue
        ev: Dict[str, Any] = v.get("evidence") or {}
        parts = [f"first evidence ({v.get('kind')})"]
        if ev.get("position", -1) >= 0:
            parts.append(f"output position {ev['position']}")
        if ev.get("cut", -1) >= 0:
            parts.append(f"moved by inputs from position {ev['cut']} on"
                         if v.get("kind") != "window" else f"moved by inputs before position {ev['cut']}")
        if "effect" in ev:
            parts.append(f"by {ev['effect']:.3g} of the output scale")
        line = ", ".join(parts)
        return line + (f": {ev['text']}" if ev.get("text") else "")
    return ""


def assert_causal(model: torch.nn.Module, inputs: Union[str, Sequence[str]], seq_len: int, **options: Any):
    """Audits `model` (grassaudit.audit, same arguments) and raises AssertionError unless every
    property of the contract holds; the message is the CLI's summary and the first evidence (the
    output position, the future position that moved it, by how much). Returns the report."""
    from . import audit
    report = audit(model, inputs=inputs, seq_len=seq_len, **options)
    if not report.causal:
        raise AssertionError(f"{str(report).rstrip()}\n{_evidence(report)}".rstrip())
    return report


def assert_incremental_consistent(model: torch.nn.Module, inputs: Union[str, Sequence[str]], seq_len: int,
                                  **options: Any):
    """The incremental path (model.init_state(batch) -> state, model.step(x, state) -> (y, state))
    against forward, as `grassaudit audit --incremental`: AssertionError with the summary and the
    first evidence when any violation is found. Returns the report."""
    from . import audit
    report = audit(model, inputs=inputs, seq_len=seq_len, incremental=True, **options)
    if not report.causal:
        raise AssertionError(f"{str(report).rstrip()}\n{_evidence(report)}".rstrip())
    return report
