"""Where the leak enters, through the package: the submodule that reads ahead is named by its
named_modules() path (Hugging Face-style attention called with keyword arguments, its mask built
in the model's own forward), and the model's own code ("") where no submodule explains it."""
import math

import pytest
import torch

import grassaudit
import make_audit_controls as controls  # reference/, on the path by conftest.py


class Attention(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.q, self.k, self.v = (torch.nn.Linear(d, d) for _ in range(3))

    def forward(self, hidden_states, attention_mask=None):
        q, k, v = self.q(hidden_states), self.k(hidden_states), self.v(hidden_states)
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]) + attention_mask
        return torch.softmax(scores, dim=-1) @ v


class Layer(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.self_attn = Attention(d)
        self.mlp = torch.nn.Linear(d, d)

    def forward(self, hidden_states, attention_mask=None):
        h = hidden_states + self.self_attn(hidden_states=hidden_states, attention_mask=attention_mask)
        return h + torch.tanh(self.mlp(h))


class Decoder(torch.nn.Module):
    """A decoder whose mask is one of the bugs people ship (or the right one)."""

    def __init__(self, mask, roll=False, layers=2, d=16, vocab=50):
        super().__init__()
        torch.manual_seed(0)
        self.embed_tokens = torch.nn.Embedding(vocab, d)
        self.layers = torch.nn.ModuleList(Layer(d) for _ in range(layers))
        self.mask, self.roll = mask, roll

    def forward(self, input_ids):
        L = input_ids.shape[1]
        i = torch.arange(L).view(L, 1)
        j = torch.arange(L).view(1, L)
        allowed = {"causal": j <= i, "off_by_one": j <= i + 1, "padding_only": torch.ones(L, L, dtype=torch.bool),
                   "symmetric": (i - j).abs() <= 2}[self.mask]
        mask = torch.zeros(L, L).masked_fill(~allowed, float("-inf"))
        h = self.embed_tokens(input_ids)
        for layer in self.layers:
            h = layer(hidden_states=h, attention_mask=mask.to(h.dtype))
        if self.roll:  # a token shift the wrong way, in the model's own code
            h = h + torch.roll(h, -1, dims=1)
        return h


def paths(report):
    return sorted({s["path"] for s in report.leak_sites})


@pytest.mark.parametrize("mask", ["off_by_one", "padding_only", "symmetric"])
def test_a_mask_bug_names_every_attention_module_it_reaches(mask):
    report = grassaudit.audit(Decoder(mask), inputs="tokens:50", seq_len=12)
    assert not report.causal
    assert paths(report) == ["layers.0.self_attn", "layers.1.self_attn"]
    assert all(s["op"] == "Attention" and "Attention.forward" in s["source"] for s in report.leak_sites)


def test_a_token_shift_in_forward_names_the_model_itself():
    report = grassaudit.audit(Decoder("causal", roll=True), inputs="tokens:50", seq_len=12)
    assert not report.causal
    assert paths(report) == [""]


def test_a_causal_model_has_no_sites():
    report = grassaudit.audit(Decoder("causal"), inputs="tokens:50", seq_len=12)
    assert report.causal
    assert report.leak_sites is None


# Every leaky control of audits/controls.json whose generator planted a site, built live from
# reference/make_audit_controls.py and audited through the package (the suite runs the same
# models as TorchScript files): the sites named are the planted ones.
PLANTED = [c for c in controls.CASES if c["leak_sites"] is not None]


def build(case):
    """The case's model: its own builder, or its twin's where both audit one file."""
    make = case["build"] or next(c["build"] for c in controls.CASES if c["file"] == case["file"] and c["build"])
    torch.manual_seed(case["seed"])
    return make().eval()


@pytest.mark.parametrize("case", PLANTED, ids=[c["name"] for c in PLANTED])
def test_each_planted_control_names_its_site(case):
    model = build(case)
    contract = {"allow_lookahead": case["contract"]["lookahead"]} if "lookahead" in case["contract"] else {}
    if "window" in case["contract"]:
        contract["window"] = case["contract"]["window"]
    report = grassaudit.audit(model, inputs=[case["input"]], seq_len=case["seq_len"], mode="both", **contract)
    assert not report.causal
    assert paths(report) == case["leak_sites"]
