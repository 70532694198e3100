#!/usr/bin/python3
"""Controls for the incremental (KV-cache / streaming-state) audit.

Writes audits/incremental/*.pt (small TorchScript modules, fixed seeds) and audits/incremental.json.
Each model has a full forward that is strictly causal and an incremental API; the audit checks that
the step-by-step outputs equal the full forward. Every expectation written to the suite is
re-derived here by brute force on the *saved* file (torch.jit.load, float64, eval mode) and the
script aborts (exit 1, MISMATCH lines) if it disagrees with the value declared in CASES below.

Run with Debian's python (torch 1.13, CPU):  /usr/bin/python3 reference/make_incremental_controls.py

The incremental contract (what the C++ audit relies on):
  * besides forward(x), the module exports (@torch.jit.export)
        init_state(self, batch: int) -> List[Tensor]
        step(self, x: Tensor, state: List[Tensor]) -> Tuple[Tensor, List[Tensor]]
    x holds the next n >= 1 positions ([B, n] int64 ids, or [B, n, C] float features); the result
    is their outputs [B, n, K] and the new state. The state carries whatever offset it needs
    (here an int64 scalar tensor holding the number of positions consumed).
  * forward(x) takes [B, L] ids (or [B, L, C] features) and returns [B, L, K]; it is strictly
    causal (y_t depends on x_0 .. x_t only) in every control, so only the incremental path is wrong
    in the buggy ones.
  * the models work after .to(torch.float64) (float state tensors are created in the dtype of a
    parameter) and in eval mode (no dropout).
  * consistent: for every partition of L into consecutive chunks, init_state(B) then step chunk by
    chunk, outputs concatenated along time, equals forward(x) within 1e-9 of max |y|. Here each
    partition runs on a freshly loaded module (a module that keeps state of its own is caught by
    the isolation check, not by this one).
  * isolation: (i) the single-step partition run twice on one loaded module, each run from a fresh
    init_state, gives the same outputs within 1e-9; (ii) forward(x) after those runs equals
    forward(x) before.
  * verdict "leaky" with violations ["incremental"] exactly when consistent or isolation fails;
    a model without init_state/step is refused ("refused": "incremental").
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
sys.path.insert(0, HERE)
import make_audit_controls as mac  # noqa: E402  (vocab, width, inputs, perturbation, tolerance)

AUDITS = os.path.join(ROOT, "audits")
OUT = os.path.join(AUDITS, "incremental")
VOCAB, WIDTH, MAX_LEN, CHANNELS = mac.VOCAB, mac.WIDTH, mac.MAX_LEN, mac.CHANNELS
TOL = mac.TOL_F64          # relative (to max |y|) difference that counts, float64
BATCH = 2                  # rows, made to differ
PARTITION_SEED = 4242      # the random partitions (the same three for every case)
INPUT_SEED = 6000          # + case seed: the input x of the brute-force checks
WINDOW = 8


# --------------------------------------------------------------------------------------------
# building blocks (all scriptable, dtype-agnostic)
# --------------------------------------------------------------------------------------------

def split_heads(x: torch.Tensor, heads: int) -> torch.Tensor:
    """[B, n, d] -> [B, H, n, d / H]."""
    B, n, d = x.shape
    return x.view(B, n, heads, d // heads).transpose(1, 2)


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """q [B, H, n, dh], k, v [B, H, T, dh], allowed [n, T] bool -> [B, n, H * dh]."""
    B, H, n, dh = q.shape
    s = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(dh)
    s = s.masked_fill(~allowed, float("-inf"))
    o = torch.matmul(torch.softmax(s, dim=-1), v)
    return o.transpose(1, 2).reshape(B, n, H * dh)


class CachedDecoder(nn.Module):
    """ids [B, L] -> logits [B, L, V]: token embedding (positions: see the subclasses), one causal
    multi-head attention block (residual), LayerNorm, head. Incremental state:
    [k cache [B, H, T, dh], v cache [B, H, T, dh], offset (int64 scalar: positions consumed)].

    window > 0: attention over x_{t-W+1} .. x_t in forward and step; the cache keeps `keep` keys.
    bug: "none" (correct), "position-not-advanced", "rotary-off-by-one", "mask-wrong-rows",
    "one-row" (see CASES)."""

    def __init__(self, bug: str = "none", window: int = 0, keep: int = 0, heads: int = 2):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, WIDTH)
        self.qkv = nn.Linear(WIDTH, 3 * WIDTH)
        self.out = nn.Linear(WIDTH, WIDTH)
        self.norm = nn.LayerNorm(WIDTH)
        self.head = nn.Linear(WIDTH, VOCAB)
        self.heads = heads
        self.width = WIDTH
        self.window = window
        self.keep = keep
        self.bug = bug

    def embed(self, ids: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        return self.tok(ids)

    def rotate(self, x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        return x

    def allowed(self, c: int, n: int, device: torch.device) -> torch.Tensor:
        """[n, c + n] bool: may new query i (entry c + i of the keys) read key j?"""
        total = c + n
        if self.window > 0:
            lag = torch.arange(c, total, device=device).view(n, 1) - torch.arange(total, device=device).view(1, total)
            return (lag >= 0) & (lag < self.window)
        causal = torch.ones(total, total, dtype=torch.bool, device=device).tril()
        if self.bug == "mask-wrong-rows":
            if n == 1:
                # a lone new token may read the whole cache: no mask needed
                return torch.ones(1, total, dtype=torch.bool, device=device)
            return causal[0:n]                      # should be rows [total - n, total)
        return causal[total - n:total]

    def block(self, ids: torch.Tensor, pos: torch.Tensor, k_past: torch.Tensor,
              v_past: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        h = self.embed(ids, pos)
        q, k, v = self.qkv(h).split(self.width, dim=-1)
        q = self.rotate(split_heads(q, self.heads), pos)
        k = self.rotate(split_heads(k, self.heads), pos)
        v = split_heads(v, self.heads)
        k_all = torch.cat([k_past, k], dim=2)
        v_all = torch.cat([v_past, v], dim=2)
        o = attend(q, k_all, v_all, self.allowed(k_past.size(2), ids.size(1), ids.device))
        return self.head(self.norm(h + self.out(o))), k_all, v_all

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        state = self.init_state(ids.size(0))
        pos = torch.arange(ids.size(1), device=ids.device)
        return self.block(ids, pos, state[0], state[1])[0]

    def read_cache(self, state: List[torch.Tensor]) -> Tuple[torch.Tensor, torch.Tensor]:
        return state[0], state[1]

    def write_cache(self, state: List[torch.Tensor], k: torch.Tensor, v: torch.Tensor,
                    offset: torch.Tensor) -> List[torch.Tensor]:
        return [k, v, offset]

    @torch.jit.export
    def init_state(self, batch: int) -> List[torch.Tensor]:
        p = self.head.weight
        k = torch.zeros([batch, self.heads, 0, self.width // self.heads], dtype=p.dtype, device=p.device)
        return [k, k.clone(), torch.tensor(0, dtype=torch.int64, device=p.device)]

    @torch.jit.export
    def step(self, ids: torch.Tensor, state: List[torch.Tensor]) -> Tuple[torch.Tensor, List[torch.Tensor]]:
        k_past, v_past = self.read_cache(state)
        off = int(state[2])
        n = ids.size(1)
        start = off
        if self.bug == "rotary-off-by-one" and k_past.size(2) > 0:
            start = off + 1                         # decode path reads the offset as the last position
        if self.bug == "one-row":
            k_past = k_past[0:1].expand(ids.size(0), -1, -1, -1)
            v_past = v_past[0:1].expand(ids.size(0), -1, -1, -1)
        pos = torch.arange(start, start + n, device=ids.device)
        y, k_all, v_all = self.block(ids, pos, k_past, v_past)
        if self.window > 0:
            first = max(k_all.size(2) - self.keep, 0)
            k_all = k_all[:, :, first:]
            v_all = v_all[:, :, first:]
        new_off = state[2] if self.bug == "position-not-advanced" else state[2] + n
        return y, self.write_cache(state, k_all, v_all, new_off)


class AbsPosDecoder(CachedDecoder):
    """Learned absolute positions (64 entries) added to the token embedding."""

    def __init__(self, bug: str = "none", window: int = 0, keep: int = 0):
        super().__init__(bug, window, keep)
        self.pos = nn.Embedding(MAX_LEN, WIDTH)

    def embed(self, ids: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        return self.tok(ids) + self.pos(pos).unsqueeze(0)


class RotaryDecoder(CachedDecoder):
    """No absolute positions: queries and keys rotated by their position (RoPE, base 10000)."""

    def rotate(self, x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        half = x.size(-1) // 2
        inv = torch.exp(torch.arange(half, device=x.device).to(x.dtype) * (-math.log(10000.0) / half))
        ang = pos.to(x.dtype).view(-1, 1) * inv.view(1, -1)           # [n, half]
        cos, sin = torch.cos(ang), torch.sin(ang)
        x1, x2 = x[..., :half], x[..., half:]
        return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


class AttributeCacheDecoder(AbsPosDecoder):
    """The KV cache kept in module attributes (assigned in step); the k/v of the passed state are
    returned unchanged (empty), only its offset is advanced. init_state does not clear the
    attributes, so a second run from a fresh state reads the keys of the first."""

    def __init__(self):
        super().__init__()
        self.k_cache = torch.zeros(0)
        self.v_cache = torch.zeros(0)

    def read_cache(self, state: List[torch.Tensor]) -> Tuple[torch.Tensor, torch.Tensor]:
        if self.k_cache.dim() == 4:
            return self.k_cache, self.v_cache
        return state[0], state[1]

    def write_cache(self, state: List[torch.Tensor], k: torch.Tensor, v: torch.Tensor,
                    offset: torch.Tensor) -> List[torch.Tensor]:
        self.k_cache = k
        self.v_cache = v
        return [state[0], state[1], offset]


class PlainDecoder(nn.Module):
    """The causal attention decoder with forward only (no incremental API)."""

    def __init__(self, heads: int = 2):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, WIDTH)
        self.qkv = nn.Linear(WIDTH, 3 * WIDTH)
        self.out = nn.Linear(WIDTH, WIDTH)
        self.norm = nn.LayerNorm(WIDTH)
        self.head = nn.Linear(WIDTH, VOCAB)
        self.pos = nn.Embedding(MAX_LEN, WIDTH)
        self.heads = heads
        self.width = WIDTH

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        L = ids.size(1)
        h = self.tok(ids) + self.pos(torch.arange(L, device=ids.device)).unsqueeze(0)
        q, k, v = self.qkv(h).split(self.width, dim=-1)
        allowed = torch.ones(L, L, dtype=torch.bool, device=ids.device).tril()
        o = attend(split_heads(q, self.heads), split_heads(k, self.heads), split_heads(v, self.heads), allowed)
        return self.head(self.norm(h + self.out(o)))


class RecurrentLM(nn.Module):
    """ids -> logits through a gated linear recurrence s_t = a_t * s_{t-1} + (1 - a_t) * b_t with
    a_t = sigmoid(W_a e_t + 2), b_t = tanh(W_b e_t); state [s [B, d]]."""

    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, WIDTH)
        self.a = nn.Linear(WIDTH, WIDTH)
        self.b = nn.Linear(WIDTH, WIDTH)
        self.norm = nn.LayerNorm(WIDTH)
        self.head = nn.Linear(WIDTH, VOCAB)

    def scan(self, ids: torch.Tensor, s: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        e = self.tok(ids)
        a = torch.sigmoid(self.a(e) + 2.0)
        b = torch.tanh(self.b(e))
        out: List[torch.Tensor] = []
        for t in range(ids.size(1)):
            s = a[:, t] * s + (1 - a[:, t]) * b[:, t]
            out.append(s)
        return self.head(self.norm(e + torch.stack(out, 1))), s

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.scan(ids, self.init_state(ids.size(0))[0])[0]

    @torch.jit.export
    def init_state(self, batch: int) -> List[torch.Tensor]:
        p = self.head.weight
        return [torch.zeros([batch, p.size(1)], dtype=p.dtype, device=p.device)]

    @torch.jit.export
    def step(self, ids: torch.Tensor, state: List[torch.Tensor]) -> Tuple[torch.Tensor, List[torch.Tensor]]:
        y, s = self.scan(ids, state[0])
        return y, [s]


class StreamingConv(nn.Module):
    """features [B, L, 4] -> [B, L, 2]: head(x, tanh(causal conv1d, kernel 4, along time)).
    State [the last `buffer` inputs [B, buffer, 4]]; kernel 4 needs 3 (with 2 the oldest tap of
    the first output of each chunk reads a zero)."""

    def __init__(self, buffer: int):
        super().__init__()
        self.conv = nn.Conv1d(CHANNELS, CHANNELS, 4)
        self.head = nn.Linear(2 * CHANNELS, 2)
        self.buffer = buffer
        self.taps = 4
        self.channels = CHANNELS

    def mix(self, x: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        """x [B, n, C], u [B, n + 3, C] (x preceded by the 3 inputs before it)."""
        c = F.conv1d(u.transpose(1, 2), self.conv.weight, self.conv.bias).transpose(1, 2)
        return self.head(torch.cat([x, torch.tanh(c)], dim=-1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.mix(x, F.pad(x.transpose(1, 2), [self.taps - 1, 0]).transpose(1, 2))

    @torch.jit.export
    def init_state(self, batch: int) -> List[torch.Tensor]:
        p = self.conv.weight
        return [torch.zeros([batch, self.buffer, self.channels], dtype=p.dtype, device=p.device)]

    @torch.jit.export
    def step(self, x: torch.Tensor, state: List[torch.Tensor]) -> Tuple[torch.Tensor, List[torch.Tensor]]:
        buf = state[0]
        missing = self.taps - 1 - buf.size(1)
        if missing > 0:
            buf = torch.cat([buf.new_zeros([buf.size(0), missing, buf.size(2)]), buf], dim=1)
        u = torch.cat([buf, x], dim=1)
        return self.mix(x, u), [u[:, u.size(1) - self.buffer:]]


# --------------------------------------------------------------------------------------------
# the cases.  expect = hand-derived; every value is re-checked by brute force below.
# --------------------------------------------------------------------------------------------

def C(name, file, build, input, consistent, isolation, bug_class, why, seed=0, twin=None,
      first_failure=None, failing_rows=None, seq_len=32):
    """consistent / isolation: the two halves of the incremental check (None, None: a model without
    the API, to be refused). first_failure: (partition, position) of the first failing partition,
    in the order of partitions(); failing_rows: the batch rows that differ there."""
    return dict(name=name, file=file, build=build, input=input, seq_len=seq_len, consistent=consistent,
                isolation=isolation, bug_class=bug_class, why=why, seed=seed, twin=twin,
                first_failure=first_failure, failing_rows=failing_rows)


TOK = f"tokens:{VOCAB}"
FEAT = f"features:{CHANNELS}"

CASES = [
    C("kv-cache", "kv_cache.pt", lambda: AbsPosDecoder(),
      TOK, True, True, "kv-cache-position",
      "Causal attention decoder with learned absolute positions whose step appends the new keys/values to the cached ones and advances the position offset: step-by-step outputs equal the full forward.",
      seed=1, twin="kv-cache-position-not-advanced"),
    C("kv-cache-position-not-advanced", "kv_cache_position_not_advanced.pt",
      lambda: AbsPosDecoder(bug="position-not-advanced"),
      TOK, False, True, "kv-cache-position",
      "The KV cache grows but the position offset in the state is never advanced, so every chunk is embedded at positions 0..n-1.",
      seed=1, twin="kv-cache", first_failure=("ones", 1), failing_rows=[0, 1]),
    C("rotary-kv-cache", "rotary_kv_cache.pt", lambda: RotaryDecoder(),
      TOK, True, True, "rotary-offset",
      "Causal attention with rotary position embeddings (no absolute positions), new queries/keys rotated at offset..offset+n-1 and cached rotated: consistent.",
      seed=3, twin="rotary-offset-off-by-one"),
    C("rotary-offset-off-by-one", "rotary_offset_off_by_one.pt", lambda: RotaryDecoder(bug="rotary-off-by-one"),
      TOK, False, True, "rotary-offset",
      "Once the cache is non-empty, step rotates the new queries/keys at offset+1 instead of offset (the offset read as the last position consumed): a one-position gap between the first chunk and everything after it.",
      seed=3, twin="rotary-kv-cache", first_failure=("ones", 1), failing_rows=[0, 1]),
    C("kv-cache-mask-wrong-rows", "kv_cache_mask_wrong_rows.pt", lambda: AbsPosDecoder(bug="mask-wrong-rows"),
      TOK, False, True, "chunk-mask-rows",
      "For a chunk of n > 1 tokens the causal mask is sliced as rows [0:n] of the [total, total] mask instead of rows [total-n:total]; right for the first chunk and for single-token steps (no mask), wrong only for multi-token chunks after a prefix.",
      seed=1, twin="kv-cache", first_failure=("prefill-5-then-3", 5), failing_rows=[0, 1]),
    C("sliding-window-cache", "sliding_window_cache.pt", lambda: AbsPosDecoder(window=WINDOW, keep=WINDOW - 1),
      TOK, True, True, "window-eviction",
      "Sliding-window attention (W = 8: y_t attends to x_{t-7} .. x_t) whose cache keeps the last W-1 keys: consistent.",
      seed=2, twin="sliding-window-evicts-early"),
    C("sliding-window-evicts-early", "sliding_window_evicts_early.pt", lambda: AbsPosDecoder(window=WINDOW, keep=WINDOW - 2),
      TOK, False, True, "window-eviction",
      "The same sliding-window attention whose cache keeps only W-2 keys, so a stepped y_t misses x_{t-W+1} (which the full forward reads).",
      seed=2, twin="sliding-window-cache", first_failure=("ones", WINDOW - 1), failing_rows=[0, 1]),
    C("cache-in-module-attribute", "cache_in_module_attribute.pt", lambda: AttributeCacheDecoder(),
      TOK, True, False, "state-in-module",
      "The KV cache is kept in module attributes assigned in step, the passed state only carries the offset: one run on a fresh module matches forward, a second run from a fresh init_state attends to the first run's keys.",
      seed=1, twin="kv-cache"),
    C("one-row-cache", "one_row_cache.pt", lambda: AbsPosDecoder(bug="one-row"),
      TOK, False, True, "batch-row-cache",
      "The cached keys/values of batch row 0 are expanded to every row (a batch-1 assumption), so rows other than 0 attend to row 0's past; invisible when the rows are equal.",
      seed=1, twin="kv-cache", first_failure=("ones", 1), failing_rows=[1]),
    C("recurrent-state", "recurrent_state.pt", lambda: RecurrentLM(),
      TOK, True, True, "recurrent-state",
      "A gated linear recurrence (GRU-cell style scan) whose state is the hidden vector after the last consumed position: consistent.",
      seed=4),
    C("streaming-conv", "streaming_conv.pt", lambda: StreamingConv(buffer=3),
      FEAT, True, True, "streaming-buffer",
      "Causal conv1d of kernel 4 along time streamed with a buffer of the last 3 inputs: consistent.",
      seed=5, twin="streaming-conv-short-buffer"),
    C("streaming-conv-short-buffer", "streaming_conv_short_buffer.pt", lambda: StreamingConv(buffer=2),
      FEAT, False, True, "streaming-buffer",
      "The same convolution streamed with a buffer of 2: the oldest tap of the first output of each chunk reads a zero instead of x_{t-3}.",
      seed=5, twin="streaming-conv", first_failure=("ones", 3), failing_rows=[0, 1]),
    C("no-incremental-api", "no_incremental_api.pt", lambda: PlainDecoder(),
      TOK, None, None, "no-incremental-api",
      "A plain causal attention decoder with forward only: the incremental audit must refuse it (exit 2).",
      seed=6),
]


# --------------------------------------------------------------------------------------------
# brute-force checking on the saved TorchScript files
# --------------------------------------------------------------------------------------------

def partitions(L: int) -> List[Tuple[str, List[int]]]:
    """(a) all ones; (b) a prefill of L/2 then single steps; (c) a prefill of 5 then chunks of 3
    (the last one shorter if L - 5 is not a multiple of 3); (d) 3 random partitions, chunk sizes
    1..7 (the last one cut to fit), fixed seed."""
    out = [("ones", [1] * L), (f"prefill-{L // 2}-then-ones", [L // 2] + [1] * (L - L // 2))]
    rest = L - 5
    out.append(("prefill-5-then-3", [5] + [3] * (rest // 3) + ([rest % 3] if rest % 3 else [])))
    gen = torch.Generator().manual_seed(PARTITION_SEED)
    for r in range(3):
        chunks, left = [], L
        while left > 0:
            c = min(int(torch.randint(1, 8, (1,), generator=gen)), left)
            chunks.append(c)
            left -= c
        out.append((f"random-{r + 1}", chunks))
    for name, chunks in out:
        assert sum(chunks) == L and min(chunks) >= 1, (name, chunks)
    return out


def load(path: str):
    m = torch.jit.load(path)
    m.to(torch.float64)
    m.eval()
    return m


def has_api(m) -> bool:
    return m._c._has_method("init_state") and m._c._has_method("step")


def make_x(spec: str, L: int, seed: int) -> torch.Tensor:
    kind, n = mac.parse_input(spec)
    gen = torch.Generator().manual_seed(INPUT_SEED + seed)
    x = mac.make_input(kind, n, BATCH, L, gen, torch.float64)
    assert not torch.equal(x[0], x[1]), "batch rows must differ"
    return x


def run_steps(m, x: torch.Tensor, chunks: List[int]) -> Tuple[torch.Tensor, List[torch.Tensor]]:
    state = m.init_state(x.size(0))
    init = state
    ys, t = [], 0
    with torch.no_grad():
        for c in chunks:
            y, state = m.step(x[:, t:t + c].contiguous(), state)
            assert y.shape[:2] == (x.size(0), c), (y.shape, c)
            ys.append(y)
            t += c
    return torch.cat(ys, dim=1).to(torch.float64), init


def compare(y: torch.Tensor, ys: torch.Tensor, scale: float) -> Dict:
    d = (ys - y).abs() / scale                                       # [B, L, K]
    per_t = d.amax(dim=(0, 2))
    bad = (per_t > TOL).nonzero().flatten()
    first = int(bad[0]) if bad.numel() else None
    rows = [] if first is None else [b for b in range(y.size(0)) if d[b].max().item() > TOL]
    return dict(max_rel_diff=d.max().item(), first_position=first,
                effect_at_position=None if first is None else per_t[first].item(), rows=rows)


def causal_probe(m, spec: str, L: int, seed: int) -> Dict:
    """Perturb each position s alone (2 draws, float64) and record whether any y_t, t < s, moves."""
    kind, n = mac.parse_input(spec)
    gen = torch.Generator().manual_seed(1000 + L + seed)
    x = mac.make_input(kind, n, BATCH, L, gen, torch.float64)
    with torch.no_grad():
        y0 = m(x).to(torch.float64)
        assert torch.equal(y0, m(x).to(torch.float64)), "forward not deterministic"
        scale = y0.abs().max().item()
        horizon, max_rel, moved = 0, 0.0, 0.0
        for s in range(L):
            for _ in range(2):
                d = (m(mac.perturb(x, kind, n, s, gen)).to(torch.float64) - y0).abs()
                d = d.amax(dim=(0, 2)) / scale
                moved = max(moved, d.max().item())
                if s == 0:
                    continue
                max_rel = max(max_rel, d[:s].max().item())
                dep = (d[:s] > TOL).nonzero().flatten()
                if dep.numel():
                    horizon = max(horizon, s - int(dep.min()))
    assert moved > 0, "perturbations changed nothing"
    return dict(verdict="leaky" if horizon else "causal", leak_horizon=horizon, max_rel_future_change=max_rel)


def check_case(case: Dict) -> Dict:
    path = os.path.join(OUT, case["file"])
    L = case["seq_len"]
    m = load(path)
    got: Dict = {"batch": BATCH, "dtype": "float64", "mode": "eval", "tolerance_relative": TOL,
                 "input_seed": INPUT_SEED + case["seed"]}
    got["causal_probe"] = causal_probe(m, case["input"], L, case["seed"])
    got["has_incremental_api"] = has_api(m)
    if not got["has_incremental_api"]:
        return got
    x = make_x(case["input"], L, case["seed"])

    # the state: float tensors in the model's dtype, after .to(float64) and as saved (float32)
    state = m.init_state(BATCH)
    got["state"] = [{"dtype": str(s.dtype).replace("torch.", ""), "shape": list(s.shape)} for s in state]
    assert all(s.dtype in (torch.float64, torch.int64) for s in state), (case["name"], got["state"])
    m32 = torch.jit.load(path).eval()
    with torch.no_grad():
        x32 = x if x.dtype == torch.int64 else x.float()
        y32 = m32.step(x32[:, :3].contiguous(), m32.init_state(BATCH))[0]
        assert y32.dtype == torch.float32 and m32(x32).dtype == torch.float32, case["name"]

    with torch.no_grad():
        y = m(x).to(torch.float64)
    assert y.shape[:2] == (BATCH, L), y.shape
    scale = y.abs().max().item()

    # consistency: every partition on a freshly loaded module
    parts, first_failure = [], None
    for name, chunks in partitions(L):
        ys, _ = run_steps(load(path), x, chunks)
        r = compare(y, ys, scale)
        parts.append({"name": name, "chunks": chunks, **r})
        if r["first_position"] is not None and first_failure is None:
            first_failure = {"partition": name, "position": r["first_position"],
                             "effect": r["effect_at_position"], "max_rel_diff": r["max_rel_diff"], "rows": r["rows"]}
    got["consistent"] = first_failure is None
    got["first_failure"] = first_failure
    got["partitions"] = parts

    # isolation: on one fresh module, forward, two single-step runs each from a fresh init_state, forward
    mi = load(path)
    ones = [1] * L
    with torch.no_grad():
        before = mi(x).to(torch.float64)
        run1, _ = run_steps(mi, x, ones)
        run2, _ = run_steps(mi, x, ones)
        after = mi(x).to(torch.float64)
    rep = compare(run1, run2, scale)
    fwd = compare(before, after, scale)
    got["isolation_detail"] = {
        "repeat_from_fresh_state": {"holds": rep["first_position"] is None, **rep},
        "forward_after_steps": {"holds": fwd["first_position"] is None, **fwd},
    }
    got["isolation"] = rep["first_position"] is None and fwd["first_position"] is None

    # informative: all partitions back to back on one loaded module
    mb = load(path)
    back = all(compare(y, run_steps(mb, x, chunks)[0], scale)["first_position"] is None
               for _, chunks in partitions(L))
    got["consistent_back_to_back_on_one_load"] = back
    return got


def main() -> None:
    # TorchScript writes module constants in set-iteration order; fix Python's hash seed so
    # that the .pt files are byte-identical from run to run.
    if os.environ.get("PYTHONHASHSEED") != "0":
        os.execve(sys.executable, [sys.executable] + sys.argv, {**os.environ, "PYTHONHASHSEED": "0"})
    torch.set_num_threads(1)
    os.makedirs(OUT, exist_ok=True)
    for case in CASES:
        torch.manual_seed(case["seed"])
        model = case["build"]().eval()
        torch.jit.script(model).save(os.path.join(OUT, case["file"]))

    suite_cases, rows, failures = [], [], []
    for case in CASES:
        got = check_case(case)
        probe = got["causal_probe"]
        if (probe["verdict"], probe["leak_horizon"]) != ("causal", 0):
            failures.append(f"{case['name']}: full forward is not causal: {probe}")
        entry = {"name": case["name"], "model": f"incremental/{case['file']}", "input": case["input"],
                 "seq_len": case["seq_len"], "incremental": True}
        if case["consistent"] is None:
            if got["has_incremental_api"]:
                failures.append(f"{case['name']}: declared without the incremental API but it has init_state/step")
            entry["expect"] = {"refused": "incremental"}
            cons, iso, ff = "-", "-", None
        else:
            if not got["has_incremental_api"]:
                failures.append(f"{case['name']}: init_state/step missing")
                continue
            cons, iso, ff = got["consistent"], got["isolation"], got["first_failure"]
            if (case["consistent"], case["isolation"]) != (cons, iso):
                failures.append(f"{case['name']}: declared consistent/isolation {case['consistent']}/"
                                f"{case['isolation']} but brute force gives {cons}/{iso}")
            have_ff = None if ff is None else (ff["partition"], ff["position"])
            if case["first_failure"] != have_ff:
                failures.append(f"{case['name']}: declared first failure {case['first_failure']} "
                                f"but brute force gives {have_ff}")
            if case["failing_rows"] is not None and (ff is None or ff["rows"] != case["failing_rows"]):
                failures.append(f"{case['name']}: declared failing rows {case['failing_rows']} "
                                f"but brute force gives {None if ff is None else ff['rows']}")
            if cons and max(p["max_rel_diff"] for p in got["partitions"]) > 1e-12:
                failures.append(f"{case['name']}: consistent, but a step/forward difference is not rounding-sized")
            leaky = not (case["consistent"] and case["isolation"])
            entry["expect"] = {"verdict": "leaky" if leaky else "causal", "leak_horizon": 0,
                               "violations": ["incremental"] if leaky else [],
                               "incremental_consistent": case["consistent"],
                               "incremental_isolation": case["isolation"]}
        entry["bug_class"] = case["bug_class"]
        entry["why"] = case["why"]
        if case["twin"]:
            entry["twin"] = case["twin"]
        entry["checked"] = got
        suite_cases.append(entry)
        size = os.path.getsize(os.path.join(OUT, case["file"]))
        if size >= 100_000:
            failures.append(f"{case['name']}: {case['file']} is {size} bytes (>= 100 KB)")
        where = "-" if ff is None else f"{ff['partition']}@{ff['position']}"
        effect = "-" if ff is None else f"{ff['effect']:.1e}"
        rows.append((case["name"], str(cons).lower(), str(iso).lower(), where, effect,
                     "-" if ff is None else ",".join(map(str, ff["rows"])), size))

    names = {c["name"] for c in CASES}
    for case in CASES:
        if case["twin"] and case["twin"] not in names:
            failures.append(f"{case['name']}: twin {case['twin']} is not a case")
    if failures:
        print("\n".join("MISMATCH " + f for f in failures))
        sys.exit(1)

    suite = {
        "suite": "incremental",
        "description": (
            "Incremental-API controls: models exporting init_state(batch) -> List[Tensor] and "
            "step(x, state) -> (outputs [B, n, K], new state) besides forward, with a strictly causal full "
            "forward; the audit checks that step-by-step outputs equal forward(x). Correct ones (a KV cache "
            "with learned positions, a rotary KV cache, a sliding-window cache, a recurrent state, a "
            "streaming convolution buffer) and buggy ones (position offset never advanced, rotary offset "
            "off by one, causal mask sliced with the wrong rows for multi-token chunks, window cache "
            "evicting one key too early, cache kept in a module attribute, batch row 0's cache used for "
            "every row, streaming buffer one input short), plus a model without the API (refused). "
            "Generated by reference/make_incremental_controls.py; every expectation was re-derived by "
            "brute force on the saved file (float64, eval mode, 2 differing rows, L = 32): forward(x) "
            "against init_state then step over each partition of L into consecutive chunks (all ones; a "
            "prefill of L/2 then ones; a prefill of 5 then threes; 3 random partitions with chunks of 1..7), "
            "each on a freshly loaded module, relative difference max |diff| / max |y| above 1e-9 = "
            "inconsistent; isolation: the all-ones partition twice on one module, each from a fresh "
            "init_state, identical within 1e-9, and forward(x) after the steps equal to forward(x) before; "
            "the full forward's causality by perturbing each position alone. 'verdict' is 'leaky' with "
            "violations ['incremental'] exactly when consistency or isolation fails; leak_horizon is the "
            "full forward's (0 for every case). 'checked' holds the brute-force results (informative only)."),
        "producer": f"PyTorch {torch.__version__}",
        "cases": suite_cases,
    }
    with open(os.path.join(AUDITS, "incremental.json"), "w") as f:
        json.dump(suite, f, indent=2)
        f.write("\n")

    hdr = ("case", "consistent", "isolation", "first failure", "effect", "rows", "bytes")
    fmt = "{:32s} {:>10s} {:>9s} {:>22s} {:>8s} {:>4s} {:>7}"
    print(fmt.format(*hdr))
    for r in rows:
        print(fmt.format(*r))
    print(f"wrote {len(suite_cases)} cases to {os.path.join(AUDITS, 'incremental.json')}")


if __name__ == "__main__":
    main()
