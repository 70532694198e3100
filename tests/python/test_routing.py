"""Discrete routing (reference/make_routing_controls.py) as eager modules: the audit's horizons
through expert choice, capacity queues, block selection, top-k attention and sort bucketing equal
a float64 brute force of single-position replacements, computed here at the main length (and
over the whole schedule by the generator, audits/routing.json); the eager module built with the
generator's seed has the saved file's weights."""
import json
import os

import pytest
import torch

import grassaudit
import make_routing_controls as routing

_SUITE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "audits",
                      "routing.json")
with open(_SUITE) as f:
    _CASES = {c["name"]: c for c in json.load(f)["cases"]}


def _cases():
    for i, (name, _file, build, _how, leak_class) in enumerate(routing.FAMILIES):
        for L in routing.LENGTHS:
            case = _CASES[f"{name}-L{L}"]
            yield pytest.param(i, build, leak_class, L, case["expect"], case["checked"]["tolerance_horizon"],
                               id=f"{name}-L{L}")


@pytest.mark.parametrize("index,build,leak_class,L,expect,tol", list(_cases()))
def test_routing_family(index, build, leak_class, L, expect, tol):
    torch.manual_seed(100 + index)
    model = build()
    if leak_class != "batch":  # its rows mix: the generator's brute force probes each alone, as the audit does
        brute = routing.brute_force(model.double(), L, tol)
        model.float()
        assert (brute["future"], brute["past"]) == (expect["leak_horizon"], expect["past_horizon"])
    report = grassaudit.audit(model, inputs="tokens:32", seq_len=L, mode="eval")
    assert (report.verdict, report.leak_horizon, report.past_horizon) == \
           (expect["verdict"], expect["leak_horizon"], expect["past_horizon"]), str(report)
    assert [v["kind"] for v in report.violations] == expect["violations"], str(report)
    assert report["discrete_routing"] is not None, str(report)
    assert report["horizon_bound"] == "exact"


def test_a_bound_is_never_a_pass():
    """The causal sort bucketing with a budget too small for its search: a lower bound, which
    proves no contract."""
    names = [f[0] for f in routing.FAMILIES]
    index = names.index("sort-buckets-masked")
    torch.manual_seed(100 + index)
    model = routing.FAMILIES[index][2]()
    report = grassaudit.audit(model, inputs="tokens:32", seq_len=16, mode="eval", routing_budget=64)
    assert report.leak_horizon == 0
    assert report["horizon_bound"] == "lower"
    assert not report.causal
    assert [v["kind"] for v in report.violations] == ["unproven"], str(report)
