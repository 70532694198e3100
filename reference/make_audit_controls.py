#!/usr/bin/python3
"""Build the causality-audit control models and their suite file.

Writes audits/controls/*.pt (small TorchScript modules, fixed seeds) and audits/controls.json.
Every expectation written to the suite is re-derived here by brute force on the *saved* file
(torch.jit.load, .double(), eval and train mode, every length of the audit's schedule, each
future position perturbed on its own) and the script aborts if it disagrees with the value
declared in CASES below.

Run with Debian's python (torch 1.13, CPU):  /usr/bin/python3 reference/make_audit_controls.py

Conventions the controls follow (what the C++ audit may rely on):
  * tokens models: forward(int64 ids [B, L]) -> float [B, L, 64]   (vocab 64)
    features models: forward(float [B, L, 4]) -> float [B, L, k]
  * every model runs at any 2 <= L <= 64 (position tables / kernels have 64 entries)
  * every model works after module.to(torch.double) (no dtype-fixed tensors in forward)
  * every model is deterministic for a fixed RNG seed in train mode (dropout only)
"""
import json
import math
import os
import sys
from typing import Dict, List, Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "python"))
from grassmann_lm import LanguageModel  # noqa: E402

AUDITS = os.path.join(ROOT, "audits")
CTRL = os.path.join(AUDITS, "controls")
VOCAB = 64
CHANNELS = 4
WIDTH = 16
MAX_LEN = 64
TRAIN_SEED = 1234          # RNG seed re-set before each paired train-mode pass
TOL_F64 = 1e-9             # relative (to max |y|) change that counts as a dependence in float64
FLOOR_MARGIN = 100         # ... unless the model's float64 floor is higher: then margin x floor
FLOAT32_SIZED = 1e-11      # a float64 floor above this is float32-sized (a float32 island)
EPS64 = 2.220446049250313e-16  # the least floor a horizon is decided above (one float64 ulp)


def horizon_tol(floor: float) -> float:
    """The audit's horizon rule (src/audit/precision_switch.h): FLOOR_MARGIN x the measured float64
    floor (at least one ulp), so a decaying dependence is followed down to rounding; the
    comparisons across shapes (length, batch) keep max(TOL_F64, FLOOR_MARGIN x floor)."""
    return FLOOR_MARGIN * max(floor, EPS64)


# --------------------------------------------------------------------------------------------
# building blocks (all scriptable, dtype-agnostic)
# --------------------------------------------------------------------------------------------

def time_conv(h: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], left: int,
              right: int) -> torch.Tensor:
    """Conv1d along time of h [B, L, C] with explicit zero padding (left, right)."""
    u = F.pad(h.transpose(1, 2), [left, right])
    return F.conv1d(u, weight, bias).transpose(1, 2)


class TokenLM(nn.Module):
    """ids [B, L] -> logits [B, L, V]: embedding + learned positions + dropout + mixer + LN + head."""

    def __init__(self, mixer: nn.Module, dropout: float = 0.1):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, WIDTH)
        self.pos = nn.Embedding(MAX_LEN, WIDTH)
        self.mixer = mixer
        self.norm = nn.LayerNorm(WIDTH)
        self.head = nn.Linear(WIDTH, VOCAB)
        self.p = dropout

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        L = ids.size(1)
        pos = torch.arange(L, device=ids.device)
        h = F.dropout(self.tok(ids) + self.pos(pos).unsqueeze(0), self.p, self.training)
        return self.head(self.norm(self.mixer(h)))


class Attention(nn.Module):
    def __init__(self, causal: bool, heads: int = 2, dropout: float = 0.1):
        super().__init__()
        self.qkv = nn.Linear(WIDTH, 3 * WIDTH)
        self.out = nn.Linear(WIDTH, WIDTH)
        self.heads = heads
        self.causal = causal
        self.p = dropout

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        B, L, d = h.shape
        dh = d // self.heads
        q, k, v = self.qkv(h).split(d, dim=-1)
        q = q.view(B, L, self.heads, dh).transpose(1, 2)
        k = k.view(B, L, self.heads, dh).transpose(1, 2)
        v = v.view(B, L, self.heads, dh).transpose(1, 2)
        s = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(dh)
        if self.causal:
            s = s.masked_fill(torch.ones(L, L, dtype=torch.bool, device=h.device).triu(1), float("-inf"))
        a = F.dropout(torch.softmax(s, dim=-1), self.p, self.training)
        o = torch.matmul(a, v).transpose(1, 2).reshape(B, L, d)
        return h + self.out(o)


class ConvMixer(nn.Module):
    """h + GELU(conv_k3(h)); padding (1,1) is the classic bug, (2,0) is causal."""

    def __init__(self, left: int, right: int):
        super().__init__()
        self.conv = nn.Conv1d(WIDTH, WIDTH, 3)
        self.left = left
        self.right = right

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return h + F.gelu(time_conv(h, self.conv.weight, self.conv.bias, self.left, self.right))


class SummaryMixer(nn.Module):
    """h + W h[:, idx]: summary from the last position (leak) or the first (causal)."""

    def __init__(self, from_last: bool):
        super().__init__()
        self.proj = nn.Linear(WIDTH, WIDTH)
        self.from_last = from_last

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        idx = h.size(1) - 1 if self.from_last else 0
        return h + torch.tanh(self.proj(h[:, idx:idx + 1]))


class TrainOnlyLeak(nn.Module):
    """Causal conv; in training only, mixes in the next position via torch.roll."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(WIDTH, WIDTH, 3)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        h = h + F.gelu(time_conv(h, self.conv.weight, self.conv.bias, 2, 0))
        if self.training:
            h = h + 0.5 * torch.roll(h, -1, dims=1)
        return h


class DropoutOnly(nn.Module):
    """Causal conv with dropout in between; only randomness differs between train and eval."""

    def __init__(self, dropout: float = 0.3):
        super().__init__()
        self.conv = nn.Conv1d(WIDTH, WIDTH, 3)
        self.p = dropout

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        u = F.dropout(F.gelu(time_conv(h, self.conv.weight, self.conv.bias, 2, 0)), self.p, self.training)
        return F.dropout(h + u, self.p, self.training)


class LengthSwitchConv(nn.Module):
    """Per-channel long convolution: exact causal Toeplitz product for L <= threshold,
    FFT of size L (circular: wraps the end of the sequence onto its start) for L > threshold."""

    def __init__(self, threshold: int = 16):
        super().__init__()
        decay = torch.exp(-torch.arange(MAX_LEN, dtype=torch.float32) / 8.0)
        self.kernel = nn.Parameter(torch.randn(WIDTH, MAX_LEN) * decay * 0.5)
        self.threshold = threshold

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        L = h.size(1)
        k = self.kernel[:, :L]                                           # [d, L]
        if L > self.threshold:
            y = torch.fft.irfft(torch.fft.rfft(h, n=L, dim=1) * torch.fft.rfft(k.t(), n=L, dim=0).unsqueeze(0),
                                n=L, dim=1)
        else:
            lag = torch.arange(L, device=h.device).view(L, 1) - torch.arange(L, device=h.device).view(1, L)
            T = k[:, lag.clamp(min=0)] * (lag >= 0).to(h.dtype)          # [d, t, s]
            y = torch.einsum("dts,bsd->btd", T, h)
        return h + y


class Passthrough(nn.Module):
    """Calls the module it wraps: puts a model one submodule deeper."""

    def __init__(self, inner: nn.Module):
        super().__init__()
        self.inner = inner

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.inner(h)


class Lifted(nn.Module):
    """features [B, L, CHANNELS] -> Linear -> a WIDTH-channel core."""

    def __init__(self, core: nn.Module):
        super().__init__()
        self.inp = nn.Linear(CHANNELS, WIDTH)
        self.core = core

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.core(self.inp(x))


class FeatureModel(nn.Module):
    """Wrapper for features models: [B, L, C] -> core -> Linear -> [B, L, out]."""

    def __init__(self, core: nn.Module, core_width: int, out: int = 2):
        super().__init__()
        self.core = core
        self.head = nn.Linear(core_width, out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.core(x))


class FFTConv(nn.Module):
    """Long per-channel convolution by FFT; size L (circular, leaks) or 2L (linear, causal)."""

    def __init__(self, padded: bool):
        super().__init__()
        decay = torch.exp(-torch.arange(MAX_LEN, dtype=torch.float32) / 8.0)
        self.kernel = nn.Parameter(torch.randn(CHANNELS, MAX_LEN) * decay * 0.5)
        self.padded = padded

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        L = x.size(1)
        n = 2 * L if self.padded else L
        k = self.kernel[:, :L].t()
        y = torch.fft.irfft(torch.fft.rfft(x, n=n, dim=1) * torch.fft.rfft(k, n=n, dim=0).unsqueeze(0),
                            n=n, dim=1)[:, :L]
        return torch.cat([x, y], dim=-1)


class ChunkMean(nn.Module):
    """Per-chunk summary of a projection: mean over the whole chunk broadcast to every position
    of the chunk (leak), or the cumulative mean within the chunk (causal)."""

    def __init__(self, chunk: int, cumulative: bool):
        super().__init__()
        self.proj = nn.Linear(CHANNELS, 8)
        self.chunk = chunk
        self.cumulative = cumulative

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        L = x.size(1)
        u = torch.tanh(self.proj(x))
        pos = torch.arange(L, device=x.device)
        cid = torch.div(pos, self.chunk, rounding_mode="floor")
        same = cid.view(L, 1) == cid.view(1, L)
        if self.cumulative:
            same = same & (pos.view(1, L) <= pos.view(L, 1))
        M = same.to(x.dtype)
        M = M / M.sum(dim=1, keepdim=True)
        return torch.cat([u, torch.matmul(M, u)], dim=-1)


class TimeNorm(nn.Module):
    """Standardise each channel over time: whole window (InstanceNorm/RevIN-style, leaks) or
    running mean/variance up to t (causal)."""

    def __init__(self, causal: bool, eps: float = 1e-5):
        super().__init__()
        self.proj = nn.Linear(CHANNELS, CHANNELS)
        self.causal = causal
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        u = self.proj(x)
        if self.causal:
            n = torch.arange(1, u.size(1) + 1, device=u.device).to(u.dtype).view(1, -1, 1)
            mean = torch.cumsum(u, dim=1) / n
            var = torch.clamp(torch.cumsum(u * u, dim=1) / n - mean * mean, min=0.0)
        else:
            mean = u.mean(dim=1, keepdim=True)
            var = u.var(dim=1, unbiased=False, keepdim=True)
        return torch.cat([x, (u - mean) / torch.sqrt(var + self.eps)], dim=-1)


class MovingAverage(nn.Module):
    """Rolling mean feature of width 5: centred (pads 2 | 2, leaks 2 steps) or trailing (pads 4 | 0)."""

    def __init__(self, centred: bool, window: int = 5):
        super().__init__()
        self.window = window
        self.left = window // 2 if centred else window - 1
        self.right = window - 1 - self.left

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        C = x.size(2)
        w = torch.ones(C, 1, self.window, dtype=x.dtype, device=x.device) / self.window
        ma = F.conv1d(F.pad(x.transpose(1, 2), [self.left, self.right]), w, groups=C).transpose(1, 2)
        return torch.cat([x, ma], dim=-1)


class TinyLeak(nn.Module):
    """O(1) causal conv feature plus 1e-6 * tanh(W x_{t+1}) (a genuine, very small leak)."""

    def __init__(self, weight: float = 1e-6):
        super().__init__()
        self.conv = nn.Conv1d(CHANNELS, CHANNELS, 3)
        self.leak = nn.Linear(CHANNELS, CHANNELS)
        self.weight = weight

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        causal = torch.tanh(time_conv(x, self.conv.weight, self.conv.bias, 2, 0))
        nxt = F.pad(x[:, 1:], [0, 0, 0, 1])                              # x_{t+1}, zero at the end
        return torch.cat([x, causal + self.weight * torch.tanh(self.leak(nxt))], dim=-1)


class SuffixPrefixMean(nn.Module):
    """Running mean computed as (total - suffix_sum + x_t) / (t+1): exact-arithmetic causal,
    but the cancellation carries rounding-level dependence on every future value."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(CHANNELS, CHANNELS)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        u = self.proj(x)
        total = u.sum(dim=1, keepdim=True)
        suffix = torch.flip(torch.cumsum(torch.flip(u, [1]), dim=1), [1])  # sum_{s >= t}
        n = torch.arange(1, u.size(1) + 1, device=u.device).to(u.dtype).view(1, -1, 1)
        return torch.cat([x, (total - suffix + u) / n], dim=-1)


class PositionFraction(nn.Module):
    """x + W (t / N): a position feature normalised by the sequence length N = L (reads how many
    inputs follow: length-dependent) or by the fixed maximum N = 64 (the twin)."""

    def __init__(self, by_length: bool):
        super().__init__()
        self.proj = nn.Linear(1, CHANNELS)
        self.by_length = by_length
        self.max_len = MAX_LEN

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        L = x.size(1)
        n = float(L) if self.by_length else float(self.max_len)
        frac = (torch.arange(L, device=x.device).to(x.dtype) / n).view(1, L, 1)
        return torch.cat([x, torch.tanh(x + self.proj(frac))], dim=-1)


class Centering(nn.Module):
    """Subtract a mean of a projection: over the batch at each position (rows mix, time-causal)
    or over the channels of each token (the twin)."""

    def __init__(self, over_batch: bool):
        super().__init__()
        self.proj = nn.Linear(CHANNELS, CHANNELS)
        self.over_batch = over_batch

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        u = torch.tanh(self.proj(x))
        m = u.mean(dim=0, keepdim=True) if self.over_batch else u.mean(dim=2, keepdim=True)
        return torch.cat([x, u - m], dim=-1)


class TrainBatchNorm(nn.Module):
    """Standardise each position's channels with statistics over the batch in training (as
    BatchNorm does with batch statistics), fixed running statistics in eval; or LayerNorm over the
    channels of each token in both modes (the twin)."""

    def __init__(self, batch_stats: bool, eps: float = 1e-5):
        super().__init__()
        self.proj = nn.Linear(CHANNELS, CHANNELS)
        self.batch_stats = batch_stats
        self.eps = eps
        self.channels = CHANNELS
        self.register_buffer("running_mean", torch.zeros(CHANNELS))
        self.register_buffer("running_var", torch.ones(CHANNELS))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        u = self.proj(x)
        if not self.batch_stats:
            z = F.layer_norm(u, [self.channels])
        elif self.training:
            mean = u.mean(dim=0, keepdim=True)
            var = u.var(dim=0, unbiased=False, keepdim=True)
            z = (u - mean) / torch.sqrt(var + self.eps)
        else:
            z = (u - self.running_mean) / torch.sqrt(self.running_var + self.eps)
        return torch.cat([x, z], dim=-1)


class RightContextConv(nn.Module):
    """A streaming encoder's convolution with right context: kernel 4 padded (1 | 2), so y_t reads
    x_{t-1} .. x_{t+2} (lookahead 2, past reach 1)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(CHANNELS, CHANNELS, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([x, torch.tanh(time_conv(x, self.conv.weight, self.conv.bias, 1, 2))], dim=-1)


class SlidingWindowAttention(nn.Module):
    """Single-head causal attention restricted to a band: y_t attends to x_{t-W+1} .. x_t."""

    def __init__(self, window: int):
        super().__init__()
        self.qkv = nn.Linear(CHANNELS, 3 * CHANNELS)
        self.window = window
        self.channels = CHANNELS

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        L = x.size(1)
        q, k, v = self.qkv(x).split(self.channels, dim=-1)
        s = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(float(self.channels))
        pos = torch.arange(L, device=x.device)
        lag = pos.view(L, 1) - pos.view(1, L)                            # t - s
        allowed = (lag >= 0) & (lag < self.window)
        s = s.masked_fill(~allowed, float("-inf"))
        return torch.cat([x, torch.matmul(torch.softmax(s, dim=-1), v)], dim=-1)


class SelectiveScan(nn.Module):
    """A selective state-space scan (Mamba-style, diagonal): s_t = a_t * s_{t-1} + (1 - a_t) * b_t with
    the decay a_t = sigmoid(W h_t) chosen by the token. The bidirectional bug adds the same scan run
    from the end (a bidirectional block left in a decoder): every position reads the whole future."""

    def __init__(self, bidirectional: bool):
        super().__init__()
        self.bidirectional = bidirectional
        self.a = nn.Linear(WIDTH, WIDTH)
        self.b = nn.Linear(WIDTH, WIDTH)

    def scan(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        s = torch.zeros_like(b[:, 0])
        out: List[torch.Tensor] = []
        for t in range(b.size(1)):
            s = a[:, t] * s + (1 - a[:, t]) * b[:, t]
            out.append(s)
        return torch.stack(out, 1)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        a, b = torch.sigmoid(self.a(h) + 3.0), self.b(h)  # decays near 0.95: the far future stays far above 1e-9
        y = self.scan(a, b)
        if self.bidirectional:
            y = y + self.scan(a.flip(1), b.flip(1)).flip(1)
        return h + y


class TokenShift(nn.Module):
    """RWKV's token shift: each channel mixes x_t with x_{t-1} (zero before the start). The bug
    shifts the wrong way (pad on the right): x_{t+1} is mixed in, horizon 1."""

    def __init__(self, wrong_way: bool):
        super().__init__()
        self.wrong_way = wrong_way
        self.mu = nn.Parameter(torch.rand(WIDTH))
        self.proj = nn.Linear(WIDTH, WIDTH)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        if self.wrong_way:
            other = F.pad(h.transpose(1, 2), (0, 1))[:, :, 1:].transpose(1, 2)
        else:
            other = F.pad(h.transpose(1, 2), (1, 0))[:, :, :-1].transpose(1, 2)
        return h + self.proj(self.mu * h + (1 - self.mu) * other)


class Retention(nn.Module):
    """Parallel retention (RetNet): (Q K^T * D) V with the decay D[t, s] = gamma^(t - s) for s <= t and
    0 above the diagonal. The bug builds D from |t - s| without the causal cut: a decayed but real
    read of the whole future (gamma^31 = 0.04 at L 32)."""

    def __init__(self, causal: bool, gamma: float = 0.9):
        super().__init__()
        self.causal = causal
        self.gamma = gamma
        self.width = WIDTH
        self.qkv = nn.Linear(WIDTH, 3 * WIDTH)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(h).chunk(3, -1)
        L = h.size(1)
        idx = torch.arange(L, device=h.device)
        dist = (idx.view(L, 1) - idx.view(1, L)).to(h.dtype)
        decay = torch.pow(torch.full_like(dist, self.gamma), dist.abs())
        if self.causal:
            decay = decay.masked_fill(dist < 0, 0.0)
        return h + (q @ k.transpose(1, 2) / self.width * decay) @ v


class Float32SoftmaxAttention(nn.Module):
    """Attention that upcasts its scores for the softmax and casts back, the pattern of most Hugging
    Face attention code: softmax(s, dim=-1, dtype=torch.float32).to(q.dtype). After .double() that
    softmax still runs in float32, so the "float64" forward rounds at ~1e-8: a prefix run alone
    differs from the full run by float32 rounding, which is not a length dependence."""

    def __init__(self, causal: bool, heads: int = 2, dropout: float = 0.1):
        super().__init__()
        self.qkv = nn.Linear(WIDTH, 3 * WIDTH)
        self.out = nn.Linear(WIDTH, WIDTH)
        self.heads = heads
        self.causal = causal
        self.p = dropout

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        B, L, d = h.shape
        dh = d // self.heads
        q, k, v = self.qkv(h).split(d, dim=-1)
        q = q.view(B, L, self.heads, dh).transpose(1, 2)
        k = k.view(B, L, self.heads, dh).transpose(1, 2)
        v = v.view(B, L, self.heads, dh).transpose(1, 2)
        s = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(dh)
        if self.causal:
            s = s.masked_fill(torch.ones(L, L, dtype=torch.bool, device=h.device).triu(1), float("-inf"))
        a = torch.softmax(s, dim=-1, dtype=torch.float32).to(q.dtype)
        a = F.dropout(a, self.p, self.training)
        o = torch.matmul(a, v).transpose(1, 2).reshape(B, L, d)
        return h + self.out(o)


class Float32Middle(nn.Module):
    """A causal running mean computed as a [L, L] lower-triangular matmul on an explicit .float()
    copy of the hidden states, cast back afterwards: causal in exact arithmetic, float32 whatever the
    model was converted to (the float32 GEMM rounds differently at each length)."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(WIDTH, WIDTH)
        self.b = nn.Linear(WIDTH, WIDTH)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        u = self.a(h).float()
        L = h.size(1)
        m = torch.ones(L, L, dtype=torch.float32, device=h.device).tril()
        m = m / m.sum(1, keepdim=True)
        return h + self.b(torch.tanh(torch.matmul(m, u)).to(h.dtype))


def grassmann(pairing: str, offset_mode: str) -> nn.Module:
    return LanguageModel(vocab=VOCAB, d=WIDTH, n_layers=2, max_len=MAX_LEN, mixer=pairing,
                         offsets=[1, 2], offset_mode=offset_mode, r=4, n_heads=4, dropout=0.1)


# --------------------------------------------------------------------------------------------
# the cases.  expect = hand-derived; every value is re-checked by brute force below.
# --------------------------------------------------------------------------------------------

def C(name, file, build, input, seq_len, verdict, horizon, leak_class, why, rounding_only=None,
      seed=0, twin=None, eval_horizon=None, train_horizon=None, contract=None, violations=None,
      length_dependent=None, batch_coupled=None, past_horizon=None, float32_sized_floor=None,
      train_from_eval=None, leak_sites=None):
    """verdict: "leaky" exactly when a property of the contract is violated (future beyond the
    lookahead, length, batch, window); horizon: the future leak horizon, whatever the contract.
    contract: {"lookahead": K, "window": W} (default strictly causal, unbounded past). The
    remaining keyword expectations are checked (and written to the suite) only when given;
    leak_sites: the module paths the builder planted the leak in (future, length or batch: the
    localise check names them), written to the suite as stated."""
    return dict(name=name, file=file, build=build, input=input, seq_len=seq_len, verdict=verdict,
                horizon=horizon, rounding_only=rounding_only, leak_class=leak_class, why=why,
                seed=seed, twin=twin,
                eval_horizon=horizon if eval_horizon is None else eval_horizon,
                train_horizon=horizon if train_horizon is None else train_horizon,
                contract=contract or {}, violations=violations, length_dependent=length_dependent,
                batch_coupled=batch_coupled, past_horizon=past_horizon, float32_sized_floor=float32_sized_floor,
                train_from_eval=train_from_eval, leak_sites=leak_sites)


TOK = f"tokens:{VOCAB}"
FEAT = f"features:{CHANNELS}"

CASES = [
    C("bidirectional-attention", "bidirectional_attention.pt", lambda: TokenLM(Attention(causal=False)),
      TOK, 32, "leaky", 31, "missing-causal-mask",
      "Decoder self-attention with the causal mask forgotten (no attn_mask / is_causal dropped), so every position attends to the whole sequence.",
      twin="causal-attention", seed=1, leak_sites=["mixer"]),
    C("causal-attention", "causal_attention.pt", lambda: TokenLM(Attention(causal=True)),
      TOK, 32, "causal", 0, "missing-causal-mask",
      "The same decoder with the upper-triangular -inf mask: the correct causal twin.",
      rounding_only=False, twin="bidirectional-attention", seed=1),
    C("conv-symmetric-padding", "conv_symmetric_padding.pt", lambda: TokenLM(ConvMixer(1, 1)),
      TOK, 32, "leaky", 1, "symmetric-conv-padding",
      "nn.Conv1d(kernel_size=3, padding=1) used as a 'causal' convolution: symmetric padding lets y_t read x_{t+1}.",
      twin="conv-left-padding", seed=2, leak_sites=["mixer"]),
    C("conv-left-padding", "conv_left_padding.pt", lambda: TokenLM(ConvMixer(2, 0)),
      TOK, 32, "causal", 0, "symmetric-conv-padding",
      "The same kernel-3 convolution with left padding k-1 = 2 and none on the right: the correct causal convolution.",
      rounding_only=False, twin="conv-symmetric-padding", seed=2),
    C("fft-conv-circular", "fft_conv_circular.pt", lambda: FeatureModel(FFTConv(padded=False), 2 * CHANNELS),
      FEAT, 32, "leaky", 31, "fft-circular-wrap",
      "FFT long convolution (Hyena/H3/S4-style) with FFT size L instead of 2L: circular wrap-around feeds the end of the sequence into its start.",
      twin="fft-conv-padded", seed=3, leak_sites=["core"]),
    C("fft-conv-padded", "fft_conv_padded.pt", lambda: FeatureModel(FFTConv(padded=True), 2 * CHANNELS),
      FEAT, 32, "causal", 0, "fft-circular-wrap",
      "The same long convolution with FFT size 2L (linear convolution): causal, but every output picks up rounding-level cross-talk from future positions through the transform.",
      rounding_only=True, twin="fft-conv-circular", seed=3),
    C("chunk-mean-broadcast", "chunk_mean_broadcast.pt", lambda: FeatureModel(ChunkMean(8, cumulative=False), 16),
      FEAT, 32, "leaky", 7, "chunk-broadcast",
      "Chunked/blocked processing that computes a per-chunk summary (mean over a chunk of 8) and broadcasts it to every position of the chunk, so early positions see the rest of their chunk.",
      twin="chunk-cumulative-mean", seed=4, leak_sites=["core"]),
    C("chunk-cumulative-mean", "chunk_cumulative_mean.pt", lambda: FeatureModel(ChunkMean(8, cumulative=True), 16),
      FEAT, 32, "causal", 0, "chunk-broadcast",
      "Cumulative (prefix) mean within each chunk of 8: the causal form of the chunk summary.",
      rounding_only=False, twin="chunk-mean-broadcast", seed=4),
    C("time-axis-normalisation", "time_axis_normalisation.pt", lambda: FeatureModel(TimeNorm(causal=False), 2 * CHANNELS),
      FEAT, 32, "leaky", 31, "time-axis-normalisation",
      "Standardising each channel over the whole time axis (InstanceNorm1d / RevIN / z-scoring the input window), so every output depends on future values through the window mean and variance.",
      twin="causal-normalisation", seed=5, leak_sites=["core"]),
    C("causal-normalisation", "causal_normalisation.pt", lambda: FeatureModel(TimeNorm(causal=True), 2 * CHANNELS),
      FEAT, 32, "causal", 0, "time-axis-normalisation",
      "Running mean and variance up to t (cumulative sums): the causal normalisation.",
      rounding_only=False, twin="time-axis-normalisation", seed=5),
    C("summary-from-last", "summary_from_last.pt", lambda: TokenLM(SummaryMixer(from_last=True)),
      TOK, 32, "leaky", 31, "global-summary",
      "A sequence summary taken from the last position (encoder-style pooled/CLS vector) added to every position of a decoder.",
      twin="summary-from-first", seed=6, leak_sites=["mixer"]),
    C("summary-from-first", "summary_from_first.pt", lambda: TokenLM(SummaryMixer(from_last=False)),
      TOK, 32, "causal", 0, "global-summary",
      "The summary taken from the first (BOS) position, which every later position may see.",
      rounding_only=False, twin="summary-from-last", seed=6),
    C("train-only-leak", "train_only_leak.pt", lambda: TokenLM(TrainOnlyLeak()),
      TOK, 32, "leaky", 1, "train-only-branch",
      "A branch taken only under `if self.training:` (augmentation/mixing via torch.roll(h, -1) along time) pulls in the next position; eval-mode-only audits miss it.",
      twin="dropout-only", seed=7, eval_horizon=0, train_horizon=1, leak_sites=["mixer"]),
    C("dropout-only", "dropout_only.pt", lambda: TokenLM(DropoutOnly(), dropout=0.2),
      TOK, 32, "causal", 0, "train-only-branch",
      "A causal model whose only train/eval difference is dropout: causal in both modes, reported leaky only if the audit's paired passes do not reuse the same dropout masks (RNG reset).",
      rounding_only=False, twin="train-only-leak", seed=7),
    C("long-seq-only-leak", "long_seq_only_leak.pt", lambda: TokenLM(LengthSwitchConv(threshold=16)),
      TOK, 32, "leaky", 31, "length-dependent-path",
      "A fast path taken only when L > 16 (FFT convolution of size L, circular) while short inputs use an exact causal convolution, so short-sequence tests pass.",
      twin="long-seq-only-leak-at-16", seed=8, leak_sites=["mixer"]),
    C("long-seq-only-leak-at-16", "long_seq_only_leak.pt", None,
      TOK, 16, "causal", 0, "length-dependent-path",
      "The same model audited only up to L = 16, where it takes the causal path: how such a leak escapes short unit tests.",
      rounding_only=False, twin="long-seq-only-leak", seed=8),
    C("centred-moving-average", "centred_moving_average.pt", lambda: FeatureModel(MovingAverage(centred=True), 2 * CHANNELS, out=1),
      FEAT, 32, "leaky", 2, "centred-window-feature",
      "A forecasting feature computed with a centred rolling window (pandas rolling(5, center=True)), so the feature at t uses x_{t+1} and x_{t+2}.",
      twin="trailing-moving-average", seed=9, leak_sites=["core"]),
    C("trailing-moving-average", "trailing_moving_average.pt", lambda: FeatureModel(MovingAverage(centred=False), 2 * CHANNELS, out=1),
      FEAT, 32, "causal", 0, "centred-window-feature",
      "The same rolling mean with a trailing window of 5 (rolling(5)): causal.",
      rounding_only=False, twin="centred-moving-average", seed=9),
    C("tiny-leak", "tiny_leak.pt", lambda: FeatureModel(TinyLeak(1e-6), 2 * CHANNELS),
      FEAT, 32, "leaky", 1, "tiny-leak",
      "A future term weighted ~1e-6 of the output scale (e.g. a soft mask with a finite penalty, an epsilon smoothing term): near float32 rounding level but a genuine dependence.",
      seed=10, leak_sites=["core"]),
    C("suffix-cancelled-prefix-mean", "suffix_cancelled_prefix_mean.pt", lambda: FeatureModel(SuffixPrefixMean(), 2 * CHANNELS),
      FEAT, 32, "causal", 0, "rounding-cross-talk",
      "A running mean computed as (total - reversed-cumsum suffix + x_t)/(t+1): causal in exact arithmetic, but the cancellation carries rounding-level dependence on every future value.",
      rounding_only=True, seed=11),
    C("grassmann-future-per-layer", "grassmann_future_per_layer.pt", lambda: grassmann("future", "per-layer"),
      TOK, 32, "leaky", 3, "future-pairing",
      "The paper's Grassmann layer read literally: pairs (z_t, z_{t+D}), offsets 1 then 2 (one per layer), so y_t sees x_{t+1+2}.",
      twin="grassmann-past-per-layer", seed=12, leak_sites=["blocks.0.mixer", "blocks.1.mixer"]),
    C("grassmann-future-all", "grassmann_future_all.pt", lambda: grassmann("future", "all"),
      TOK, 32, "leaky", 4, "future-pairing",
      "Literal future pairing with every layer using both offsets {1, 2}: the window widens to 2 layers x 2 = 4.",
      twin="grassmann-past-all", seed=13, leak_sites=["blocks.0.mixer", "blocks.1.mixer"]),
    C("grassmann-past-per-layer", "grassmann_past_per_layer.pt", lambda: grassmann("past", "per-layer"),
      TOK, 32, "causal", 0, "future-pairing",
      "The reproductions' reading, pairs (z_t, z_{t-D}), offsets 1 then 2: causal by construction.",
      rounding_only=False, twin="grassmann-future-per-layer", seed=12),
    C("grassmann-past-all", "grassmann_past_all.pt", lambda: grassmann("past", "all"),
      TOK, 32, "causal", 0, "future-pairing",
      "Past pairing with every layer using both offsets {1, 2}: causal.",
      rounding_only=False, twin="grassmann-future-all", seed=13),
    # ---- beyond the time axis: length, batch, declared lookahead and window ----
    C("length-normalised-position", "length_normalised_position.pt", lambda: FeatureModel(PositionFraction(by_length=True), 2 * CHANNELS),
      FEAT, 32, "leaky", 0, "length-reading",
      "A position feature t / L (positions normalised by the sequence length, as in relative-position or time-fraction encodings): y_t knows how many inputs follow, which same-length perturbation cannot see; a prefix run gives other outputs.",
      twin="max-len-normalised-position", seed=14, violations=["length"], length_dependent=True, batch_coupled=False, leak_sites=["core"]),
    C("max-len-normalised-position", "max_len_normalised_position.pt", lambda: FeatureModel(PositionFraction(by_length=False), 2 * CHANNELS),
      FEAT, 32, "causal", 0, "length-reading",
      "The same feature normalised by the fixed maximum length 64: length-independent.",
      rounding_only=False, twin="length-normalised-position", seed=14, violations=[], length_dependent=False,
      batch_coupled=False),
    C("batch-mean-centering", "batch_mean_centering.pt", lambda: FeatureModel(Centering(over_batch=True), 2 * CHANNELS),
      FEAT, 32, "leaky", 0, "batch-mixing",
      "Centering by the mean over the batch at each position: time-causal, but every row reads the other rows; in a batched evaluation of consecutive text (row b+1 continues row b) that is a leak, named batch, with future horizon 0.",
      twin="channel-mean-centering", seed=15, violations=["batch"], batch_coupled=True, length_dependent=False, leak_sites=["core"]),
    C("channel-mean-centering", "channel_mean_centering.pt", lambda: FeatureModel(Centering(over_batch=False), 2 * CHANNELS),
      FEAT, 32, "causal", 0, "batch-mixing",
      "Centering by the mean over each token's channels: rows independent.",
      rounding_only=False, twin="batch-mean-centering", seed=15, violations=[], batch_coupled=False, length_dependent=False),
    C("train-batch-statistics", "train_batch_statistics.pt", lambda: FeatureModel(TrainBatchNorm(batch_stats=True), 2 * CHANNELS),
      FEAT, 32, "leaky", 0, "train-batch-statistics",
      "BatchNorm-style statistics over the batch in training, running statistics in eval: rows mix in train mode only; an eval-only audit misses it, a same-batch future probe reads it as a future leak of horizon L-1.",
      twin="layer-norm-per-token", seed=16, violations=["batch"], batch_coupled=True, length_dependent=False, leak_sites=["core"]),
    C("layer-norm-per-token", "layer_norm_per_token.pt", lambda: FeatureModel(TrainBatchNorm(batch_stats=False), 2 * CHANNELS),
      FEAT, 32, "causal", 0, "train-batch-statistics",
      "LayerNorm over each token's channels in both modes: rows independent.",
      rounding_only=False, twin="train-batch-statistics", seed=16, violations=[], batch_coupled=False, length_dependent=False),
    C("right-context-within-lookahead", "right_context_conv.pt", lambda: FeatureModel(RightContextConv(), 2 * CHANNELS),
      FEAT, 32, "causal", 2, "declared-lookahead",
      "A streaming convolution with 2 frames of right context, audited under its declared contract --allow-lookahead 2: the lookahead is allowed, the contract holds.",
      twin="right-context-over-lookahead", seed=17, contract={"lookahead": 2}, violations=[], past_horizon=1,
      length_dependent=False, batch_coupled=False),
    C("right-context-over-lookahead", "right_context_conv.pt", None,
      FEAT, 32, "leaky", 2, "declared-lookahead",
      "The same model declared with --allow-lookahead 1: it reads one frame further than it says.",
      twin="right-context-within-lookahead", seed=17, contract={"lookahead": 1}, violations=["future"], past_horizon=1, leak_sites=["core"]),
    C("sliding-window-within", "sliding_window_attention.pt", lambda: FeatureModel(SlidingWindowAttention(window=4), 2 * CHANNELS),
      FEAT, 32, "causal", 0, "declared-window",
      "Sliding-window attention over x_{t-3} .. x_t audited under --window 4: the contract holds.",
      rounding_only=False, twin="sliding-window-over", seed=18, contract={"window": 4}, violations=[], past_horizon=3,
      length_dependent=False, batch_coupled=False),
    C("sliding-window-over", "sliding_window_attention.pt", None,
      FEAT, 32, "leaky", 0, "declared-window",
      "The same model declared with --window 3: it reads one position further back than the window allows.",
      twin="sliding-window-within", seed=18, contract={"window": 3}, violations=["window"], past_horizon=3),
    C("selective-scan-bidirectional", "selective_scan_bidirectional.pt", lambda: TokenLM(SelectiveScan(bidirectional=True)),
      TOK, 32, "leaky", 31, "bidirectional-scan",
      "A selective state-space scan (input-dependent decay) with a backward scan added, as a bidirectional block left in a decoder: every position reads the whole future.",
      twin="selective-scan-causal", seed=31, leak_sites=["mixer"]),
    C("selective-scan-causal", "selective_scan_causal.pt", lambda: TokenLM(SelectiveScan(bidirectional=False)),
      TOK, 32, "causal", 0, "bidirectional-scan",
      "The same selective scan, forward only: s_t depends on x_0 .. x_t.", twin="selective-scan-bidirectional", seed=31, rounding_only=False),
    C("token-shift-wrong-way", "token_shift_wrong_way.pt", lambda: TokenLM(TokenShift(wrong_way=True)),
      TOK, 32, "leaky", 1, "token-shift-direction",
      "RWKV-style token shift padded on the wrong side: x_{t+1} is mixed into position t.",
      twin="token-shift", seed=32, leak_sites=["mixer"]),
    C("token-shift", "token_shift.pt", lambda: TokenLM(TokenShift(wrong_way=False)),
      TOK, 32, "causal", 0, "token-shift-direction",
      "RWKV-style token shift: position t mixes x_t with x_{t-1}.", twin="token-shift-wrong-way", seed=32, rounding_only=False),
    C("retention-no-causal-cut", "retention_no_causal_cut.pt", lambda: TokenLM(Retention(causal=False)),
      TOK, 32, "leaky", 31, "retention-decay-mask",
      "Parallel retention whose decay matrix is gamma^|t-s| without the causal cut: a decayed read of every future position.",
      twin="retention", seed=33, leak_sites=["mixer"]),
    C("retention", "retention.pt", lambda: TokenLM(Retention(causal=True)),
      TOK, 32, "causal", 0, "retention-decay-mask",
      "Parallel retention with the causal decay mask gamma^(t-s), s <= t.", twin="retention-no-causal-cut", seed=33, rounding_only=False),
    C("float32-softmax-attention", "float32_softmax_attention.pt", lambda: TokenLM(Float32SoftmaxAttention(causal=True)),
      TOK, 32, "causal", 0, "float32-island",
      "Causal attention with a Hugging Face-style float32 softmax (softmax(s, dtype=torch.float32).to(q.dtype)): after .double() that softmax still rounds in float32, so prefix runs differ from the full run at ~1e-8; decided against the measured rounding floor it is causal and length-independent.",
      twin="float32-softmax-attention-unmasked", seed=34, rounding_only=False, length_dependent=False,
      float32_sized_floor=True),
    C("float32-softmax-attention-unmasked", "float32_softmax_attention_unmasked.pt", lambda: TokenLM(Float32SoftmaxAttention(causal=False)),
      TOK, 32, "leaky", 31, "float32-island",
      "The same float32-softmax attention with the causal mask forgotten: a leak far above the float32 floor.",
      twin="float32-softmax-attention", seed=34, leak_sites=["mixer"]),
    C("float32-middle", "float32_middle.pt", lambda: TokenLM(Float32Middle()),
      TOK, 32, "causal", 0, "float32-island",
      "A causal running mean computed on an explicit .float() copy of the hidden states (a float32 lower-triangular matmul) and cast back: causal, with a float32-sized rounding floor in the float64 forward.",
      seed=35, rounding_only=False, length_dependent=False, float32_sized_floor=True),
    C("train-only-leak-deep", "train_only_leak_deep.pt",
      lambda: FeatureModel(Lifted(Passthrough(Passthrough(TrainOnlyLeak()))), WIDTH),
      FEAT, 32, "leaky", 1, "train-only-branch",
      "The train-only torch.roll branch three submodules down in a model with no dropout anywhere: its only "
      "train/eval difference is that one `if self.training:`, which an audit that takes train mode to equal eval "
      "mode (to skip the second probe) must find, or it would miss the leak.",
      seed=36, eval_horizon=0, train_horizon=1, train_from_eval=False, leak_sites=["core.core.inner.inner"]),
]


# --------------------------------------------------------------------------------------------
# brute-force checking on the saved TorchScript files
# --------------------------------------------------------------------------------------------

# The audit's train-mode proof (src/audit/train_mode_proof.cpp), written again here on the saved
# file: forward with every call inlined never reads `training` and draws no random numbers.
RECURRENT_OPS = {"lstm", "gru", "rnn_tanh", "rnn_relu", "quantized_lstm", "quantized_gru"}
RANDOM_OPS = {"rand", "rand_like", "randn", "randn_like", "randint", "randint_like", "randperm", "bernoulli",
              "bernoulli_", "normal", "normal_", "multinomial", "poisson", "binomial", "uniform_", "random_",
              "exponential_", "geometric_", "cauchy_", "log_normal_", "rrelu", "rrelu_", "rrelu_with_noise",
              "rrelu_with_noise_", "_standard_gamma", "_sample_dirichlet", "_fused_dropout", "seed", "manual_seed",
              "initial_seed", "_no_grad_uniform_", "_no_grad_normal_"}
DROPOUT_OPS = {"dropout", "dropout_", "feature_dropout", "feature_dropout_", "alpha_dropout", "alpha_dropout_",
               "feature_alpha_dropout", "feature_alpha_dropout_", "native_dropout"}


def train_mode_proven(path: str) -> bool:
    module = torch.jit.load(path)  # kept alive: the graph refers to its types
    g = module.forward.inlined_graph
    modules = {sub._c._type().qualified_name() for sub in module.modules()}

    def holds(t, containers: bool) -> bool:  # a TorchScript class (not a module); lists / dicts too
        if t.kind() == "ClassType":
            return t.qualified_name() not in modules
        if containers and t.kind() in ("ListType", "DictType"):
            return True
        return any(holds(c, containers) for c in t.containedTypes())

    def constant(v, want) -> bool:
        return v.node().kind() == "prim::Constant" and v.toIValue() == want and type(v.toIValue()) is type(want)

    def ok(block) -> bool:
        for n in block.nodes():
            kind = n.kind()
            ns, op = kind.split("::", 1)
            if kind == "prim::GetAttr" and (n.s("name") == "training" or holds(n.output().type(), True)):
                return False
            if kind == "prim::SetAttr":
                return False
            if any(holds(v.type(), False) for v in list(n.inputs()) + list(n.outputs())):
                return False
            if ns == "aten" and op in RECURRENT_OPS:
                sig = str(n.schema())
                names = [a.strip().split(" ")[-1].split("=")[0] for a in sig[sig.index("(") + 1:sig.rindex(") ->")].split(",")]
                args = dict(zip([x for x in names if x != "*"], n.inputs()))
                if not (("train" in args and constant(args["train"], False))
                        or ("dropout" in args and constant(args["dropout"], 0.0))):
                    return False
            if kind in ("prim::CallMethod", "prim::CallFunction", "prim::PythonOp") or ns not in ("aten", "prim"):
                return False
            if ns == "aten" and (op in RANDOM_OPS or "Generator" in str(n.schema())):
                return False
            if ns == "aten" and op in DROPOUT_OPS:
                train = list(n.inputs())[2]
                if train.node().kind() != "prim::Constant" or train.toIValue() is not False:
                    return False
            if not all(ok(b) for b in n.blocks()):
                return False
        return True

    return ok(g)


def schedule(L: int) -> List[int]:
    out: List[int] = []
    cands = [L, L - 1]
    k = L // 2
    while k >= 2:
        cands.append(k)
        k //= 2
    for c in cands:
        if c >= 2 and c not in out:
            out.append(c)
    return out


def parse_input(spec: str) -> Tuple[str, int]:
    kind, n = spec.split(":")
    return kind, int(n)


def make_input(kind: str, n: int, B: int, L: int, gen: torch.Generator, dtype) -> torch.Tensor:
    if kind == "tokens":
        return torch.randint(0, n, (B, L), generator=gen)
    return torch.randn(B, L, n, generator=gen, dtype=torch.float64).to(dtype)


def perturb(x: torch.Tensor, kind: str, n: int, s: int, gen: torch.Generator) -> torch.Tensor:
    x2 = x.clone()
    if kind == "tokens":
        shift = torch.randint(1, n, (x.size(0),), generator=gen)
        x2[:, s] = (x2[:, s] + shift) % n
    else:
        x2[:, s] = x2[:, s] + torch.randn(x.size(0), x.size(2), generator=gen, dtype=torch.float64).to(x.dtype)
    return x2


# The floor's jitter step and segments (src/audit/precision_switch.h). Defined here, below every
# model class: the saved files record their classes' source lines.
FLOOR_STEP = 2e-7
FLOOR_SEGMENTS = 8


def precision_floor(path: str, spec: str, L: int, delta: float = FLOOR_STEP, segments: int = FLOOR_SEGMENTS) -> float:
    """The rounding floor of the model's float64 forward (eval mode, 2 rows): every parameter
    scaled by 1 + k*delta*u (u ~ N(0,1) fixed, k = -2G..2G along one line, G segments of 5 samples
    sharing only their endpoints); in each segment D2(d) - D2(2d)/4 of the second differences
    cancels the smooth d^2 term and leaves rounding; per output the least over the segments (a
    kink crossed in one segment -- ReLU, max, clamp, abs -- does not reach the others), the
    largest of those relative to max |y|: ~1e-15 for a true float64 forward, ReLU included, ~1e-8
    with a float32 island. The audit measures the same thing its own way (Prober::precision_floor)."""
    kind, n = parse_input(spec)
    m = torch.jit.load(path)
    m.to(torch.float64)
    m.eval()
    gen = torch.Generator().manual_seed(4000 + L)
    x = make_input(kind, n, 2, L, gen, torch.float64)
    params = list(m.parameters())
    orig = [p.detach().clone() for p in params]
    dirs = [torch.randn(p.shape, generator=gen, dtype=p.dtype) for p in params]
    xdir = torch.randn(x.shape, generator=gen, dtype=torch.float64) if kind == "features" else None
    K = 2 * segments
    ys = {}
    with torch.no_grad():
        for k in range(-K, K + 1):
            for p, o, u in zip(params, orig, dirs):
                p.copy_(o * (1 + k * delta * u))
            ys[k] = m(x if xdir is None else x * (1 + k * delta * xdir)).to(torch.float64)
        for p, o in zip(params, orig):
            p.copy_(o)
    least = None
    for g in range(segments):
        c = -K + 2 + 4 * g
        d2 = ys[c + 1] + ys[c - 1] - 2 * ys[c]
        d2_twice = ys[c + 2] + ys[c - 2] - 2 * ys[c]
        r = (d2 - d2_twice / 4).abs()
        least = r if least is None else torch.minimum(least, r)
    return (least.max() / ys[0].abs().max()).item()


def probe(path: str, spec: str, L: int, train: bool, dtype, tol: float = TOL_F64) -> Dict:
    """Perturb each position s >= 1 alone (2 draws) and record which outputs y_t, t < s, move.
    Returns horizon (threshold tol relative to max |y|: TOL_F64, or above the model's float64
    floor), the largest relative change seen at any t < s, and a cut-based verdict (perturb all
    s > c at once, as the audit does)."""
    kind, n = parse_input(spec)
    m = torch.jit.load(path)
    m.to(dtype)
    m.train(train)
    gen = torch.Generator().manual_seed(1000 + L)
    x = make_input(kind, n, 2, L, gen, dtype)

    def run(inp):
        if train:
            torch.manual_seed(TRAIN_SEED)
        with torch.no_grad():
            return m(inp).to(torch.float64)

    y0 = run(x)
    assert y0.shape[:2] == (2, L), (path, y0.shape)
    assert torch.equal(y0, run(x)), f"{path}: not deterministic under a fixed seed"
    scale = y0.abs().max().item()
    horizon, past_horizon, max_rel, moved = 0, 0, 0.0, 0.0
    for s in range(0, L):
        for _ in range(2):
            d = (run(perturb(x, kind, n, s, gen)) - y0).abs()
            d = d.reshape(2, L, -1).amax(dim=(0, 2)) / scale
            moved = max(moved, d.max().item())
            later = (d[s + 1:] > tol).nonzero().flatten()           # outputs t > s that read x_s
            if later.numel():
                past_horizon = max(past_horizon, int(later.max()) + 1)
            if s == 0:
                continue
            past = d[:s]
            max_rel = max(max_rel, past.max().item())
            dep = (past > tol).nonzero().flatten()
            if dep.numel():
                horizon = max(horizon, s - int(dep.min()))
    assert moved > 0, f"{path}: perturbations changed nothing"
    cut_leak = False
    for c in range(L - 1):
        x2 = x
        for s in range(c + 1, L):
            x2 = perturb(x2, kind, n, s, gen)
        d = (run(x2) - y0).abs().reshape(2, L, -1)[:, :c + 1].max().item() / scale
        cut_leak = cut_leak or d > tol
    return dict(horizon=horizon, past_horizon=past_horizon, max_rel=max_rel, cut_leak=cut_leak)


def length_dependent(path: str, spec: str, L: int, guard: int, tol: float = TOL_F64) -> bool:
    """Eval mode, float64: y_t of each prefix run x_0..x_{p-1} alone against the full run, for
    t < p - guard (what the future dependence explains is not a length effect)."""
    kind, n = parse_input(spec)
    m = torch.jit.load(path)
    m.to(torch.float64)
    m.eval()
    gen = torch.Generator().manual_seed(2000 + L)
    x = make_input(kind, n, 2, L, gen, torch.float64)
    with torch.no_grad():
        y = m(x).to(torch.float64).reshape(2, L, -1)
        scale = y.abs().max().item()
        for p in range(2, L):
            k = p - guard
            if k <= 0:
                continue
            yp = m(x[:, :p].contiguous()).to(torch.float64).reshape(2, p, -1)
            if (yp[:, :k] - y[:, :k]).abs().max().item() / scale > tol:
                return True
    return False


def batch_coupled(path: str, spec: str, L: int, tol: float = TOL_F64) -> bool:
    """float64, eval and train mode (RNG re-seeded): 4 rows, the odd rows replaced; do the even
    rows move?"""
    kind, n = parse_input(spec)
    m = torch.jit.load(path)
    m.to(torch.float64)
    gen = torch.Generator().manual_seed(3000 + L)
    for train in (False, True):
        m.train(train)
        x = make_input(kind, n, 4, L, gen, torch.float64)
        x2 = x.clone()
        x2[1::2] = make_input(kind, n, 2, L, gen, torch.float64)
        with torch.no_grad():
            torch.manual_seed(TRAIN_SEED)
            y = m(x).to(torch.float64)
            torch.manual_seed(TRAIN_SEED)
            y2 = m(x2).to(torch.float64)
        if (y2[0::2] - y[0::2]).abs().max().item() / y.abs().max().item() > tol:
            return True
    return False


def check_case(case: Dict) -> Dict:
    path = os.path.join(CTRL, case["file"])
    floor = precision_floor(path, case["input"], case["seq_len"])
    tol = max(TOL_F64, FLOOR_MARGIN * floor)  # the audit's rule: never decide below the floor
    tol_h = horizon_tol(floor)
    res = {}
    for mode, train in (("eval", False), ("train", True)):
        h64, p64, r64, r32, cut = 0, 0, 0.0, 0.0, False
        per_len = {}
        for L in schedule(case["seq_len"]):
            a = probe(path, case["input"], L, train, torch.float64, tol_h)
            b = probe(path, case["input"], L, train, torch.float32)
            h64 = max(h64, a["horizon"])
            p64 = max(p64, a["past_horizon"])
            r64 = max(r64, a["max_rel"])
            r32 = max(r32, b["max_rel"])
            cut = cut or a["cut_leak"]
            per_len[L] = a["horizon"]
        assert cut == (h64 > 0), (case["name"], mode, "cut-based and per-position verdicts differ")
        res[mode] = dict(leak_horizon=h64, horizon_by_length=per_len, past_horizon=p64,
                         max_rel_future_change_f64=r64, max_rel_future_change_f32=r32)
    horizon = max(res["eval"]["leak_horizon"], res["train"]["leak_horizon"])
    guard = max(case["contract"].get("lookahead", 0), horizon)
    res["length_dependent"] = length_dependent(path, case["input"], case["seq_len"], guard, tol)
    res["batch_coupled"] = batch_coupled(path, case["input"], case["seq_len"], tol)
    res["precision_floor_f64"] = floor
    res["float32_sized_floor"] = floor > FLOAT32_SIZED
    res["tolerance"] = tol
    res["tolerance_horizon"] = tol_h
    res["train_from_eval"] = train_mode_proven(path)
    if res["train_from_eval"]:  # the proof, checked: brute force in train mode is brute force in eval mode
        assert res["eval"] == res["train"], (case["name"], "train mode proven equal to eval, but they differ")
    return res


def violations_of(case: Dict, horizon: int, past_horizon: int, got: Dict) -> List[str]:
    """The properties the contract loses, in the audit's order: future, length, batch, window."""
    out = []
    if horizon > case["contract"].get("lookahead", 0):
        out.append("future")
    if got["length_dependent"]:
        out.append("length")
    if got["batch_coupled"]:
        out.append("batch")
    window = case["contract"].get("window")
    if window is not None and past_horizon > window - 1:
        out.append("window")
    return out


def main() -> None:
    # TorchScript writes module constants in set-iteration order; fix Python's hash seed so
    # that the .pt files are byte-identical from run to run.
    if os.environ.get("PYTHONHASHSEED") != "0":
        os.execve(sys.executable, [sys.executable] + sys.argv, {**os.environ, "PYTHONHASHSEED": "0"})
    torch.set_num_threads(1)
    os.makedirs(CTRL, exist_ok=True)
    for case in CASES:
        if case["build"] is None:
            continue
        torch.manual_seed(case["seed"])
        model = case["build"]().eval()
        scripted = torch.jit.script(model)
        scripted.save(os.path.join(CTRL, case["file"]))

    suite_cases, rows, failures = [], [], []
    for case in CASES:
        got = check_case(case)
        he, ht = got["eval"]["leak_horizon"], got["train"]["leak_horizon"]
        horizon = max(he, ht)
        past_horizon = max(got["eval"]["past_horizon"], got["train"]["past_horizon"])
        violations = violations_of(case, horizon, past_horizon, got)
        verdict = "leaky" if violations else "causal"
        r64 = max(got["eval"]["max_rel_future_change_f64"], got["train"]["max_rel_future_change_f64"])
        r32 = max(got["eval"]["max_rel_future_change_f32"], got["train"]["max_rel_future_change_f32"])
        rounding = None
        if horizon == 0 and verdict == "causal":
            rounding = r64 > 0 or r32 > 0
            if r64 > max(1e-12, got["tolerance"] / FLOOR_MARGIN):
                failures.append(f"{case['name']}: float64 future change {r64:.1e} is not clearly rounding")
        want = (case["verdict"], case["horizon"], case["eval_horizon"], case["train_horizon"], case["rounding_only"])
        have = (verdict, horizon, he, ht, rounding)
        if want != have:
            failures.append(f"{case['name']}: declared {want} but brute force gives {have}")
        measured = {"violations": violations, "length_dependent": got["length_dependent"],
                    "batch_coupled": got["batch_coupled"], "past_horizon": past_horizon,
                    "float32_sized_floor": got["float32_sized_floor"]}
        # Whether the audit may take train mode from eval mode: derived for every case (the proof
        # above), declared where a case is about it.
        if case["train_from_eval"] is not None and case["train_from_eval"] != got["train_from_eval"]:
            failures.append(f"{case['name']}: declared train_from_eval {case['train_from_eval']} but the graph gives "
                            f"{got['train_from_eval']}")
        expect = {"verdict": case["verdict"], "leak_horizon": case["horizon"],
                  "train_from_eval": got["train_from_eval"]}
        if case["rounding_only"] is not None:
            expect["rounding_only"] = case["rounding_only"]
        if case["leak_sites"] is not None:
            expect["leak_sites"] = case["leak_sites"]
        for key, value in measured.items():
            if case[key] is None:
                continue
            if case[key] != value:
                failures.append(f"{case['name']}: declared {key} {case[key]} but brute force gives {value}")
            expect[key] = case[key]
        entry = {"name": case["name"], "model": f"controls/{case['file']}", "input": case["input"],
                 "seq_len": case["seq_len"], "mode": "both", "expect": expect,
                 "leak_class": case["leak_class"], "why": case["why"]}
        if case["contract"]:
            entry["contract"] = case["contract"]
        if case["twin"]:
            entry["twin"] = case["twin"]
        entry["checked"] = {"lengths": schedule(case["seq_len"]), "train_seed": TRAIN_SEED,
                            "tolerance_f64_relative": TOL_F64, **got}
        suite_cases.append(entry)
        size = os.path.getsize(os.path.join(CTRL, case["file"]))
        rows.append((case["name"], case["input"], case["seq_len"], verdict, horizon, he, ht,
                     "-" if rounding is None else str(rounding).lower(), r32, r64, size))

    if failures:
        print("\n".join("MISMATCH " + f for f in failures))
        sys.exit(1)

    suite = {
        "suite": "controls",
        "description": ("Audit control models: each real-world causality-leak class (missing mask, symmetric "
                        "conv padding, circular FFT, chunk broadcast, time-axis normalisation, global summary, "
                        "train-only branch, length-dependent path, centred window feature, tiny leak, literal "
                        "Grassmann future pairing, length reading, batch mixing, train-mode batch statistics; a "
                        "bidirectional selective scan, a token shift the wrong way, retention without the causal "
                        "cut; attention with a float32 softmax, unmasked) "
                        "with a causal twin, plus rounding-only cross-talk cases, models with a float32 island in "
                        "their float64 forward (a Hugging Face-style float32 softmax, an explicit .float() middle; "
                        "decided above their measured rounding floor) and models audited under a "
                        "declared contract (lookahead K, window W; a case's 'contract'), within and over it. "
                        "Generated by reference/make_audit_controls.py; every expectation was re-derived by "
                        "brute force (each future position perturbed alone, float64, eval and train mode with "
                        "the RNG re-seeded before each pass, at every length of the audit schedule; each position "
                        "perturbed alone for the past horizon; every prefix run alone against the full length "
                        "for length dependence; odd rows replaced for batch coupling; every tolerance 1e-9 of the "
                        "output scale, or 100x the model's measured float64 rounding floor where that is higher). "
                        "'verdict' is 'leaky' "
                        "exactly when a property of the case's contract is violated. "
                        "'checked' holds those brute-force results (informative only). "
                        "Tokens models: int64 [B,L] -> [B,L,64]; features models: float [B,L,4] -> [B,L,k]; "
                        "all run for 2 <= L <= 64 and after .to(torch.double)."),
        # rounding_only describes this PyTorch's float32 kernels: compared on its major.minor only.
        "producer": f"PyTorch {torch.__version__}",
        "cases": suite_cases,
    }
    with open(os.path.join(AUDITS, "controls.json"), "w") as f:
        json.dump(suite, f, indent=2)
        f.write("\n")

    hdr = ("case", "input", "L", "verdict", "hz", "eval", "train", "rounding_only", "f32 fut", "f64 fut", "bytes")
    fmt = "{:30s} {:11s} {:>3} {:7s} {:>3} {:>4} {:>5} {:>13s} {:>9} {:>9} {:>7}"
    print(fmt.format(*hdr))
    for r in rows:
        print(fmt.format(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], f"{r[8]:.1e}", f"{r[9]:.1e}", r[10]))
    print(f"wrote {len(suite_cases)} cases to {os.path.join(AUDITS, 'controls.json')}")


if __name__ == "__main__":
    main()
