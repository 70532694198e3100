"""The audit controls (reference/make_audit_controls.py) as eager modules, each against its
brute-force expectation: the generator re-derives every verdict and horizon by brute force on the
saved file and refuses to write one that disagrees, and the eager module built with the same seed
has the same weights."""
import json
import os
import re

import pytest
import torch

import grassaudit
import make_audit_controls as controls


def _major_minor(version: str) -> str:
    m = re.search(r"(\d+)\.(\d+)", version)
    return f"{m.group(1)}.{m.group(2)}" if m else ""


# rounding_only says whether float32 showed exact zeros: a fact about the float32 kernels of the
# PyTorch that made the controls (the suite's "producer"), not about the model; compared on that
# major.minor only, as the suite runner does (src/audit/audit_suite.cpp).
_SUITE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "audits",
                      "controls.json")
with open(_SUITE) as f:
    _SAME_KERNELS = _major_minor(json.load(f).get("producer", "")) in ("", _major_minor(torch.__version__))


def _cases():
    built = {c["file"]: c for c in controls.CASES if c["build"] is not None}
    for c in controls.CASES:
        # a case that reuses another's file (another contract or length) builds that one
        yield pytest.param(c, built[c["file"]], id=c["name"])


def eager(case):
    torch.manual_seed(case["seed"])
    return case["build"]().eval()


@pytest.mark.parametrize("case,builder", list(_cases()))
def test_control(case, builder):
    model = eager(builder)
    contract = case["contract"]
    report = grassaudit.audit(model, inputs=[case["input"]], seq_len=case["seq_len"],
                              allow_lookahead=contract.get("lookahead", 0), window=contract.get("window"))
    got = report.to_dict()
    assert (report.verdict, report.leak_horizon) == (case["verdict"], case["horizon"]), str(report)
    assert report.causal == (case["verdict"] == "causal")
    horizons = dict(got.get("mode_horizons", {}))
    if horizons:
        assert horizons.get("eval", 0) == case["eval_horizon"], horizons
        assert horizons.get("train", 0) == case["train_horizon"], horizons
    if case["rounding_only"] is not None and _SAME_KERNELS:
        assert got["rounding_only"] == case["rounding_only"]
    if case["violations"] is not None:
        assert [v["kind"] for v in got["violations"]] == case["violations"]
    if case["train_from_eval"] is not None:  # the proof, read from the scripted module's graph
        assert (got["train_mode_proof"] or {}).get("train_from_eval", False) == case["train_from_eval"]
    for key in ("length_dependent", "batch_coupled", "past_horizon"):
        if case[key] is not None:
            assert got[key] == case[key], key
