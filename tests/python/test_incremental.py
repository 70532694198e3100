"""The incremental path (init_state / step as plain methods): the incremental controls
(reference/make_incremental_controls.py) as eager modules, each against its brute-force
expectation, through grassaudit.testing.assert_incremental_consistent."""
import pytest
import torch

import grassaudit
import make_incremental_controls as controls
from grassaudit.testing import assert_incremental_consistent


@pytest.mark.parametrize("case", controls.CASES, ids=[c["name"] for c in controls.CASES])
def test_incremental_control(case):
    torch.manual_seed(case["seed"])
    model = case["build"]().eval()
    if case["consistent"] is None:  # no incremental API: refused with the CLI's line
        with pytest.raises(grassaudit.ModelError) as info:
            assert_incremental_consistent(model, inputs=[case["input"]], seq_len=case["seq_len"])
        assert "no incremental API: the module has no init_state and no step method; --incremental needs" in str(info.value)
        return
    if case["consistent"] and case["isolation"]:
        report = assert_incremental_consistent(model, inputs=[case["input"]], seq_len=case["seq_len"])
        assert report.causal
        return
    with pytest.raises(AssertionError) as info:
        assert_incremental_consistent(model, inputs=[case["input"]], seq_len=case["seq_len"])
    message = str(info.value)
    assert "incremental path" in message.splitlines()[0]
    assert message.splitlines()[-1].startswith("first evidence (incremental): ")
