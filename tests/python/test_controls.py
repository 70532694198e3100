"""The audit controls (reference/make_audit_controls.py) as eager modules, each against its
brute-force expectation: the generator re-derives every verdict and horizon by brute force on the
saved file and refuses to write one that disagrees, and the eager module built with the same seed
has the same weights."""
import pytest
import torch

import grassaudit
import make_audit_controls as controls


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
    if case["rounding_only"] is not None:
        assert got["rounding_only"] == case["rounding_only"]
    if case["violations"] is not None:
        assert [v["kind"] for v in got["violations"]] == case["violations"]
    if case["train_from_eval"] is not None:  # the proof, read from the scripted module's graph
        assert (got["train_mode_proof"] or {}).get("train_from_eval", False) == case["train_from_eval"]
    for key in ("length_dependent", "batch_coupled", "past_horizon"):
        if case[key] is not None:
            assert got[key] == case[key], key
