#!/usr/bin/python3
"""TorchScript fixtures written by PyTorch 2.x, for the audit's reach into 2.x files.

Run with PyTorch 2.6 (Debian 13's python3-torch, in the root of scripts/debian13-root.sh):
    bash scripts/test-debian13.sh --run python3 reference/make_torch2_fixtures.py

Writes
  audits/torch2/*.pt       small models exported by torch.jit.script and torch.jit.trace that call
                           what 2.x emits and LibTorch 1.13 lacks (aten::scaled_dot_product_attention:
                           F.scaled_dot_product_attention, nn.MultiheadAttention, nn.TransformerEncoder)
  audits/torch2/outputs.pt one TorchScript module whose buffers are each case's fixed input
                           (`<name>__input`, int64 [2, L]) and its eval-mode float32 output under
                           PyTorch 2.6 (`<name>__output`): the 1.13 build must reproduce it (1e-5)
  audits/torch2.json       the audit suite of these files; every expectation re-derived here by
                           brute force on the saved file under PyTorch 2.x (make_audit_controls.py's
                           checker: each position perturbed alone, float64, eval and train mode,
                           every length of the schedule; prefixes alone; odd rows replaced)
  tests/audit/fixtures/torch2/  files 1.13 cannot load, for the load-error messages: a torch.export
                           archive (.pt2), a torch.save state_dict, a pickled module, and TorchScript
                           that calls an operator 1.13 lacks and grassaudit does not register
The script aborts (exit 1) when a declared expectation disagrees with the brute force.
"""
import json
import os
import sys
from typing import Dict, List, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import make_audit_controls as mac  # noqa: E402  (brute-force checker, shared with the controls)

AUDITS = os.path.join(ROOT, "audits")
OUT = os.path.join(AUDITS, "torch2")
NOT_TS = os.path.join(ROOT, "tests", "audit", "fixtures", "torch2")
VOCAB, D, HEADS, MAX_LEN = 64, 16, 2, 64
TRACE_LEN = 16   # traced files run at the traced length: audited there only
OUTPUT_LEN = 12  # the fixed input whose 2.x output is committed (scripted files)


class TokenLM(nn.Module):
    """ids [B, L] -> logits [B, L, VOCAB] around one token mixer [B, L, D] -> [B, L, D]."""

    def __init__(self, mixer: nn.Module):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D)
        self.pos = nn.Embedding(MAX_LEN, D)
        self.mixer = mixer
        self.head = nn.Linear(D, VOCAB)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        L = ids.size(1)
        h = self.emb(ids) + self.pos(torch.arange(L, device=ids.device)).unsqueeze(0)
        return self.head(h + self.mixer(h))


class Sdpa(nn.Module):
    """F.scaled_dot_product_attention with each of its 2.x arguments. mask: none | causal (is_causal)
    | bool (tril, true = attend) | float_off_by_one (additive, lets t see t+1: the classic bug)."""

    def __init__(self, mask: str, kv_heads: int = HEADS, scale: Optional[float] = None, gqa: bool = False,
                 dropout: float = 0.0):
        super().__init__()
        self.mask = mask
        self.kv_heads = kv_heads
        self.scale = scale
        self.gqa = gqa
        self.dropout = dropout
        self.heads = HEADS
        self.width = D
        self.q = nn.Linear(D, D)
        self.kv = nn.Linear(D, 2 * (D // HEADS) * kv_heads)
        self.o = nn.Linear(D, D)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        B, L, _ = h.shape
        E = self.width // self.heads
        q = self.q(h).view(B, L, self.heads, E).transpose(1, 2)
        k, v = self.kv(h).view(B, L, 2, self.kv_heads, E).unbind(2)
        k, v = k.transpose(1, 2), v.transpose(1, 2)
        p = self.dropout if self.training else 0.0
        if self.mask == "causal":
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True, scale=self.scale,
                                               enable_gqa=self.gqa)
        elif self.mask == "bool":
            m = torch.ones(L, L, dtype=torch.bool, device=h.device).tril()
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=m, dropout_p=p, scale=self.scale,
                                               enable_gqa=self.gqa)
        elif self.mask == "float_off_by_one":
            allowed = torch.ones(L, L, dtype=torch.bool, device=h.device).tril(1)
            m = torch.zeros(L, L, dtype=h.dtype, device=h.device).masked_fill(~allowed, float("-inf"))
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=m, dropout_p=p, scale=self.scale,
                                               enable_gqa=self.gqa)
        else:
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=p, scale=self.scale, enable_gqa=self.gqa)
        return self.o(y.transpose(1, 2).reshape(B, L, self.width))


class Encoder(nn.Module):
    """nn.TransformerEncoder (2 layers, batch_first, dropout 0.1): its attention is SDPA in 2.x.
    mask: none | square (the float square-subsequent mask) | square_is_causal (the same, with the
    is_causal hint 2.x added)."""

    def __init__(self, mask: str):
        super().__init__()
        self.mask = mask
        layer = nn.TransformerEncoderLayer(D, HEADS, 2 * D, dropout=0.1, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        L = h.size(1)
        if self.mask == "none":
            return self.enc(h)
        m = torch.full((L, L), float("-inf"), dtype=h.dtype, device=h.device).triu(1)
        if self.mask == "square_is_causal":
            return self.enc(h, mask=m, is_causal=True)
        return self.enc(h, mask=m)


class Mha(nn.Module):
    """nn.MultiheadAttention (batch_first, need_weights=False: the SDPA path). mask: none | bool
    (true = masked, MultiheadAttention's convention) | bool_transposed (the transposed-mask bug)."""

    def __init__(self, mask: str):
        super().__init__()
        self.mask = mask
        self.mha = nn.MultiheadAttention(D, HEADS, dropout=0.1, batch_first=True)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        L = h.size(1)
        if self.mask == "none":
            return self.mha(h, h, h, need_weights=False)[0]
        m = torch.ones(L, L, dtype=torch.bool, device=h.device).triu(1)
        if self.mask == "bool_transposed":
            m = m.t()
        return self.mha(h, h, h, attn_mask=m, need_weights=False)[0]


class Rms(nn.Module):
    """nn.RMSNorm (2.4+, aten::rms_norm) over the channels (causal), or F.rms_norm over time and
    channels ([L, D]: the normalised-the-wrong-dims bug, every position sees the whole sequence)."""

    def __init__(self, dims: str):
        super().__init__()
        self.dims = dims
        self.norm = nn.RMSNorm(D, eps=1e-6)
        self.lin = nn.Linear(D, D)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        if self.dims == "time":
            return self.lin(F.rms_norm(h, [h.size(1), h.size(2)]))
        return self.lin(self.norm(h))


class UnknownOp(nn.Module):
    """Calls aten::nonzero_static (2.x, not in 1.13 and not registered): the load-error fixture."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.nonzero_static(x > 0, size=1).sum()


def C(name: str, build, verdict: str, horizon: int, why: str, seq_len: int = 16, trace: bool = True):
    return dict(name=name, build=build, verdict=verdict, horizon=horizon, why=why, seq_len=seq_len, trace=trace)


# Not traced: a traced float mask (and nn.MultiheadAttention, whose _canonical_mask turns the bool mask
# into a float one) bakes dtype=float32 into the graph, so after .double() the file runs a float64
# query against a float32 mask, and PyTorch 2.6's CPU kernel then computes a wrong attention at
# L >= 16 (measured: 2.4 absolute against the same mask in float64; at L 6 it is exact). Brute force
# in float64 would then call these causal models leaky under 2.6 only: a PyTorch bug, and the
# problem of float32 constants baked into a trace, not a property of the model.


L1 = 15  # the full-attention horizon at the audit length 16 is L-1
CASES = [
    C("sdpa-is-causal", lambda: Sdpa("causal"), "causal", 0, "F.scaled_dot_product_attention(is_causal=True)"),
    C("sdpa-no-mask", lambda: Sdpa("none"), "leaky", L1, "F.scaled_dot_product_attention without a mask"),
    C("sdpa-bool-mask", lambda: Sdpa("bool"), "causal", 0, "a boolean tril attn_mask (true = attend)"),
    C("sdpa-float-mask-off-by-one", lambda: Sdpa("float_off_by_one"), "leaky", 1,
      "an additive float mask built with tril(1): each position sees the next one", trace=False),
    C("sdpa-gqa-scale-causal", lambda: Sdpa("causal", kv_heads=1, scale=0.3, gqa=True, dropout=0.1), "causal", 0,
      "grouped-query attention (enable_gqa, 2 query heads per key head), explicit scale, dropout_p in train mode"),
    C("sdpa-gqa-scale-no-mask", lambda: Sdpa("none", kv_heads=1, scale=0.3, gqa=True), "leaky", L1,
      "grouped-query attention without a mask"),
    C("encoder-square-mask", lambda: Encoder("square"), "causal", 0,
      "nn.TransformerEncoder with the square subsequent mask"),
    C("encoder-is-causal", lambda: Encoder("square_is_causal"), "causal", 0,
      "nn.TransformerEncoder with the mask and is_causal=True"),
    C("encoder-no-mask", lambda: Encoder("none"), "leaky", L1, "nn.TransformerEncoder without a mask"),
    C("rmsnorm-channels", lambda: Rms("channels"), "causal", 0, "nn.RMSNorm over the channels of each position"),
    C("rmsnorm-over-time", lambda: Rms("time"), "leaky", L1,
      "F.rms_norm over [L, D]: the statistics of the whole sequence reach every position"),
    C("mha-bool-mask", lambda: Mha("bool"), "causal", 0, "nn.MultiheadAttention with a boolean causal mask",
      trace=False),
    C("mha-transposed-mask", lambda: Mha("bool_transposed"), "leaky", L1,
      "nn.MultiheadAttention with the causal mask transposed (sees the future, not the past)"),
    C("mha-no-mask", lambda: Mha("none"), "leaky", L1, "nn.MultiheadAttention without a mask"),
]


def export(case: Dict, how: str) -> str:
    torch.manual_seed(hash(case["name"]) % 1000)
    model = TokenLM(case["build"]()).eval()
    path = os.path.join(OUT, f"{case['name'].replace('-', '_')}_{how}.pt")
    if how == "script":
        torch.jit.script(model).save(path)
    else:
        example = torch.randint(0, VOCAB, (2, TRACE_LEN), generator=torch.Generator().manual_seed(7))
        torch.jit.trace(model, example, check_trace=False).save(path)
    return path


def not_torchscript_fixtures() -> None:
    os.makedirs(NOT_TS, exist_ok=True)
    lin = nn.Linear(4, 4)
    ep = torch.export.export(lin, (torch.zeros(2, 4),))
    torch.export.save(ep, os.path.join(NOT_TS, "exported.pt2"))
    torch.save(lin.state_dict(), os.path.join(NOT_TS, "state_dict.pt"))
    torch.save(lin, os.path.join(NOT_TS, "pickled_module.pt"))
    torch.jit.script(UnknownOp()).save(os.path.join(NOT_TS, "unknown_op.pt"))


def main() -> None:
    if os.environ.get("PYTHONHASHSEED") != "0":  # fixed constant order in the saved files
        os.execve(sys.executable, [sys.executable] + sys.argv, {**os.environ, "PYTHONHASHSEED": "0"})
    major = int(torch.__version__.split(".")[0])
    if major < 2:
        sys.exit(f"make_torch2_fixtures.py: needs PyTorch 2.x, this is {torch.__version__} "
                 "(run it in the Debian 13 root: bash scripts/test-debian13.sh --run python3 "
                 "reference/make_torch2_fixtures.py)")
    torch.set_num_threads(1)
    os.makedirs(OUT, exist_ok=True)
    refs = torch.nn.Module()
    suite_cases: List[Dict] = []
    failures: List[str] = []
    for case in CASES:
        for how in ("script", "trace") if case["trace"] else ("script",):
            path = export(case, how)
            rel = os.path.relpath(path, AUDITS)
            seq_len = case["seq_len"] if how == "script" else TRACE_LEN
            lengths = mac.schedule(seq_len) if how == "script" else [seq_len]
            got = {}
            for mode, train in (("eval", False), ("train", True)):
                hz, past = 0, 0
                for L in lengths:
                    a = mac.probe(path, "tokens:64", L, train, torch.float64)
                    hz, past = max(hz, a["horizon"]), max(past, a["past_horizon"])
                got[mode] = dict(leak_horizon=hz, past_horizon=past)
            horizon = max(got["eval"]["leak_horizon"], got["train"]["leak_horizon"])
            verdict = "leaky" if horizon > 0 else "causal"
            name = f"{case['name']}-{how}"
            if (verdict, horizon) != (case["verdict"], case["horizon"]):
                failures.append(f"{name}: declared {case['verdict']} {case['horizon']}, brute force {verdict} {horizon}")
            # The 2.x output on a fixed input (eval mode, float32), for the 1.13 build to match.
            m = torch.jit.load(path).eval()
            L = OUTPUT_LEN if how == "script" else TRACE_LEN
            x = torch.randint(0, VOCAB, (2, L), generator=torch.Generator().manual_seed(11))
            with torch.no_grad():
                y = m(x)
            key = name.replace("-", "_")
            refs.register_buffer(f"{key}__input", x)
            refs.register_buffer(f"{key}__output", y.detach().clone())
            entry = {"name": name, "model": rel, "input": "tokens:64", "seq_len": seq_len, "mode": "both",
                     "expect": {"verdict": case["verdict"], "leak_horizon": case["horizon"]},
                     "why": case["why"] + f" (torch.jit.{how}, PyTorch {torch.__version__})",
                     "checked": {"lengths": lengths, **got}}
            if how == "trace":
                entry["seq_lens"] = lengths
            suite_cases.append(entry)
            print(f"{name:34s} {verdict:6s} {horizon:3d}  {os.path.getsize(path):7d} bytes")
    if failures:
        print("\n".join("MISMATCH " + f for f in failures))
        sys.exit(1)
    torch.jit.script(refs).save(os.path.join(OUT, "outputs.pt"))
    not_torchscript_fixtures()
    suite = {
        "suite": "torch2",
        "description": (f"TorchScript written by PyTorch {torch.__version__} (torch.jit.script and torch.jit.trace) "
                        "that calls the 2.x operators LibTorch 1.13 lacks and grassaudit registers "
                        "(src/formats/torch/torch2_ops.cpp): aten::scaled_dot_product_attention "
                        "(F.scaled_dot_product_attention with each argument: is_causal, bool and float masks, "
                        "scale, enable_gqa, dropout_p; nn.TransformerEncoder; nn.MultiheadAttention) and "
                        "aten::rms_norm (nn.RMSNorm, F.rms_norm), each causal model with a leaky twin. "
                        "Generated by reference/make_torch2_fixtures.py; expectations re-derived by brute force "
                        "under that PyTorch (make_audit_controls.py's checker). Traced files run at their traced "
                        f"length ({TRACE_LEN}) only and are audited there (seq_lens). Tokens models: int64 [B, L] "
                        "-> [B, L, 64]; outputs.pt holds each file's 2.x output on a fixed input."),
        "producer": f"PyTorch {torch.__version__}",
        "cases": suite_cases,
    }
    with open(os.path.join(AUDITS, "torch2.json"), "w") as f:
        json.dump(suite, f, indent=2)
        f.write("\n")
    print(f"wrote {len(suite_cases)} cases to {os.path.join(AUDITS, 'torch2.json')}")


if __name__ == "__main__":
    main()
