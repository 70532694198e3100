"""A Hugging Face-style model written here: two inputs (input_ids, attention_mask), a dict-like
output (an OrderedDict dataclass whose None fields are absent, as transformers' ModelOutput),
hidden states as a tuple, and a key/value cache whose time axis is not dimension 1."""
import dataclasses
import math
from collections import OrderedDict
from typing import Optional, Tuple

import pytest
import torch
import torch.nn as nn

import grassaudit
from grassaudit.testing import assert_causal


class ModelOutput(OrderedDict):
    """transformers.utils.ModelOutput in miniature: a dataclass that is also an OrderedDict of its
    non-None fields."""

    def __post_init__(self):
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if v is not None:
                self[f.name] = v


@dataclasses.dataclass
class CausalLMOutput(ModelOutput):
    loss: Optional[torch.Tensor] = None
    logits: Optional[torch.Tensor] = None
    past_key_values: Optional[Tuple[Tuple[torch.Tensor, torch.Tensor], ...]] = None
    hidden_states: Optional[Tuple[torch.Tensor, ...]] = None


@dataclasses.dataclass
class PlainOutput:  # a dataclass that is not a mapping
    logits: torch.Tensor
    aux: Optional[torch.Tensor] = None


class TinyDecoder(nn.Module):
    def __init__(self, vocab=50, d=16, heads=2, max_len=64, causal=True):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(max_len, d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.heads, self.causal = heads, causal

    def forward(self, input_ids, attention_mask=None, output_hidden_states=True, return_dict=True):
        B, L = input_ids.shape
        h0 = self.wte(input_ids) + self.wpe(torch.arange(L, device=input_ids.device))
        q, k, v = self.qkv(h0).split(h0.size(-1), dim=-1)
        split = lambda t: t.view(B, L, self.heads, -1).transpose(1, 2)  # noqa: E731
        q, k, v = split(q), split(k), split(v)
        s = q @ k.transpose(-1, -2) / math.sqrt(q.size(-1))
        if self.causal:
            s = s.masked_fill(torch.ones(L, L, dtype=torch.bool).triu(1), float("-inf"))
        if attention_mask is not None:  # padding: [B, L] of ones and zeros
            s = s.masked_fill(attention_mask[:, None, None, :] == 0, float("-inf"))
        a = (s.softmax(-1) @ v).transpose(1, 2).reshape(B, L, -1)
        h1 = self.ln(h0 + self.proj(a))
        return CausalLMOutput(logits=self.lm_head(h1), past_key_values=((k, v),),
                              hidden_states=(h0, h1) if output_hidden_states else None)


HF_INPUTS = ["input_ids=tokens:50", "attention_mask=ones"]


def test_causal_decoder_every_leaf():
    torch.manual_seed(0)
    report = grassaudit.audit(TinyDecoder(causal=True), inputs=HF_INPUTS, seq_len=16)
    assert report.causal and report.leak_horizon == 0, str(report)
    leaves = {o["path"]: o for o in report.outputs}
    assert list(leaves) == ['["logits"]', '["past_key_values"][0][0]', '["past_key_values"][0][1]',
                            '["hidden_states"][0]', '["hidden_states"][1]']
    for path in ('["logits"]', '["hidden_states"][0]', '["hidden_states"][1]'):
        assert leaves[path]["verdict"] == "causal", path
    for path in ('["past_key_values"][0][0]', '["past_key_values"][0][1]'):
        assert "time-axis" in leaves[path]["skipped"], leaves[path]  # [B, heads, L, d]: time at 2


def test_unmasked_decoder_leaks_and_is_named():
    torch.manual_seed(0)
    report = grassaudit.audit(TinyDecoder(causal=False), inputs=HF_INPUTS, seq_len=16)
    assert not report.causal and report.leak_horizon == 15
    verdicts = {o["path"]: o.get("verdict") for o in report.outputs if not o.get("skipped")}
    assert verdicts == {'["logits"]': "leaky", '["hidden_states"][0]': "causal", '["hidden_states"][1]': "leaky"}
    with pytest.raises(AssertionError, match=r"first evidence \(future\): output position \d+"):
        assert_causal(TinyDecoder(causal=False), inputs=HF_INPUTS, seq_len=16, mode="eval")


def test_inputs_by_name_and_one_leaf():
    torch.manual_seed(0)
    report = grassaudit.audit(TinyDecoder(), inputs=["attention_mask=ones", "input_ids=tokens:50"], seq_len=12,
                              output='["logits"]', mode="eval")
    assert report.causal
    assert [o["path"] for o in report.outputs if not o.get("skipped")] == ['["logits"]']
    hidden = next(o for o in report.outputs if o["path"] == '["hidden_states"][1]')
    assert hidden["skipped"] == "not selected (--output)"


class PlainDataclassModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 3)

    def forward(self, x):
        y = self.lin(x)
        return PlainOutput(logits=torch.cumsum(y, dim=1))  # aux None: absent, as in a ModelOutput


def test_plain_dataclass_output():
    torch.manual_seed(0)
    report = grassaudit.audit(PlainDataclassModel(), inputs="features:4", seq_len=8)
    assert report.causal
    assert [o["path"] for o in report.outputs] == ['["logits"]']
