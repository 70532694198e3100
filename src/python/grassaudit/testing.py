"""Asserts for test suites (pytest or unittest, no plugin): the audit as an assertion."""
from typing import Any, Dict, Optional, Sequence, Union

import torch


def _evidence(report: Any) -> str:
    """The first violation's evidence: for a future leak, the output position, the future position
    that moved it and by how much; otherwise the engine's line."""
    for v in report.violations:
        ev: Dict[str, Any] = v.get("evidence") or {}
        kind = v.get("kind")
        if kind in ("future", "structural") and ev.get("position", -1) >= 0 and ev.get("cut", -1) >= 0:
            return (f"first evidence ({kind}): output position {ev['position']} moved by {ev['effect']:.3g} of the "
                    f"output scale when the inputs from position {ev['cut']} on were replaced "
                    f"({ev.get('mode')} mode, L={ev.get('seq_len')}, {ev.get('precision')})")
        if ev.get("text"):
            return f"first evidence ({kind}): {ev['text']}"
        return f"violation: {kind}"
    return ""


def _first_site(report: Any) -> str:
    """Where the leak enters, the first site the audit named: its path ("" is the model's own
    forward code), what it is (its source line or its class) and its own horizon."""
    sites = getattr(report, "leak_sites", None)
    if not sites:
        return ""
    s = sites[0]
    where = s.get("path") or "the model's own forward"
    what = s.get("source") or s.get("op")
    horizon = f": its own horizon {s['horizon']}" if "horizon" in s else ""
    more = f" (and {len(sites) - 1} more)" if len(sites) > 1 else ""
    return f"leak enters at {where}{f' ({what})' if what else ''}{horizon}{more}"


def assert_causal(model: torch.nn.Module, inputs: Union[None, str, Sequence[str]] = None, seq_len: Optional[int] = None,
                  **options: Any):
    """Audits `model` (grassaudit.audit, same arguments) and raises AssertionError unless every
    property of the contract holds; the message is the CLI's summary, the first evidence (the
    output position, the future position that moved it, by how much) and the first leak site
    (the submodule where the leak enters, when one was named). Returns the report."""
    from . import audit
    report = audit(model, inputs=inputs, seq_len=seq_len, **options)
    if not report.causal:
        raise AssertionError(f"{str(report).rstrip()}\n{_evidence(report)}\n{_first_site(report)}".rstrip())
    return report


def assert_incremental_consistent(model: torch.nn.Module, inputs: Union[None, str, Sequence[str]] = None,
                                  seq_len: Optional[int] = None, **options: Any):
    """The incremental path (model.init_state(batch) -> state, model.step(x, state) -> (y, state))
    against forward, as `grassaudit audit --incremental`: AssertionError with the summary and the
    first evidence when any violation is found. Returns the report."""
    from . import audit
    report = audit(model, inputs=inputs, seq_len=seq_len, incremental=True, **options)
    if not report.causal:
        raise AssertionError(f"{str(report).rstrip()}\n{_evidence(report)}".rstrip())
    return report
