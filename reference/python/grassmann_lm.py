#!/usr/bin/python3
"""Independent PyTorch reference of the models in /work/shared/paper/SPEC.md.

Three token mixers:
  * "future":    Causal Grassmann layer read literally, pairs (z_t, z_{t+D})  -> leaks the future
  * "past":      the public reproductions' reading, pairs (z_t, z_{t-D})      -> causal
  * "attention": causally masked multi-head attention (4 heads), post-norm Transformer block

and the language model: token embedding + learned absolute positions + N blocks + final
LayerNorm + output projection tied to the token embedding (no output bias).

The Grassmann layer is computed literally, one offset at a time (impl="literal", the
reference).  impl="wedge" uses the exact identity of SPEC section 1 (one projection per
token); it exists only so that the identity can be checked against the literal form.

Everything is TorchScript-scriptable (torch.jit.script) and dtype-agnostic (works after
.double()); no float32 constants are created in forward.

Conventions not fixed by SPEC (stated here so the C++ side can match them):
  * Positions with no valid partner get g_t = 0 (no bias); the mean is over valid offsets.
  * eps = 1e-8 in p_hat = p / max(||p||_2, eps).
  * GELU is the exact (erf) GELU; LayerNorm eps = 1e-5.
  * Dropout sites follow torch.nn.TransformerEncoderLayer (post-norm):
      attention block: x = LN1(x + drop(MHA(x))); x = LN2(x + drop(W2 drop(GELU(W1 x))))
      with dropout on the attention weights as in nn.MultiheadAttention;
      Grassmann block: hhat = drop(LN1(alpha*h + (1-alpha)*g)) (SPEC step 5);
                       h' = LN2(hhat + drop(W2 drop(GELU(W1 hhat))))
    plus dropout on the embedding sum E[x] + P.  In eval mode none of this matters.
  * Offsets: mode "per-layer" -> layer i uses offsets[i] (len(offsets) must equal n_layers);
    mode "all" -> every layer uses every offset.

Run `/usr/bin/python3 grassmann_lm.py` for parameter counts and numerical self-checks.
"""
import argparse
import math
from typing import List

import torch
import torch.nn as nn
import torch.nn.functional as F

PAPER_OFFSETS = [1, 2, 4, 8, 12, 16]


class FeedForward(nn.Module):
    def __init__(self, d: int, d_ff: int, dropout: float):
        super().__init__()
        self.linear1 = nn.Linear(d, d_ff)
        self.linear2 = nn.Linear(d_ff, d)
        self.p = dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.dropout(F.gelu(self.linear1(x)), self.p, self.training)
        return F.dropout(self.linear2(h), self.p, self.training)


class GrassmannMixer(nn.Module):
    """SPEC steps 1-5: reduction, pairing, Pluecker coordinates, projection + mean, gate, LN, dropout."""

    def __init__(self, d: int, r: int, offsets: List[int], pairing: str, dropout: float = 0.1,
                 eps: float = 1e-8, impl: str = "literal"):
        super().__init__()
        assert pairing in ("future", "past"), pairing
        assert impl in ("literal", "wedge"), impl
        assert all(D >= 1 for D in offsets)
        self.d = d
        self.r = r
        self.offsets: List[int] = list(offsets)
        self.future = pairing == "future"
        self.literal = impl == "literal"
        self.eps = eps
        self.p = dropout
        self.w_red = nn.Linear(d, r)                       # r x d, with bias
        self.w_plu = nn.Linear(r * (r - 1) // 2, d)        # d x C(r,2), with bias, shared by offsets
        self.w_gate = nn.Linear(2 * d, d)                  # d x 2d, with bias
        self.norm = nn.LayerNorm(d)
        iu = torch.triu_indices(r, r, offset=1)            # i < j, row-major: (0,1),(0,2),...
        self.register_buffer("idx_i", iu[0].clone())       # int64 buffers: untouched by .double()
        self.register_buffer("idx_j", iu[1].clone())

    def pluecker(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        # p_ij = a_i b_j - a_j b_i, i < j
        ai = a.index_select(-1, self.idx_i)
        aj = a.index_select(-1, self.idx_j)
        return ai * b.index_select(-1, self.idx_j) - aj * b.index_select(-1, self.idx_i)

    def geometric(self, z: torch.Tensor) -> torch.Tensor:
        B, L, _ = z.shape
        g = torch.zeros(B, L, self.d, dtype=z.dtype, device=z.device)
        count = torch.zeros(L, dtype=z.dtype, device=z.device)
        if self.literal:
            for D in self.offsets:
                if D >= L:
                    continue
                n = L - D
                if self.future:          # t in [0, L-D), partner t + D
                    a = z[:, :n]
                    b = z[:, D:]
                    pad = [0, 0, 0, D]
                else:                    # t in [D, L), partner t - D
                    a = z[:, D:]
                    b = z[:, :n]
                    pad = [0, 0, D, 0]
                p = self.pluecker(a, b)
                p_hat = p / torch.clamp(torch.linalg.vector_norm(p, dim=-1, keepdim=True), min=self.eps)
                g = g + F.pad(self.w_plu(p_hat), pad)
                count = count + F.pad(torch.ones(n, dtype=z.dtype, device=z.device), pad[2:])
            return g / torch.clamp(count, min=1.0).view(1, L, 1)
        # wedge identity: mean_D W_plu p_hat^D + b = W_plu (z_t ^ c_t) + b,
        # c_t = mean_D z_partner / max(||z_t ^ z_partner||, eps), ||a^b||^2 = |a|^2|b|^2 - (a.b)^2
        c = torch.zeros_like(z)
        for D in self.offsets:
            if D >= L:
                continue
            n = L - D
            if self.future:
                a = z[:, :n]
                b = z[:, D:]
                pad = [0, 0, 0, D]
            else:
                a = z[:, D:]
                b = z[:, :n]
                pad = [0, 0, D, 0]
            aa = (a * a).sum(-1, keepdim=True)
            bb = (b * b).sum(-1, keepdim=True)
            ab = (a * b).sum(-1, keepdim=True)
            nrm = torch.sqrt(torch.clamp(aa * bb - ab * ab, min=0.0))
            c = c + F.pad(b / torch.clamp(nrm, min=self.eps), pad)
            count = count + F.pad(torch.ones(n, dtype=z.dtype, device=z.device), pad[2:])
        valid = (count > 0).to(z.dtype).view(1, L, 1)
        c = c / torch.clamp(count, min=1.0).view(1, L, 1)
        return self.w_plu(self.pluecker(z, c)) * valid

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        z = self.w_red(h)
        g = self.geometric(z)
        alpha = torch.sigmoid(self.w_gate(torch.cat([h, g], dim=-1)))
        mixed = alpha * h + (1.0 - alpha) * g
        return F.dropout(self.norm(mixed), self.p, self.training)


class GrassmannBlock(nn.Module):
    def __init__(self, d: int, r: int, d_ff: int, offsets: List[int], pairing: str,
                 dropout: float = 0.1, impl: str = "literal"):
        super().__init__()
        self.mixer = GrassmannMixer(d, r, offsets, pairing, dropout, impl=impl)
        self.ffn = FeedForward(d, d_ff, dropout)
        self.norm = nn.LayerNorm(d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hhat = self.mixer(x)
        return self.norm(hhat + self.ffn(hhat))


class CausalSelfAttention(nn.Module):
    """Causally masked MHA; parameter layout of nn.MultiheadAttention (in_proj [3d,d], out_proj)."""

    def __init__(self, d: int, n_heads: int, dropout: float):
        super().__init__()
        assert d % n_heads == 0
        self.h = n_heads
        self.dh = d // n_heads
        self.in_proj_weight = nn.Parameter(torch.empty(3 * d, d))
        self.in_proj_bias = nn.Parameter(torch.zeros(3 * d))
        self.out_proj = nn.Linear(d, d)
        nn.init.xavier_uniform_(self.in_proj_weight)
        nn.init.zeros_(self.out_proj.bias)
        self.p = dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, L, d = x.shape
        qkv = F.linear(x, self.in_proj_weight, self.in_proj_bias)
        q, k, v = qkv.split(d, dim=-1)
        q = q.view(B, L, self.h, self.dh).transpose(1, 2)
        k = k.view(B, L, self.h, self.dh).transpose(1, 2)
        v = v.view(B, L, self.h, self.dh).transpose(1, 2)
        s = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.dh)
        future = torch.ones(L, L, dtype=torch.bool, device=x.device).triu(1)
        s = s.masked_fill(future, float("-inf"))
        a = F.dropout(torch.softmax(s, dim=-1), self.p, self.training)
        o = torch.matmul(a, v).transpose(1, 2).reshape(B, L, d)
        return self.out_proj(o)


class AttentionBlock(nn.Module):
    def __init__(self, d: int, n_heads: int, d_ff: int, dropout: float = 0.1):
        super().__init__()
        self.attn = CausalSelfAttention(d, n_heads, dropout)
        self.norm1 = nn.LayerNorm(d)
        self.ffn = FeedForward(d, d_ff, dropout)
        self.norm2 = nn.LayerNorm(d)
        self.p = dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.norm1(x + F.dropout(self.attn(x), self.p, self.training))
        return self.norm2(x + self.ffn(x))


def layer_offsets(offsets: List[int], offset_mode: str, n_layers: int) -> List[List[int]]:
    if offset_mode == "per-layer":
        if len(offsets) != n_layers:
            raise ValueError(f"per-layer offsets need {n_layers} entries, got {offsets}")
        return [[D] for D in offsets]
    if offset_mode == "all":
        return [list(offsets) for _ in range(n_layers)]
    raise ValueError(offset_mode)


class LanguageModel(nn.Module):
    def __init__(self, vocab: int = 30522, d: int = 256, n_layers: int = 6, max_len: int = 128,
                 mixer: str = "past", offsets: List[int] = PAPER_OFFSETS, offset_mode: str = "per-layer",
                 r: int = 32, n_heads: int = 4, d_ff: int = 0, dropout: float = 0.1,
                 impl: str = "literal"):
        super().__init__()
        d_ff = d_ff or 4 * d
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(max_len, d)
        nn.init.normal_(self.tok.weight, std=0.02)
        nn.init.normal_(self.pos.weight, std=0.02)
        if mixer == "attention":
            blocks = [AttentionBlock(d, n_heads, d_ff, dropout) for _ in range(n_layers)]
        elif mixer in ("past", "future"):
            blocks = [GrassmannBlock(d, r, d_ff, offs, mixer, dropout, impl)
                      for offs in layer_offsets(list(offsets), offset_mode, n_layers)]
        else:
            raise ValueError(mixer)
        self.blocks = nn.ModuleList(blocks)
        self.norm = nn.LayerNorm(d)
        self.p = dropout

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        L = ids.size(1)
        pos = torch.arange(L, device=ids.device)
        h = F.dropout(self.tok(ids) + self.pos(pos).unsqueeze(0), self.p, self.training)
        for blk in self.blocks:
            h = blk(h)
        return F.linear(self.norm(h), self.tok.weight)      # tied head, no bias


def n_params(m: nn.Module) -> int:
    return sum(p.numel() for p in m.parameters())


def _self_checks() -> None:
    torch.manual_seed(0)
    # 1. literal per-offset vs wedge identity, float64
    for pairing in ("future", "past"):
        lit = GrassmannMixer(16, 8, [1, 2, 4, 8], pairing, 0.0, impl="literal").double().eval()
        wed = GrassmannMixer(16, 8, [1, 2, 4, 8], pairing, 0.0, impl="wedge").double().eval()
        wed.load_state_dict(lit.state_dict())
        h = torch.randn(3, 11, 16, dtype=torch.double)
        diff = (lit(h) - wed(h)).abs().max().item()
        print(f"check literal vs wedge identity ({pairing}, float64): max |diff| = {diff:.2e}")
        assert diff < 1e-12
    # 2. manual attention block == nn.TransformerEncoderLayer (post-norm, GELU) in eval mode
    blk = AttentionBlock(32, 4, 128, 0.1).double().eval()
    ref = nn.TransformerEncoderLayer(32, 4, 128, 0.1, activation="gelu", batch_first=True).double().eval()
    with torch.no_grad():
        ref.self_attn.in_proj_weight.copy_(blk.attn.in_proj_weight)
        ref.self_attn.in_proj_bias.copy_(blk.attn.in_proj_bias)
        ref.self_attn.out_proj.load_state_dict(blk.attn.out_proj.state_dict())
        ref.linear1.load_state_dict(blk.ffn.linear1.state_dict())
        ref.linear2.load_state_dict(blk.ffn.linear2.state_dict())
        ref.norm1.load_state_dict(blk.norm1.state_dict())
        ref.norm2.load_state_dict(blk.norm2.state_dict())
    x = torch.randn(2, 9, 32, dtype=torch.double)
    mask = torch.ones(9, 9, dtype=torch.bool).triu(1)
    with torch.no_grad():
        diff = (blk(x) - ref(x, src_mask=mask)).abs().max().item()
    print(f"check attention block vs nn.TransformerEncoderLayer (float64): max |diff| = {diff:.2e}")
    assert diff < 1e-12
    # 3. leak horizons of tiny LMs (brute force, float64): future per-layer = sum(offsets),
    #    future all = n_layers * max(offsets), past and attention = 0
    for mixer, mode, want in (("future", "per-layer", 3), ("future", "all", 4),
                              ("past", "per-layer", 0), ("past", "all", 0), ("attention", "all", 0)):
        m = LanguageModel(64, 16, 2, 16, mixer, [1, 2], mode, r=4, n_heads=4).double().eval()
        ids = torch.randint(0, 64, (1, 12))
        y0 = m(ids)
        hz = 0
        for s in range(1, 12):
            ids2 = ids.clone()
            ids2[0, s] = (ids2[0, s] + 1) % 64
            dy = (m(ids2) - y0).abs().amax(dim=(0, 2))
            for t in range(s):
                if dy[t] > 1e-10:
                    hz = max(hz, s - t)
        print(f"check leak horizon {mixer:9s} offsets [1,2] {mode:9s}: {hz} (expected {want})")
        assert hz == want
    # 4. scriptable
    ids = torch.randint(0, 64, (2, 10))
    for mixer, mode, impl in (("past", "per-layer", "literal"), ("future", "all", "wedge"),
                              ("attention", "all", "literal")):
        m = LanguageModel(64, 16, 2, 16, mixer, [1, 2], mode, r=4, impl=impl).eval()
        sm = torch.jit.script(m).double()
        diff = (sm(ids) - m.double()(ids)).abs().max().item()
        assert diff < 1e-12, (mixer, diff)
    print("check torch.jit.script (+ .double()) matches eager: ok")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-checks", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(1)
    rows = []
    for name, kw in (
        ("attention  N=6  L=128", dict(mixer="attention", n_layers=6, max_len=128)),
        ("grassmann  N=6  L=128 per-layer (1,2,4,8,12,16)", dict(mixer="past", n_layers=6, max_len=128)),
        ("attention  N=12 L=256", dict(mixer="attention", n_layers=12, max_len=256)),
        ("grassmann  N=12 L=256 per-layer (1,1,2,2,...,16,16)",
         dict(mixer="past", n_layers=12, max_len=256, offsets=[1, 1, 2, 2, 4, 4, 8, 8, 12, 12, 16, 16])),
    ):
        m = LanguageModel(vocab=30522, d=256, **kw)
        rows.append((name, n_params(m)))
        del m
    for name, n in rows:
        print(f"params {name:52s} {n:>12,d}  ({n / 1e6:.2f}M)")
    assert rows[0][1] == 12_585_472, rows[0][1]
    if not args.no_checks:
        _self_checks()


if __name__ == "__main__":
    main()
