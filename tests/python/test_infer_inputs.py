"""grassaudit.audit(model, seq_len=L) without `inputs`: read from the module (token ids from its
first nn.Embedding, features from its first nn.Linear or nn.Conv1d, a mask as ones), said in the
report (inputs_inferred, the summary line), and the same audit as with those inputs given. A
module that does not say enough is a ValueError with one line naming each argument."""
from typing import Optional

import pytest
import torch
import torch.nn as nn

import grassaudit
from grassaudit.testing import assert_causal


class TokenConv(nn.Module):  # the README's model: symmetric padding reads x_{t+1}
    def __init__(self, vocab=37, d=8):
        super().__init__()
        self.emb, self.head = nn.Embedding(vocab, d), nn.Linear(d, vocab)
        self.conv = nn.Conv1d(d, d, 3, padding=1)

    def forward(self, ids):
        return self.head(self.conv(self.emb(ids).transpose(1, 2)).transpose(1, 2))


class Features(nn.Module):  # features [B, T, 5] -> a causal running sum
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(5, 3)

    def forward(self, x):
        return torch.cumsum(self.inp(x), dim=1)


class ChannelsFirst(nn.Module):  # audio [B, 6, T], left-padded: causal
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(6, 2, 3)

    def forward(self, audio):
        return self.conv(nn.functional.pad(audio, (2, 0)))


class HfStyle(nn.Module):  # (input_ids, attention_mask) and a cache left to its default
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(23, 4)
        self.lm_head = nn.Linear(4, 23)

    def forward(self, input_ids, attention_mask, past_key_values: Optional[torch.Tensor] = None):
        h = self.wte(input_ids) * attention_mask.unsqueeze(-1).to(self.wte.weight.dtype)
        return self.lm_head(torch.cumsum(h, dim=1))


def audit(model, inputs=None, **kw):
    return grassaudit.audit(model, inputs=inputs, seq_len=8, trials=1, mode="eval", **kw)


@pytest.mark.parametrize("make,given,kw", [
    (TokenConv, {"ids": "tokens:37"}, {}),
    (Features, {"x": "features:5"}, {}),
    (ChannelsFirst, {"audio": "features:6"}, {"time_axis": 2}),
    (HfStyle, {"input_ids": "tokens:23", "attention_mask": "ones"}, {}),
])
def test_inferred_is_the_audit_with_the_inputs_given(make, given, kw):
    torch.manual_seed(0)
    model = make()
    inferred = audit(model, **kw)
    explicit = audit(model, inputs=[f"{k}={v}" for k, v in given.items()], **kw)
    assert inferred["inputs_inferred"] == given
    assert "inputs_inferred" not in explicit.to_dict()
    line = "  inputs inferred: " + ", ".join(f"{k}={v}" for k, v in given.items()) + "\n"
    assert line in str(inferred)
    assert "inputs inferred" not in str(explicit)
    for key in ("verdict", "leak_horizon", "past_horizon", "violations", "outputs", "target", "probes"):
        assert inferred[key] == explicit[key], key
    assert inferred.verdict == ("leaky" if make is TokenConv else "causal")


def test_assert_causal_takes_no_inputs_either():
    assert_causal(Features(), seq_len=8, trials=1, mode="eval")


class CumMean(nn.Module):  # nothing in it says what x is
    def forward(self, x):
        n = torch.arange(1, x.size(1) + 1, dtype=x.dtype).view(1, -1, 1)
        return x.cumsum(1) / n


class TwoStreams(nn.Module):  # the first layer tells one argument, not the second
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)

    def forward(self, wav, cond, mask):
        return self.a(wav) + cond


class IdsWithoutTable(nn.Module):
    def forward(self, input_ids):
        return input_ids.float().unsqueeze(-1).cumsum(1)


@pytest.mark.parametrize("model,message", [
    (CumMean(), "nn.Module CumMean: cannot infer the inputs: x (Any: pass x=features:C or x=tokens:V (no "
                "nn.Embedding, nn.Linear or nn.Conv1d to read it from)); pass inputs=[...], one per argument"),
    (TwoStreams(), "nn.Module TwoStreams: cannot infer the inputs: wav (Any: features:4), cond (Any: pass "
                   "cond=features:C or cond=tokens:V), mask (Any: ones); pass inputs=[...], one per argument"),
    (IdsWithoutTable(), "nn.Module IdsWithoutTable: cannot infer the inputs: input_ids (Any: pass "
                        "input_ids=tokens:V (the module has no nn.Embedding)); pass inputs=[...], one per argument"),
])
def test_a_module_that_does_not_say_enough_is_one_value_error(model, message):
    with pytest.raises(ValueError) as info:
        audit(model)
    assert str(info.value) == message


def test_seq_len_is_still_required():
    with pytest.raises(ValueError, match="needs seq_len"):
        grassaudit.audit(Features())
