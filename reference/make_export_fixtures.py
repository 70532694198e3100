#!/usr/bin/python3
"""torch.export archives for the audit's torch.export target (src/formats/export/).

Run with PyTorch 2.6 (Debian 13's python3-torch, in the root of scripts/debian13-root.sh):
    bash scripts/test-debian13.sh --run python3 reference/make_export_fixtures.py [--keep]
--keep uses the archives already in audits/export as they are and exports only the missing ones.

Writes
  audits/export/*.pt2        small models saved by torch.export.save (PyTorch 2.6's flat layout),
                             exported with a dynamic batch and sequence dimension (Dim), or with
                             static shapes (`_static`: length 16; one at batch 1 as well), and one
                             archive in the packaged PT2 layout of PyTorch 2.8+ (`_packaged`),
                             made here from a 2.6 export's contents to the published PT2 archive
                             spec (docs.pytorch.org/docs/stable/export/pt2_archive)
  audits/export/outputs.pt   torch.save dict: `<name>__input` (int64 ids) and `<name>__output`
                             (`<name>__output__<key>` for a dict output), each file's float32
                             output under PyTorch 2.6 on that input, with oneDNN off (its
                             float32 LSTM differs by CPU): the C++ interpreter must
                             reproduce it (1e-5 relative) on LibTorch 1.13 and 2.6; where 2.6's
                             float32 kernel departs from its own float64 output by more than 1e-4
                             (the CPU LSTM), `<name>__output_math` holds the float64 output, which
                             LibTorch 1.13 is compared with instead
  audits/export.json         the audit suite of these files; every expectation re-derived here by
                             brute force on the saved file (torch.export.load(...).module(),
                             float64, each position perturbed alone, every length of the schedule;
                             make_audit_controls.py's input draws, perturbations and tolerance)
The script aborts (exit 1) when a declared expectation disagrees with the brute force.
"""
import contextlib
import io
import json
import os
import sys
import zipfile
from typing import Dict, List

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.export import Dim

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import make_audit_controls as mac  # noqa: E402  (input draws, perturbations, schedule, tolerance)

AUDITS = os.path.join(ROOT, "audits")
OUT = os.path.join(AUDITS, "export")
VOCAB, D, HEADS, MAX_LEN = 64, 16, 2, 64
SEQ_LEN = 16      # the audit length of every case (and the static exports' length)
OUTPUT_LEN = 12   # the fixed input whose 2.6 output is committed (dynamic exports)


class TokenLM(nn.Module):
    """ids [B, L] -> logits [B, L, VOCAB] around one mixer [B, L, D] -> [B, L, D]."""

    def __init__(self, mixer: nn.Module):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D)
        self.mixer = mixer
        self.head = nn.Linear(D, VOCAB)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = self.emb(ids)
        return self.head(h + self.mixer(h))


class FeatureLM(nn.Module):
    """features [B, L, 4] -> [B, L, 2] around one mixer [B, L, D] -> [B, L, D] (the gradient method runs
    on feature inputs)."""

    def __init__(self, mixer: nn.Module):
        super().__init__()
        self.inp = nn.Linear(4, D)
        self.mixer = mixer
        self.out = nn.Linear(D, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.inp(x)
        return self.out(h + self.mixer(h))


class Sdpa(nn.Module):
    """F.scaled_dot_product_attention. mask: causal (is_causal) | none | bool (tril, true = attend)
    | off_by_one (a bool tril(1): each position also sees the next one)."""

    def __init__(self, mask: str):
        super().__init__()
        self.mask = mask
        self.qkv = nn.Linear(D, 3 * D)
        self.o = nn.Linear(D, D)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        B, L, _ = h.shape
        q, k, v = self.qkv(h).view(B, L, 3, HEADS, D // HEADS).permute(2, 0, 3, 1, 4).unbind(0)
        if self.mask == "causal":
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        elif self.mask in ("bool", "off_by_one"):
            m = torch.ones(L, L, dtype=torch.bool, device=h.device).tril(1 if self.mask == "off_by_one" else 0)
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=m)
        else:
            y = F.scaled_dot_product_attention(q, k, v)
        return self.o(y.transpose(1, 2).reshape(B, L, D))


class GptBlock(nn.Module):
    """A pre-norm GPT block: LayerNorm, causal SDPA attention, LayerNorm, GELU MLP, residuals."""

    def __init__(self, causal: bool = True):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
        self.attn = Sdpa("causal" if causal else "none")
        self.mlp = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D))

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        h = h + self.attn(self.ln1(h))
        return h + self.mlp(self.ln2(h))


class RopeGqa(nn.Module):
    """Rotary position embedding (cos/sin computed from the length) and grouped-query attention
    (4 query heads, 1 key/value head, enable_gqa), causal or not."""

    def __init__(self, causal: bool):
        super().__init__()
        self.causal = causal
        self.hq, self.e = 4, D // 4
        self.q = nn.Linear(D, D)
        self.kv = nn.Linear(D, 2 * self.e)
        self.o = nn.Linear(D, D)

    def rope(self, x: torch.Tensor) -> torch.Tensor:
        L, half = x.size(-2), self.e // 2
        inv = 1.0 / (10000.0 ** (torch.arange(half, device=x.device).to(x.dtype) / half))
        ang = torch.arange(L, device=x.device).to(x.dtype)[:, None] * inv[None, :]
        cos, sin = ang.cos(), ang.sin()
        x1, x2 = x[..., :half], x[..., half:]
        return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        B, L, _ = h.shape
        q = self.q(h).view(B, L, self.hq, self.e).transpose(1, 2)
        k, v = self.kv(h).view(B, L, 2, 1, self.e).unbind(2)
        k, v = k.transpose(1, 2), v.transpose(1, 2)
        y = F.scaled_dot_product_attention(self.rope(q), self.rope(k), v, is_causal=self.causal, enable_gqa=True)
        return self.o(y.transpose(1, 2).reshape(B, L, D))


class Conv(nn.Module):
    """Conv1d (kernel 3) along time: causal (left padding 2) or same-padded (1 each side: reads x_{t+1})."""

    def __init__(self, causal: bool):
        super().__init__()
        self.causal = causal
        self.conv = nn.Conv1d(D, D, 3, padding=0 if causal else 1)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        u = h.transpose(1, 2)
        if self.causal:
            u = F.pad(u, [2, 0])
        return self.conv(u).transpose(1, 2)


class Rnn(nn.Module):
    """nn.GRU (causal) or a bidirectional nn.LSTM (its backward direction reads the future)."""

    def __init__(self, kind: str):
        super().__init__()
        self.rnn = nn.GRU(D, D, batch_first=True) if kind == "gru" else nn.LSTM(D, D // 2, batch_first=True,
                                                                               bidirectional=True)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.rnn(h)[0]


class Cumsum(nn.Module):
    """A running sum over time (a linear recurrence), or its flipped twin (a sum over the future,
    divided by the length: a SymInt divisor, which the interpreter passes as a wrapped number)."""

    def __init__(self, flipped: bool):
        super().__init__()
        self.flipped = flipped
        self.lin = nn.Linear(D, D)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        u = self.lin(h)
        if self.flipped:
            return u.flip(1).cumsum(1).flip(1) / h.size(1)
        return u.cumsum(1) * 0.1  # not / L: that would make y_t depend on the length


class TwoInputs(nn.Module):
    """forward(ids, attention_mask) -> {"logits", "hidden"}: masked causal attention, a dict output."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D)
        self.block = GptBlock(causal=True)
        self.head = nn.Linear(D, VOCAB)

    def forward(self, ids: torch.Tensor, attention_mask: torch.Tensor) -> Dict[str, torch.Tensor]:
        h = self.emb(ids) * attention_mask.unsqueeze(-1).to(self.emb.weight.dtype)
        h = self.block(h)
        return {"logits": self.head(h), "hidden": h}


class MaskedFillAttention(nn.Module):
    """Attention written out by hand, as many user models do: scores, masked_fill(-inf) above the
    diagonal (or, `shifted`, above the first superdiagonal: each position sees the next one),
    softmax. The -inf goes into the archive's JSON as Python writes it: a bare -Infinity."""

    def __init__(self, shifted: bool):
        super().__init__()
        self.shifted = shifted
        self.qkv = nn.Linear(D, 3 * D)
        self.o = nn.Linear(D, D)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        B, L, _ = h.shape
        q, k, v = self.qkv(h).split(D, dim=-1)
        s = q @ k.transpose(1, 2) / (D ** 0.5)
        above = torch.ones(L, L, dtype=torch.bool, device=h.device).triu(2 if self.shifted else 1)
        s = s.masked_fill(above, float("-inf"))
        return self.o(torch.softmax(s, -1) @ v)


class Cond(nn.Module):
    """torch.cond on a buffer flag (1: the first branch runs): a causal running sum, and as the other
    branch its flipped twin. `leaky_taken` swaps them, so the branch that runs reads the future."""

    def __init__(self, leaky_taken: bool):
        super().__init__()
        self.leaky_taken = leaky_taken
        self.lin = nn.Linear(D, D)
        self.register_buffer("flag", torch.ones(()))

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        def causal(x: torch.Tensor) -> torch.Tensor:
            return self.lin(x).cumsum(1) * 0.1

        def flipped(x: torch.Tensor) -> torch.Tensor:
            return self.lin(x).flip(1).cumsum(1).flip(1) * 0.1

        first, second = (flipped, causal) if self.leaky_taken else (causal, flipped)
        return torch.cond(self.flag > 0, first, second, (h,))


class WhileLoop(nn.Module):
    """torch's while_loop: three rounds of h <- h + 0.1 * cumsum(lin(h)) over time (causal), or over
    the flipped sequence (leaky)."""

    def __init__(self, flipped: bool):
        super().__init__()
        self.flipped = flipped
        self.lin = nn.Linear(D, D)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        from torch._higher_order_ops.while_loop import while_loop
        w, b, flipped = self.lin.weight, self.lin.bias, self.flipped

        def cond(i, x):
            return i < 3

        def body(i, x):
            u = F.linear(x, w, b)
            s = u.flip(1).cumsum(1).flip(1) if flipped else u.cumsum(1)
            return i + 1, x + 0.1 * s

        return while_loop(cond, body, (torch.zeros((), dtype=torch.int64), h))[1]


class Scan(nn.Module):
    """torch's scan over time: the running sum carried forward (causal), or with reverse=True (each
    position sums its future: leaky)."""

    def __init__(self, reverse: bool):
        super().__init__()
        self.reverse = reverse

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        from torch._higher_order_ops.scan import scan

        def combine(carry, x_t):
            nxt = carry + x_t
            return nxt, nxt * 0.1

        ys = scan(combine, torch.zeros_like(h[:, 0]), h, dim=1, reverse=self.reverse)[1]
        return ys.transpose(0, 1)  # PyTorch 2.6 stacks the outputs along a new first dimension


class MapRows(nn.Module):
    """functorch's control-flow map over the batch: each sequence's running sum (causal), or its
    flipped twin (leaky)."""

    def __init__(self, flipped: bool):
        super().__init__()
        self.flipped = flipped

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        from functorch.experimental.control_flow import map as cf_map
        return cf_map(_flipped_row_sum if self.flipped else _row_sum, h)


def _row_sum(row: torch.Tensor) -> torch.Tensor:
    return row.cumsum(0) * 0.1


def _flipped_row_sum(row: torch.Tensor) -> torch.Tensor:
    return row.flip(0).cumsum(0).flip(0) * 0.1


class NoGrad(nn.Module):
    """A linear map under torch.no_grad() (wrap_with_set_grad_enabled in the graph) beside a causal
    running sum; `flipped`: the sum under no_grad runs over the future, which no gradient shows."""

    def __init__(self, flipped: bool):
        super().__init__()
        self.flipped = flipped
        self.lin = nn.Linear(D, D)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            u = self.lin(h)
            if self.flipped:
                u = u.flip(1).cumsum(1).flip(1) * 0.1
        return u + h.cumsum(1) * 0.1


class Guarded(nn.Module):
    """Attention through a registered 128 x 128 tril mask sliced [:T, :T] (the exporter proves
    T <= 128), plus a max over the four positions up to each one (unfold) or, leaky, a top-4 over
    the whole sequence: either needs T >= 4, a guard the exporter adds on its own (Dim.AUTO)."""

    def __init__(self, leaky: bool):
        super().__init__()
        self.leaky = leaky
        self.q = nn.Linear(D, D)
        self.register_buffer("mask", torch.tril(torch.ones(128, 128, dtype=torch.bool)))

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        T = h.shape[1]
        att = (self.q(h) @ h.transpose(1, 2)) / D ** 0.5
        u = att.masked_fill(~self.mask[:T, :T], float("-inf")).softmax(-1) @ h
        if self.leaky:
            extra = torch.topk(u, 4, dim=1).values.mean(1, keepdim=True)
        else:
            extra = torch.cat([u[:, :3], u.unfold(1, 4, 1).amax(-1)], 1)
        return u + 0.5 * extra


def C(name, build, verdict, horizon, why, static=False, batch=2, inputs=("tokens:64",), zero_o=None,
      no_grad=False, shapes=None, leak_sites=None):
    """no_grad: exported under torch.no_grad() (PyTorch 2.6 exports while_loop, scan and map only
    without autograd: a body whose outputs require grad is refused or not traced). shapes: the
    dynamic dimensions, "auto" (Dim.AUTO: the exporter proves the ranges, with the guards it adds)
    or {"batch": (min, max)}; default Dim("batch", 1, 4096) and Dim("seq", 2, MAX_LEN). leak_sites: the
    module paths the builder planted the future leak in (the localise check names them), written to the
    suite as stated."""
    return dict(name=name, build=build, verdict=verdict, horizon=horizon, why=why, static=static, batch=batch,
                inputs=list(inputs), zero_o=zero_o, no_grad=no_grad, shapes=shapes, leak_sites=leak_sites)


L1 = SEQ_LEN - 1
CASES = [
    C("sdpa-is-causal", lambda: TokenLM(Sdpa("causal")), "causal", 0, "F.scaled_dot_product_attention(is_causal=True)"),
    C("sdpa-no-mask", lambda: TokenLM(Sdpa("none")), "leaky", L1, "F.scaled_dot_product_attention without a mask",
      leak_sites=["mixer"]),
    C("sdpa-bool-mask", lambda: TokenLM(Sdpa("bool")), "causal", 0, "a boolean tril attn_mask (true = attend)"),
    C("sdpa-off-by-one", lambda: TokenLM(Sdpa("off_by_one")), "leaky", 1,
      "a boolean mask built with tril(1): each position sees the next one", leak_sites=["mixer"]),
    C("gpt-block", lambda: TokenLM(GptBlock(True)), "causal", 0, "a pre-norm GPT block with causal SDPA"),
    C("gpt-block-no-mask", lambda: TokenLM(GptBlock(False)), "leaky", L1, "the GPT block without its mask",
      leak_sites=["mixer.attn"]),
    C("gpt-block-static", lambda: TokenLM(GptBlock(True)), "causal", 0,
      "the GPT block exported with static shapes (batch 2, length 16)", static=True),
    C("guarded-window-max", lambda: TokenLM(Guarded(False)), "causal", 0,
      "a sliced 128-row mask buffer and a max over four positions: exported (Dim.AUTO) for seq in [4, 128]",
      shapes="auto"),
    C("guarded-topk", lambda: TokenLM(Guarded(True)), "leaky", L1,
      "a sliced 128-row mask buffer and a top-4 over the sequence: exported (Dim.AUTO) for seq in [4, 128]",
      shapes="auto", leak_sites=["mixer"]),
    C("sdpa-no-mask-batch-2-16", lambda: TokenLM(Sdpa("none")), "leaky", L1,
      "F.scaled_dot_product_attention without a mask, exported for batch sizes [2, 16]", shapes={"batch": (2, 16)},
      leak_sites=["mixer"]),
    C("rope-gqa-causal", lambda: TokenLM(RopeGqa(True)), "causal", 0, "RoPE + grouped-query attention, is_causal"),
    C("rope-gqa-no-mask", lambda: TokenLM(RopeGqa(False)), "leaky", L1, "RoPE + grouped-query attention, no mask",
      leak_sites=["mixer"]),
    C("conv-causal", lambda: TokenLM(Conv(True)), "causal", 0, "Conv1d with left padding 2 (kernel 3)"),
    C("conv-same", lambda: TokenLM(Conv(False)), "leaky", 1, "Conv1d with padding 1 each side: reads x_{t+1}",
      leak_sites=["mixer.conv"]),
    C("features-gpt-block", lambda: FeatureLM(GptBlock(True)), "causal", 0,
      "the GPT block on real features [B, L, 4] -> [B, L, 2]", inputs=("features:4",)),
    C("features-conv-same", lambda: FeatureLM(Conv(False)), "leaky", 1,
      "the same-padded Conv1d on real features", inputs=("features:4",), leak_sites=["mixer.conv"]),
    # An RNN fixes the sequence length when exported (PyTorch 2.6 specialises it): static exports.
    C("gru", lambda: TokenLM(Rnn("gru")), "causal", 0, "nn.GRU (static shapes: batch 2, length 16)", static=True),
    C("gru-static-batch1", lambda: TokenLM(Rnn("gru")), "causal", 0,
      "nn.GRU exported with static shapes at batch 1 (length 16)", static=True, batch=1),
    # leak_sites left out: planted in mixer.rnn; the file runs 2 rows a call, the audit's localise check does not run
    C("bilstm", lambda: TokenLM(Rnn("lstm")), "leaky", L1, "a bidirectional nn.LSTM (static shapes: batch 2, length 16)",
      static=True),
    C("cumsum", lambda: TokenLM(Cumsum(False)), "causal", 0, "a running sum over time"),
    C("cumsum-flipped", lambda: TokenLM(Cumsum(True)), "leaky", L1, "the running sum over the flipped sequence",
      leak_sites=["mixer"]),
    C("two-inputs-dict", lambda: TwoInputs(), "causal", 0,
      "forward(ids, attention_mask) -> {logits, hidden}: a causal GPT block behind a padding mask",
      inputs=("ids=tokens:64", "attention_mask=ones")),
    # Attention whose output projection is zero-initialised (weight and bias): it adds nothing as given
    # (causal), and the structural pass, which redraws the zero weight, must find what the branch reads.
    C("sdpa-no-mask-zero-o", lambda: TokenLM(Sdpa("none")), "causal", 0,
      "F.scaled_dot_product_attention without a mask behind a zero-initialised output projection", zero_o="leaky"),
    C("sdpa-is-causal-zero-o", lambda: TokenLM(Sdpa("causal")), "causal", 0,
      "its causal twin (is_causal) behind a zero-initialised output projection", zero_o="causal"),
    C("masked-fill-inf", lambda: TokenLM(MaskedFillAttention(False)), "causal", 0,
      "attention by hand: masked_fill(-inf) above the diagonal (a bare -Infinity in the JSON)"),
    C("masked-fill-inf-shifted", lambda: TokenLM(MaskedFillAttention(True)), "leaky", 1,
      "the same with the mask one diagonal too high: each position sees the next one", leak_sites=["mixer"]),
    # Higher-order ops: their sub-graphs travel in the archive and are run by the interpreter.
    C("cond-causal-taken", lambda: TokenLM(Cond(False)), "causal", 0,
      "torch.cond on a buffer: the causal branch runs (the other one reads the future)"),
    C("cond-leaky-taken", lambda: TokenLM(Cond(True)), "leaky", L1,
      "torch.cond on a buffer: the branch that runs sums the future", leak_sites=["mixer"]),
    C("while-loop", lambda: TokenLM(WhileLoop(False)), "causal", 0, "while_loop: three rounds of a running sum",
      static=True, no_grad=True),
    # leak_sites left out (planted in mixer): 2 rows a call, the localise check does not run
    C("while-loop-flipped", lambda: TokenLM(WhileLoop(True)), "leaky", L1,
      "while_loop: three rounds of a sum over the future", static=True, no_grad=True),
    C("scan", lambda: TokenLM(Scan(False)), "causal", 0, "scan over time: a running sum", static=True, no_grad=True),
    # leak_sites left out (planted in mixer): 2 rows a call, the localise check does not run
    C("scan-reverse", lambda: TokenLM(Scan(True)), "leaky", L1, "scan over time with reverse=True: a sum over the future",
      static=True, no_grad=True),
    C("map-rows", lambda: TokenLM(MapRows(False)), "causal", 0, "control-flow map over the batch: a running sum per row",
      static=True, no_grad=True),
    # leak_sites left out (planted in mixer): 2 rows a call, the localise check does not run
    C("map-rows-flipped", lambda: TokenLM(MapRows(True)), "leaky", L1,
      "control-flow map over the batch: a sum over the future per row", static=True, no_grad=True),
    C("no-grad", lambda: FeatureLM(NoGrad(False)), "causal", 0,
      "a linear map under torch.no_grad() beside a running sum (real features)", inputs=("features:4",)),
    C("no-grad-flipped", lambda: FeatureLM(NoGrad(True)), "leaky", L1,
      "a sum over the future under torch.no_grad(): invisible to gradients, seen by perturbation",
      inputs=("features:4",), leak_sites=["mixer"]),
]


def example_args(case: Dict, B: int, L: int, gen: torch.Generator):
    if case["inputs"][0].startswith("features"):
        return (torch.randn(B, L, 4, generator=gen),)
    ids = torch.randint(0, VOCAB, (B, L), generator=gen)
    if len(case["inputs"]) == 2:
        return (ids, torch.ones(B, L, dtype=torch.int64))
    return (ids,)


def export(case: Dict, redrawn: bool = False) -> str:
    """The case's module exported; zero_o cases with mixer.o zeroed, or (redrawn) with its weight
    drawn at N(0, 0.1^2) instead: the model the structural pass audits."""
    torch.manual_seed(sum(map(ord, case["name"])))
    model = case["build"]().eval()
    if case["zero_o"]:
        with torch.no_grad():
            model.mixer.o.bias.zero_()
            model.mixer.o.weight.copy_(torch.randn(D, D) * 0.1 if redrawn else torch.zeros(D, D))
    args = example_args(case, case["batch"], SEQ_LEN, torch.Generator().manual_seed(5))
    with torch.no_grad() if case["no_grad"] else contextlib.nullcontext():
        if case["static"]:
            ep = torch.export.export(model, args)
        else:
            if case["shapes"] == "auto":
                B, L = Dim.AUTO, Dim.AUTO
            else:
                lo, hi = (case["shapes"] or {}).get("batch", (1, 4096))
                B, L = Dim("batch", min=lo, max=hi), Dim("seq", min=2, max=MAX_LEN)
            shapes = tuple({0: B, 1: L} for _ in args)
            ep = torch.export.export(model, args, dynamic_shapes=shapes)
    path = os.path.join(OUT, case["name"].replace("-", "_") + (".redrawn.tmp.pt2" if redrawn else ".pt2"))
    torch.export.save(ep, path)
    return path


def export_or_keep(case: Dict) -> str:
    """--keep: an archive already in audits/export is used as it is (adding a case rewrites no other
    file: a new export of an unchanged model differs in its recorded stack traces only)."""
    path = os.path.join(OUT, case["name"].replace("-", "_") + ".pt2")
    if "--keep" in sys.argv and os.path.exists(path):
        return path
    return export(case)


def load_module(path: str) -> torch.nn.Module:
    """torch.export.load(path).module(), runnable: PyTorch 2.6 reads while_loop's carried and
    additional inputs back as lists, which its own while_loop refuses (it wants tuples)."""
    m = torch.export.load(path).module()
    changed = False
    for node in m.graph.nodes:
        if node.op == "call_function" and node.target is torch.ops.higher_order.while_loop:
            node.args = tuple(tuple(a) if isinstance(a, list) else a for a in node.args)
            changed = True
    if changed:
        m.recompile()
    return m


def leaves(y) -> Dict[str, torch.Tensor]:
    if isinstance(y, dict):
        return {k: v for k, v in y.items()}
    return {"": y}


def run_float64(m, run):
    """run() on the module m already in float64; a graph with float32 baked into a dtype argument (an
    RNN's zeros initial state) fails there: its float32 dtype arguments then read float64, as the
    audit promotes them, and run() is tried again."""
    try:
        return run()
    except RuntimeError:
        for node in m.graph.nodes:
            if node.op == "call_function":
                node.args = tuple(torch.float64 if a is torch.float32 else a for a in node.args)
                node.kwargs = {k: torch.float64 if v is torch.float32 else v for k, v in node.kwargs.items()}
        m.recompile()
        return run()


def declared_lengths(path: str):
    """(lo, hi) of the first input's sequence dimension as the archive declares it: its static size,
    or the range the exporter proved for its symbol (hi None: unbounded)."""
    ep = torch.export.load(path)
    node = next(n for n in ep.graph.nodes if n.op == "placeholder" and n.name in ep.graph_signature.user_inputs)
    size = node.meta["val"].shape[1]
    if isinstance(size, int):
        return size, size
    vr = ep.range_constraints[size.node.expr]
    return int(vr.lower), (int(vr.upper) if vr.upper.is_finite else None)


def brute_force(path: str, case: Dict, L: int) -> Dict:
    """Each position s perturbed alone (2 draws), float64, eval (the graph is fixed: train mode is the
    same graph): the largest D with some y_t moved by x_{t+D}, max over output leaves."""
    m = load_module(path)
    m.to(torch.float64)
    B = case["batch"] if case["static"] else 2
    gen = torch.Generator().manual_seed(1000 + L)
    kind, n = mac.parse_input(case["inputs"][0].split("=")[-1])
    x = mac.make_input(kind, n, B, L, gen, torch.float64)
    rest = example_args(case, B, L, torch.Generator().manual_seed(0))[1:]

    def run(inp):
        with torch.no_grad():
            return {k: v.to(torch.float64).reshape(B, L, -1) for k, v in leaves(m(inp, *rest)).items()}

    y0 = run_float64(m, lambda: run(x))
    horizon = 0
    for s in range(1, L):
        for _ in range(2):
            y = run(mac.perturb(x, kind, n, s, gen))
            for k in y0:
                scale = y0[k].abs().max().item()
                d = (y[k] - y0[k]).abs().amax(dim=(0, 2))[:s] / scale
                dep = (d > mac.TOL_F64).nonzero().flatten()
                if dep.numel():
                    horizon = max(horizon, s - int(dep.min()))
    return dict(horizon=horizon)


def tensor_meta(t: torch.Tensor) -> Dict:
    serde = {torch.float32: 7, torch.float64: 8, torch.int64: 5, torch.int32: 4, torch.bool: 12}[t.dtype]
    return {"dtype": serde, "sizes": [{"as_int": s} for s in t.shape], "requires_grad": False,
            "device": {"type": "cpu"}, "strides": [{"as_int": s} for s in t.stride()],
            "storage_offset": {"as_int": 0}, "layout": 7}


def packaged(src: str, dst: str) -> None:
    """The packaged layout of PyTorch 2.8+ (the PT2 archive spec), from a 2.6 flat archive's contents:
    archive_format "pt2", archive_version "0", models/model.json (the serialized ExportedProgram),
    each weight and constant a raw blob under data/weights, data/constants with its TensorMeta in
    model_weights_config.json / model_constants_config.json (PayloadConfig)."""
    z = zipfile.ZipFile(src)
    program = z.read("serialized_exported_program.json")
    state = torch.load(io.BytesIO(z.read("serialized_state_dict.pt")), weights_only=True)
    consts = z.read("serialized_constants.pt")
    consts = torch.load(io.BytesIO(consts), weights_only=True) if consts else {}
    with zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as out:
        root = "package/"
        out.writestr(root + "archive_format", "pt2")
        out.writestr(root + "archive_version", "0")
        out.writestr(root + "byteorder", "little")
        out.writestr(root + ".data/version", "1")
        out.writestr(root + "models/model.json", program)
        for folder, prefix, tensors in (("weights", "weight_", state), ("constants", "tensor_", consts)):
            config = {}
            for i, (name, t) in enumerate(tensors.items()):
                t = t.detach().clone()  # its own storage: exactly numel elements
                out.writestr(f"{root}data/{folder}/{prefix}{i}", bytes(t.untyped_storage().tolist()))
                config[name] = {"path_name": f"{prefix}{i}", "is_param": isinstance(t, nn.Parameter),
                                "use_pickle": False, "tensor_meta": tensor_meta(t)}
            out.writestr(f"{root}data/{folder}/model_{folder}_config.json", json.dumps({"config": config}))


def main() -> None:
    major = int(torch.__version__.split(".")[0])
    if major < 2:
        sys.exit(f"make_export_fixtures.py: needs PyTorch 2.x, this is {torch.__version__} "
                 "(bash scripts/test-debian13.sh --run python3 reference/make_export_fixtures.py)")
    torch.set_num_threads(1)
    os.makedirs(OUT, exist_ok=True)
    refs: Dict[str, torch.Tensor] = {}
    suite_cases: List[Dict] = []
    failures: List[str] = []
    census = set()
    for case in CASES:
        path = export_or_keep(case)
        for node in torch.export.load(path).graph.nodes:
            if node.op == "call_function":
                census.add(str(node.target))
        lo, hi = declared_lengths(path)
        lengths = [n for n in mac.schedule(SEQ_LEN) if lo <= n and (hi is None or n <= hi)]
        if case["static"] != (lengths == [SEQ_LEN] and lo == hi):
            failures.append(f"{case['name']}: declared lengths [{lo}, {hi}], static={case['static']}")
        horizon = max(brute_force(path, case, L)["horizon"] for L in lengths)
        verdict = "leaky" if horizon > 0 else "causal"
        if (verdict, horizon) != (case["verdict"], case["horizon"]):
            failures.append(f"{case['name']}: declared {case['verdict']} {case['horizon']}, brute force {verdict} {horizon}")
        m = load_module(path)
        L = SEQ_LEN if case["static"] else OUTPUT_LEN
        args = example_args(case, case["batch"], L, torch.Generator().manual_seed(11))
        # LibTorch's native kernels (oneDNN off): oneDNN's float32 CPU LSTM departs from the
        # LSTM equations on some x86 CPUs and not on others, and the C++ test compares with
        # oneDNN off as well (tests/audit/test_export_files.cpp).
        with torch.no_grad(), torch.backends.mkldnn.flags(enabled=False):
            y = m(*args)
        key = case["name"].replace("-", "_")
        refs[f"{key}__input"] = args[0]
        for k, v in leaves(y).items():
            refs[f"{key}__output" + (f"__{k}" if k else "")] = v.detach().clone()
        # The same output computed in float64: where PyTorch 2.6's float32 kernel departs from the
        # op's math (Debian 13's 2.6 CPU LSTM, oneDNN, float32 only: 0.3 off the LSTM equations,
        # while float64 and LibTorch 1.13 agree with them), 1.13 is compared with this instead.
        m64 = load_module(path)
        m64.to(torch.float64)
        with torch.no_grad():
            args64 = tuple(a.double() if a.is_floating_point() else a for a in args)
            y64 = run_float64(m64, lambda: m64(*args64))
        for k, v in leaves(y64).items():
            want = leaves(y)[k]
            rel = ((v.float() - want).abs().max() / want.abs().max()).item()
            if rel > 1e-4:
                refs[f"{key}__output_math" + (f"__{k}" if k else "")] = v.float()
                print(f"  {case['name']}: PyTorch {torch.__version__}'s float32 output is {rel:.3g} (relative) off "
                      "its float64 output: a float32 kernel that departs from the math; outputs_math kept")
        rel = os.path.relpath(path, AUDITS)
        entry = {"name": case["name"], "model": rel, "seq_len": SEQ_LEN, "mode": "both",
                 "expect": {"verdict": case["verdict"], "leak_horizon": case["horizon"]},
                 "why": case["why"] + f" (torch.export, PyTorch {torch.__version__})",
                 "checked": {"lengths": lengths, "leak_horizon": horizon,
                             "declared_lengths": [lo, hi]}}
        if case["leak_sites"] is not None:
            entry["expect"]["leak_sites"] = case["leak_sites"]
        if case["zero_o"]:
            tmp = export(case, redrawn=True)
            try:
                structural = max(brute_force(tmp, case, n)["horizon"] for n in lengths)
            finally:
                os.remove(tmp)
            if ("leaky" if structural > 0 else "causal") != case["zero_o"]:
                failures.append(f"{case['name']}: declared structural {case['zero_o']}, brute force {structural}")
            entry["expect"]["structural"] = case["zero_o"]
            if structural > 0:
                entry["expect"]["verdict"] = "leaky"
                entry["expect"]["violations"] = ["structural"]
            entry["checked"]["structural_leak_horizon"] = structural
        if len(case["inputs"]) == 1:
            entry["input"] = case["inputs"][0]
        else:
            entry["inputs"] = case["inputs"]
        if case["static"]:
            entry["seq_lens"] = [SEQ_LEN]
        elif lengths != mac.schedule(SEQ_LEN):  # the audit keeps to the declared lengths: the same ones
            entry["expect"]["seq_lens"] = lengths
        suite_cases.append(entry)
        print(f"{case['name']:24s} {verdict:6s} {horizon:3d}  {os.path.getsize(path):7d} bytes")
    # The packaged layout, from the GPT block's 2.6 archive: the same program, audited the same.
    src = os.path.join(OUT, "gpt_block.pt2")
    dst = os.path.join(OUT, "gpt_block_packaged.pt2")
    packaged(src, dst)
    gpt = next(c for c in suite_cases if c["name"] == "gpt-block")
    suite_cases.append({**gpt, "name": "gpt-block-packaged", "model": os.path.relpath(dst, AUDITS),
                        "why": gpt["why"].replace("(torch.export,", "(the packaged PT2 layout of 2.8+, made from the 2.6 export;")})
    if failures:
        print("\n".join("MISMATCH " + f for f in failures))
        sys.exit(1)
    torch.save(refs, os.path.join(OUT, "outputs.pt"))
    with open(os.path.join(OUT, "census.txt"), "w") as f:
        f.write("".join(t + "\n" for t in sorted(census)))
    suite = {
        "suite": "export",
        "description": (f"torch.export archives written by PyTorch {torch.__version__} (torch.export.save; one in "
                        "the packaged PT2 layout of 2.8+), run by grassaudit's graph interpreter: causal and leaky "
                        "twins of F.scaled_dot_product_attention, a GPT block, RoPE + GQA, convolutions, GRU and "
                        "bidirectional LSTM, a cumsum recurrence, a two-input model with a dict output, the higher-order ops "
                        "(cond, while_loop, scan, map, no_grad regions) with their sub-graphs, models whose "
                        "declared ranges the audit keeps to (guards the exporter added at both ends of the "
                        "sequence, a batch range of [2, 16]). Dynamic "
                        "batch and sequence dimensions unless the name says static. Generated by "
                        "reference/make_export_fixtures.py; expectations re-derived by brute force on the saved "
                        "files under that PyTorch."),
        "producer": f"PyTorch {torch.__version__}",
        "cases": suite_cases,
    }
    with open(os.path.join(AUDITS, "export.json"), "w") as f:
        json.dump(suite, f, indent=2)
        f.write("\n")
    print(f"wrote {len(suite_cases)} cases to {os.path.join(AUDITS, 'export.json')}")


if __name__ == "__main__":
    main()
