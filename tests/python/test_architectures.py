"""torch's own sequence layers as users stack them, each with the verdict its construction implies."""
import pytest
import torch
import torch.nn as nn

import grassaudit


class Encoder(nn.Module):
    """nn.TransformerEncoder over features, with or without the square subsequent mask."""

    def __init__(self, causal: bool):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, dropout=0.1, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, num_layers=2)
        self.causal = causal

    def forward(self, x):
        L = x.size(1)
        mask = torch.triu(torch.full((L, L), float("-inf"), dtype=x.dtype), diagonal=1) if self.causal else None
        return self.enc(x, mask=mask)


class Lstm(nn.Module):
    def __init__(self, bidirectional: bool):
        super().__init__()
        self.rnn = nn.LSTM(8, 8, num_layers=2, batch_first=True, bidirectional=bidirectional, dropout=0.1)

    def forward(self, x):
        return self.rnn(x)  # (output, (h_n, c_n)): only output has [B, L, ...]


class SameConv(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(8, 8, 5, padding="same")

    def forward(self, x):
        return self.conv(x)  # [B, C, T]: time at dimension 2


@pytest.mark.parametrize("make,kwargs,verdict,horizon", [
    (lambda: Encoder(causal=True), {}, "causal", 0),
    (lambda: Encoder(causal=False), {}, "leaky", 11),
    (lambda: Lstm(bidirectional=False), {}, "causal", 0),
    (lambda: Lstm(bidirectional=True), {}, "leaky", 11),
    (SameConv, {"time_axis": 2}, "leaky", 2),
], ids=["transformer-masked", "transformer-unmasked", "lstm", "bilstm", "conv-same-padding"])
def test_torch_layers(make, kwargs, verdict, horizon):
    torch.manual_seed(0)
    model = make()
    report = grassaudit.audit(model, inputs=["features:8"], seq_len=12, **kwargs)
    assert (report.verdict, report.leak_horizon) == (verdict, horizon), str(report)
