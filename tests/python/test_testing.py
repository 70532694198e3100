"""grassaudit.testing in a test suite, as the README shows it: one assert per model, parametrised."""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from grassaudit.testing import assert_causal


class Conv(nn.Module):
    """A kernel-3 convolution over time, padded (left, right)."""

    def __init__(self, left: int, right: int):
        super().__init__()
        self.conv = nn.Conv1d(4, 4, 3)
        self.pad = [left, right]

    def forward(self, x):  # x [B, L, 4]
        return self.conv(F.pad(x.transpose(1, 2), self.pad)).transpose(1, 2)


@pytest.mark.parametrize("model", [Conv(2, 0), nn.GRU(4, 8, batch_first=True)], ids=["left-padded", "gru"])
def test_causal_models_pass(model):
    report = assert_causal(model, inputs=["features:4"], seq_len=16)
    assert report.causal


def test_leaky_model_fails_with_evidence():
    torch.manual_seed(0)
    with pytest.raises(AssertionError) as info:
        assert_causal(Conv(1, 1), inputs=["features:4"], seq_len=16)
    message = str(info.value)
    assert message.startswith("nn.Module Conv (features:4): LEAKY (leak horizon 1,")
    evidence, site = message.splitlines()[-2:]
    assert evidence.startswith("first evidence (future): output position ") and "when the inputs from position " in evidence
    position = int(evidence.split("output position ")[1].split()[0])
    cut = int(evidence.split("from position ")[1].split()[0])
    assert cut == position + 1  # the future position that moved it: one step ahead
    # Where it enters: Conv pads in its own forward, so the model's own code, one step ahead.
    assert site.startswith("leak enters at the model's own forward (Conv.forward, test_testing.py:"), site
    assert site.endswith(": its own horizon 1"), site


def test_declared_lookahead_passes():
    assert_causal(Conv(1, 1), inputs=["features:4"], seq_len=16, allow_lookahead=1)
