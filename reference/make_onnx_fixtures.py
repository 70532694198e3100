#!/usr/bin/python3
"""ONNX models for the audit's ONNX reader (src/formats/onnx/), with their brute-force expectations and
onnxruntime reference outputs.

Run with PyTorch 2.6, onnx 1.17 and onnxruntime 1.21 (Debian 13's python3-torch, python3-onnx,
python3-onnxruntime, in the root of scripts/debian13-root.sh):
    bash scripts/test-debian13.sh --run python3 reference/make_onnx_fixtures.py

Writes tests/fixtures/onnx/:
  <model>.onnx               small models exported by torch.onnx.export(dynamo=False, opset 17),
                             the TorchScript-based exporter; sequence models with a dynamic batch
                             (axis 0) and sequence (axis 1) dimension, streaming models (x_chunk
                             [B, 4, C], state [B, H]) -> (y [B, 4, H'], state_out [B, H]) with a
                             dynamic batch and a fixed chunk of 4 frames
  <model>.T<n>.input_<i>.pb  reference inputs (onnx TensorProto, named after the graph input), batch 2,
                             T = 7 and 12 (streaming models: T chunks, see manifest.json)
  <model>.T<n>.output_<i>.pb the outputs onnxruntime (CPUExecutionProvider) computes on them,
                             checked here against the torch module (1e-5 relative to max |y|, float32
                             and float64 torch)
  manifest.json              per file: inputs (grassaudit's --input syntax), time axis, outputs,
                             op types, the expectation re-derived here by brute force, the references
Expectations: sequence models, brute force on the torch module in float64 (each position s
perturbed alone, 2 draws, every input; y_t for t < s counts as moved beyond 1e-6 relative to max
|y|; horizon = max s - t), repeated on the exported file with onnxruntime in float32 (must agree);
streaming models, brute force with onnxruntime, run chunk by chunk with the state carried from
zeros. The script aborts (exit 1) when a declared expectation disagrees with the brute force or
onnxruntime disagrees with torch.
"""
import hashlib
import json
import os
import sys
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np
import onnx
import onnxruntime as ort
import torch
import torch.nn as nn
import torch.nn.functional as F
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import make_export_fixtures as mef  # noqa: E402  (modules both formats export)

OUT = os.path.join(ROOT, "tests", "fixtures", "onnx")
VOCAB, CHANNELS, D = 50, 4, 16
assert D == mef.D, "the shared modules are built at the torch.export fixtures' width"
OPSET = 17
BATCH = 2
REF_LENGTHS = (7, 12)       # the reference inputs' lengths (streaming: chunks)
CHECK_LENGTHS = (3, 7, 12)  # the brute force's lengths
TOL = 1e-6                  # relative (to max |y|) change that counts as a dependence
MATCH = 1e-5                # onnxruntime against torch, relative to max |y|
CHUNK, STATE, STREAM_OUT = 4, 16, 8   # streaming: frames per chunk, state width, y width
SR = 16000                  # the streaming model's constant sample rate input
GROWS = "length-1"          # leak_horizon of a model whose first position reads the last one


# --------------------------------------------------------------------------------------------
# models
# --------------------------------------------------------------------------------------------

class TokenLM(nn.Module):
    """ids [B, T] -> logits [B, T, VOCAB] around one mixer [B, T, D] -> [B, T, D]."""

    def __init__(self, mixer: nn.Module):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D)
        self.mixer = mixer
        self.head = nn.Linear(D, VOCAB)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = self.emb(ids)
        return self.head(h + self.mixer(h))


class FeatureNet(nn.Module):
    """x [B, T, CHANNELS] -> y [B, T, CHANNELS] around one mixer [B, T, D] -> [B, T, D]."""

    def __init__(self, mixer: nn.Module):
        super().__init__()
        self.inp = nn.Linear(CHANNELS, D)
        self.mixer = mixer
        self.out = nn.Linear(D, CHANNELS)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.inp(x)
        return self.out(h + self.mixer(h))


class TriuAttention(nn.Module):
    """Single-head attention with an additive mask torch.triu(full(-inf), diagonal) (exports Trilu):
    diagonal 1 masks the future (causal); diagonal 2 leaves the next position visible (leak 1)."""

    def __init__(self, diagonal: int):
        super().__init__()
        self.diagonal = diagonal
        self.qkv = nn.Linear(D, 3 * D)
        self.o = nn.Linear(D, D)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        T = h.size(1)
        q, k, v = self.qkv(h).split(D, dim=-1)
        s = q @ k.transpose(1, 2) / (D ** 0.5)
        mask = torch.triu(torch.full((T, T), float("-inf"), dtype=h.dtype), diagonal=self.diagonal)
        return self.o(torch.softmax(s + mask, -1) @ v)


class WhereAttention(nn.Module):
    """Single-head attention masked by torch.where over an arange comparison (exports Range, Less,
    Where): key j is visible to query i when j < i + offset; offset 1 is causal, 2 leaks one step."""

    def __init__(self, offset: int):
        super().__init__()
        self.offset = offset
        self.qkv = nn.Linear(D, 3 * D)
        self.o = nn.Linear(D, D)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        T = h.size(1)
        q, k, v = self.qkv(h).split(D, dim=-1)
        s = q @ k.transpose(1, 2) / (D ** 0.5)
        pos = torch.arange(T)
        visible = pos.unsqueeze(0) < pos.unsqueeze(1) + self.offset   # [query i, key j]
        s = torch.where(visible, s, torch.tensor(float("-inf"), dtype=s.dtype))
        return self.o(torch.softmax(s, -1) @ v)


# Conv (causal / same-padded Conv1d) and Rnn (GRU / bidirectional LSTM): the torch.export
# fixtures' modules, exported here to ONNX.
Conv, Rnn = mef.Conv, mef.Rnn


class Cumsum(nn.Module):
    """A running sum over time (CumSum), or its reverse twin flip/cumsum/flip (a sum over the future)."""

    def __init__(self, reverse: bool):
        super().__init__()
        self.reverse = reverse
        self.lin = nn.Linear(D, D)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        u = self.lin(h)
        if self.reverse:
            return u.flip(1).cumsum(1).flip(1) * 0.1
        return u.cumsum(1) * 0.1


class TwoInputs(nn.Module):
    """forward(ids [B, T], features [B, T, CHANNELS]) -> {"causal": a running sum [B, T, D],
    "leaky": a Conv1d padded 2 on the right [B, T, D] (y_t reads x_t .. x_{t+2}: horizon 2)}."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D)
        self.inp = nn.Linear(CHANNELS, D)
        self.lin = nn.Linear(D, D)
        self.conv = nn.Conv1d(D, D, 3)

    def forward(self, ids: torch.Tensor, features: torch.Tensor) -> Dict[str, torch.Tensor]:
        h = self.emb(ids) + self.inp(features)
        causal = self.lin(h).cumsum(1) * 0.1
        leaky = self.conv(F.pad(h.transpose(1, 2), [0, 2])).transpose(1, 2)
        return {"causal": causal, "leaky": leaky}


@torch.jit.script
def if_sum_causal_taken(u: torch.Tensor) -> torch.Tensor:
    # (u * u).sum() >= 0 reads every position of every row, yet no input can make it false: the
    # branch taken never changes, so the If itself carries no information across time.
    if bool((u * u).sum() >= 0.0):
        return u.cumsum(1) * 0.1
    else:
        return u.flip([1]).cumsum(1).flip([1]) * 0.1


@torch.jit.script
def if_sum_leaky_taken(u: torch.Tensor) -> torch.Tensor:
    if bool((u * u).sum() >= 0.0):
        return u.flip([1]).cumsum(1).flip([1]) * 0.1
    else:
        return u.cumsum(1) * 0.1


class IfBranch(nn.Module):
    """A scripted function with a data-dependent `if` (exports If with two subgraphs), called from
    the traced module: the condition is computed from the input at run time and is always true;
    the branch taken is a running sum (causal), or (leaky_taken) the sum over the future, while the
    branch not taken is the other one."""

    def __init__(self, leaky_taken: bool):
        super().__init__()
        self.leaky_taken = leaky_taken
        self.lin = nn.Linear(D, D)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        u = self.lin(h)
        return if_sum_leaky_taken(u) if self.leaky_taken else if_sum_causal_taken(u)


@torch.jit.script
def wkv_forward(k: torch.Tensor, v: torch.Tensor, decay: torch.Tensor) -> torch.Tensor:
    # RWKV's WKV recurrence as written in a scripted loop: a decayed running sum of k * v, one
    # position at a time, appended to a list and stacked (exports SequenceEmpty, SequenceInsert in
    # a Loop, ConcatFromSequence).
    state = torch.zeros_like(k[:, 0])
    outs: List[torch.Tensor] = []
    for t in range(k.size(1)):
        state = state * decay + k[:, t] * v[:, t]
        outs.append(state)
    return torch.stack(outs, 1)


@torch.jit.script
def wkv_backward(k: torch.Tensor, v: torch.Tensor, decay: torch.Tensor) -> torch.Tensor:
    # The same loop run from the last position back: each output sums the future.
    state = torch.zeros_like(k[:, 0])
    outs: List[torch.Tensor] = []
    T = k.size(1)
    for i in range(T):
        state = state * decay + k[:, T - 1 - i] * v[:, T - 1 - i]
        outs.append(state)
    return torch.stack(outs, 1).flip([1])


class WkvLoop(nn.Module):
    """k, v projections of h through a scripted WKV loop that appends to a list (forward: causal;
    backward: the loop runs from the end, a sum over the future)."""

    def __init__(self, backward: bool):
        super().__init__()
        self.backward = backward
        self.k = nn.Linear(D, D)
        self.v = nn.Linear(D, D)
        self.w = nn.Parameter(torch.linspace(-1.0, 1.0, D))

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        decay = torch.exp(-torch.exp(self.w))
        k, v = self.k(h), self.v(h)
        return wkv_backward(k, v, decay) if self.backward else wkv_forward(k, v, decay)


class StreamGru(nn.Module):
    """A streaming step: (x [B, CHUNK, CHANNELS], state [B, STATE][, sr int64 scalar]) ->
    (y [B, CHUNK, STREAM_OUT], state_out [B, STATE]): a GRU over the chunk's frames started from
    the carried state. lookahead: every frame's y also reads the chunk's last frame (within-chunk
    lookahead: frame i of a chunk reads frame CHUNK-1 of the same chunk, never a later chunk).
    sr: x is scaled by sr / 8000 first (a constant input that is not time-indexed)."""

    def __init__(self, lookahead: bool = False, sr: bool = False):
        super().__init__()
        self.lookahead, self.sr = lookahead, sr
        self.gru = nn.GRU(CHANNELS, STATE, batch_first=True)
        self.out = nn.Linear(STATE, STREAM_OUT)
        self.ahead = nn.Linear(CHANNELS, STREAM_OUT) if lookahead else None

    def forward(self, x: torch.Tensor, state: torch.Tensor, sr: Optional[torch.Tensor] = None):
        if sr is not None:
            x = x * (sr.to(x.dtype) / 8000.0)
        h, hn = self.gru(x, state.unsqueeze(0))
        y = self.out(h)
        if self.ahead is not None:
            y = y + self.ahead(x[:, CHUNK - 1:CHUNK, :])
        return y, hn.squeeze(0)


# --------------------------------------------------------------------------------------------
# cases
# --------------------------------------------------------------------------------------------

def S(name: str, build: Callable[[], nn.Module], inputs: Sequence[str], outputs: Sequence[str], expect: Dict,
      why: str, ops: Sequence[str], leak_sites: Optional[List[str]] = None) -> Dict:
    """A sequence model. inputs: NAME=KIND (tokens:V | features:C); expect: per output name
    (verdict, leak_horizon); ops: the op types the export is meant to contain; leak_sites: the module
    paths the builder planted the future leak in (the ONNX scopes the localise check names; "" the
    root's own code), written to the suite as stated."""
    return dict(name=name, build=build, inputs=list(inputs), outputs=list(outputs), expect=expect, why=why,
                ops=list(ops), streaming=False, leak_sites=leak_sites)


def causal(*names: str) -> Dict:
    return {n: ("causal", 0) for n in names}


def leaky(h, *names: str) -> Dict:
    return {n: ("leaky", h) for n in names}


TOK, FEAT = f"ids=tokens:{VOCAB}", f"x=features:{CHANNELS}"
CASES: List[Dict] = [
    S("attention_triu", lambda: TokenLM(TriuAttention(1)), [TOK], ["logits"], causal("logits"),
      "single-head attention, additive mask torch.triu(full(-inf), diagonal=1)", ["Trilu", "Softmax"]),
    S("attention_triu_off_by_one", lambda: TokenLM(TriuAttention(2)), [TOK], ["logits"], leaky(1, "logits"),
      "the same with diagonal=2: each position also sees the next one", ["Trilu", "Softmax"], leak_sites=["mixer"]),
    S("attention_where", lambda: FeatureNet(WhereAttention(1)), [FEAT], ["y"], causal("y"),
      "single-head attention masked by torch.where(arange(T)[None] < arange(T)[:, None] + 1, s, -inf)",
      ["Range", "Less", "Where", "Softmax"]),
    S("attention_where_off_by_one", lambda: FeatureNet(WhereAttention(2)), [FEAT], ["y"], leaky(1, "y"),
      "the same with + 2: each position also sees the next one", ["Range", "Less", "Where", "Softmax"],
      leak_sites=["mixer"]),
    S("conv_causal", lambda: TokenLM(Conv(True)), [TOK], ["logits"], causal("logits"),
      "Conv1d kernel 3 after F.pad(left 2)", ["Pad", "Conv"]),
    S("conv_same", lambda: TokenLM(Conv(False)), [TOK], ["logits"], leaky(1, "logits"),
      "Conv1d kernel 3, padding=1 (the Conv's own pads): y_t reads x_{t+1}", ["Conv"], leak_sites=["mixer.conv"]),
    S("gru", lambda: FeatureNet(Rnn("gru")), [FEAT], ["y"], causal("y"), "nn.GRU, batch_first", ["GRU"]),
    S("lstm_bidirectional", lambda: FeatureNet(Rnn("lstm")), [FEAT], ["y"], leaky(GROWS, "y"),
      "bidirectional nn.LSTM: the backward direction reads the whole future (horizon T-1 at length T)",
      ["LSTM"], leak_sites=["mixer.rnn"]),
    S("cumsum", lambda: FeatureNet(Cumsum(False)), [FEAT], ["y"], causal("y"), "torch.cumsum over time",
      ["CumSum"]),
    S("cumsum_reverse", lambda: FeatureNet(Cumsum(True)), [FEAT], ["y"], leaky(GROWS, "y"),
      "flip / cumsum / flip: a sum over the future (horizon T-1 at length T)", ["CumSum"], leak_sites=["mixer"]),
    S("two_inputs", TwoInputs, [TOK, f"features=features:{CHANNELS}"], ["causal", "leaky"],
      {**causal("causal"), **leaky(2, "leaky")},
      "ids and float features in, a dict out: `causal` a running sum, `leaky` a Conv1d padded 2 on the right",
      ["Gather", "CumSum", "Conv"], leak_sites=[""]),
    S("if_branch", lambda: FeatureNet(IfBranch(False)), [FEAT], ["y"], causal("y"),
      "torch.jit.script function with a data-dependent if (always true): the branch taken is a running "
      "sum, the one not taken a sum over the future", ["If", "CumSum"]),
    # leak_sites left out: planted in mixer; the audit names "" (the unscoped If_10)
    S("if_branch_leaky_taken", lambda: FeatureNet(IfBranch(True)), [FEAT], ["y"], leaky(GROWS, "y"),
      "the same with the branches swapped: the branch taken sums the future", ["If", "CumSum"]),
    S("wkv_loop", lambda: FeatureNet(WkvLoop(False)), [FEAT], ["y"], causal("y"),
      "RWKV's WKV recurrence in a scripted loop that appends to a list and stacks it",
      ["Loop", "SequenceEmpty", "SequenceInsert", "ConcatFromSequence"]),
    # leak_sites left out: planted in mixer; the audit names "" (the unscoped ConcatFromSequence_54, Slice_59)
    S("wkv_loop_backward", lambda: FeatureNet(WkvLoop(True)), [FEAT], ["y"], leaky(GROWS, "y"),
      "the same loop run from the last position back: each output sums the future",
      ["Loop", "SequenceEmpty", "SequenceInsert", "ConcatFromSequence"]),
]

STREAM_CASES: List[Dict] = [
    dict(name="stream_gru", build=lambda: StreamGru(), sr=False, streaming=True,
         expect={"frames": ("causal", 0), "chunks": ("causal", 0)}, ops=["GRU"],
         why="a streaming GRU step: each chunk's frames run through a GRU started from the carried state"),
    dict(name="stream_gru_lookahead", build=lambda: StreamGru(lookahead=True), sr=False, streaming=True,
         expect={"frames": ("leaky", CHUNK - 1), "chunks": ("causal", 0)}, ops=["GRU"],
         why=f"the streaming GRU whose y at every frame of a chunk also reads the chunk's last frame: frame i "
             f"of chunk k reads frame {CHUNK - 1} of chunk k (within-chunk lookahead, at most {CHUNK - 1} frames "
             f"ahead), never chunk k+1; state_out is causal"),
    dict(name="stream_gru_sr", build=lambda: StreamGru(sr=True), sr=True, streaming=True,
         expect={"frames": ("causal", 0), "chunks": ("causal", 0)}, ops=["GRU", "Cast"],
         why=f"the streaming GRU with a constant int64 scalar input sr (sample rate, Silero VAD style; x is "
             f"scaled by sr / 8000), held at {SR}, not time-indexed"),
]


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------

def spec(s: str):
    name, kind = s.split("=")
    k, n = kind.split(":")
    return name, k, int(n)


def make_inputs(specs: Sequence[str], B: int, T: int, gen: torch.Generator) -> List[torch.Tensor]:
    out = []
    for s in specs:
        _, kind, n = spec(s)
        if kind == "tokens":
            out.append(torch.randint(0, n, (B, T), generator=gen))
        else:
            out.append(torch.randn(B, T, n, generator=gen, dtype=torch.float64))
    return out


def perturb(x: torch.Tensor, kind: str, n: int, s: int, gen: torch.Generator) -> torch.Tensor:
    x2 = x.clone()
    if kind == "tokens":
        x2[:, s] = (x2[:, s] + torch.randint(1, n, (x.size(0),), generator=gen)) % n
    else:
        x2[:, s] = x2[:, s] + torch.randn(x.size(0), x.size(2), generator=gen, dtype=x.dtype)
    return x2


def as_dict(y, names: Sequence[str]) -> Dict[str, torch.Tensor]:
    if isinstance(y, dict):
        return {n: y[n] for n in names}
    if isinstance(y, (tuple, list)):
        return dict(zip(names, y))
    return {names[0]: y}


def session(path: str) -> ort.InferenceSession:
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def ort_inputs(names: Sequence[str], xs: Sequence[torch.Tensor]) -> Dict[str, np.ndarray]:
    return {n: (x.numpy().astype(np.float32) if x.is_floating_point() else x.numpy()) for n, x in zip(names, xs)}


def horizon_of(y0: Dict[str, torch.Tensor], y: Dict[str, torch.Tensor], s: int, T: int) -> Dict[str, int]:
    """Per output: s - t for the earliest t < s whose y_t moved beyond TOL relative to max |y0|, else -1."""
    out = {}
    for k in y0:
        a, b = y0[k].to(torch.float64), y[k].to(torch.float64)
        scale = max(a.abs().max().item(), 1e-30)
        d = (b - a).abs().reshape(a.size(0), T, -1).amax(dim=(0, 2))[:s] / scale
        dep = (d > TOL).nonzero().flatten()
        out[k] = s - int(dep.min()) if dep.numel() else -1
    return out


def brute_force(run, specs: Sequence[str], outputs: Sequence[str], T: int, dtype) -> Dict[str, int]:
    """Each position s of each perturbed input moved alone (2 draws): per output, the largest s - t
    with y_t (t < s) moved (0: none)."""
    gen = torch.Generator().manual_seed(1000 + T)
    xs = [x.to(dtype) if x.is_floating_point() else x for x in make_inputs(specs, BATCH, T, gen)]
    y0 = run(xs)
    hor = {k: 0 for k in outputs}
    for i, s_ in enumerate(specs):
        _, kind, n = spec(s_)
        for s in range(1, T):
            for _ in range(2):
                xs2 = list(xs)
                xs2[i] = perturb(xs[i], kind, n, s, gen)
                for k, h in horizon_of(y0, run(xs2), s, T).items():
                    hor[k] = max(hor[k], h)
    return hor


def classify(per_len: Dict[int, int]) -> tuple:
    """(verdict, leak_horizon) from the horizons at each length: "length-1" when it is T-1 at every
    length, an int when it is the same at every length."""
    hs = set(per_len.values())
    if hs == {0}:
        return "causal", 0
    if all(h == T - 1 for T, h in per_len.items()):
        return "leaky", GROWS
    if len(hs) == 1:
        return "leaky", hs.pop()
    return "leaky", f"varies {per_len}"


def op_types(graph: onnx.GraphProto) -> List[str]:
    """Op types of the graph's nodes and of every subgraph (If branches, Loop bodies)."""
    ops = set()
    for node in graph.node:
        ops.add(node.op_type)
        for a in node.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                ops.update(op_types(a.g))
            elif a.type == onnx.AttributeProto.GRAPHS:
                for g in a.graphs:
                    ops.update(op_types(g))
    return sorted(ops)


def rel_diff(got: np.ndarray, want: torch.Tensor) -> float:
    w = want.detach().to(torch.float64).numpy()
    return float(np.abs(got.astype(np.float64) - w).max() / max(np.abs(w).max(), 1e-30))


def save_pb(arr: np.ndarray, name: str, fname: str) -> str:
    with open(os.path.join(OUT, fname), "wb") as f:
        f.write(numpy_helper.from_array(np.array(arr, order="C", copy=True), name).SerializeToString())
    return fname


def io_desc(t: onnx.ValueInfoProto) -> Dict:
    tt = t.type.tensor_type
    dims = [d.dim_param if d.dim_param else d.dim_value for d in tt.shape.dim]
    return {"name": t.name, "dtype": onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type).name, "shape": dims}


def export(model: nn.Module, args: tuple, path: str, in_names, out_names, dynamic_axes) -> None:
    with torch.no_grad():
        torch.onnx.export(model, args, path, dynamo=False, opset_version=OPSET, input_names=list(in_names),
                          output_names=list(out_names), dynamic_axes=dynamic_axes, do_constant_folding=True)
    m = onnx.load(path)
    onnx.checker.check_model(m, full_check=True)


# --------------------------------------------------------------------------------------------
# the two kinds of case
# --------------------------------------------------------------------------------------------

def sequence_case(case: Dict, failures: List[str]) -> Dict:
    name, specs, outs = case["name"], case["inputs"], case["outputs"]
    in_names = [spec(s)[0] for s in specs]
    torch.manual_seed(sum(map(ord, name)))
    model = case["build"]().eval()
    m64 = case["build"]().eval()
    m64.load_state_dict(model.state_dict())
    m64.to(torch.float64)

    path = os.path.join(OUT, name + ".onnx")
    ex = [x.float() if x.is_floating_point() else x for x in make_inputs(specs, BATCH, 5, torch.Generator().manual_seed(5))]
    axes = {n: {0: "batch", 1: "time"} for n in list(in_names) + list(outs)}
    export(model, tuple(ex), path, in_names, outs, axes)
    sess = session(path)
    assert [i.name for i in sess.get_inputs()] == in_names, (name, [i.name for i in sess.get_inputs()])
    assert [o.name for o in sess.get_outputs()] == outs, (name, [o.name for o in sess.get_outputs()])

    def run_torch(xs):
        with torch.no_grad():
            return as_dict(m64(*xs), outs)

    def run_ort(xs):
        ys = sess.run(outs, ort_inputs(in_names, xs))
        return {k: torch.from_numpy(v) for k, v in zip(outs, ys)}

    per_out = {}
    for k in outs:
        per_out[k] = {"torch_float64": {}, "onnxruntime_float32": {}}
    for T in CHECK_LENGTHS:
        ht = brute_force(run_torch, specs, outs, T, torch.float64)
        ho = brute_force(run_ort, specs, outs, T, torch.float32)
        for k in outs:
            per_out[k]["torch_float64"][T] = ht[k]
            per_out[k]["onnxruntime_float32"][T] = ho[k]
    out_entries, worst = [], ("causal", 0)
    for k in outs:
        got = classify(per_out[k]["torch_float64"])
        got_ort = classify(per_out[k]["onnxruntime_float32"])
        want = case["expect"][k]
        if got != want or got_ort != want:
            failures.append(f"{name}.{k}: declared {want}, brute force torch {got} "
                            f"{per_out[k]['torch_float64']}, onnxruntime {got_ort} {per_out[k]['onnxruntime_float32']}")
        out_entries.append({"name": k, "expect": {"verdict": want[0], "leak_horizon": want[1]},
                            "checked": {m: {f"T{T}": h for T, h in v.items()} for m, v in per_out[k].items()}})
        if want[0] == "leaky":
            if worst[0] == "causal" or want[1] == GROWS or (worst[1] != GROWS and want[1] > worst[1]):
                worst = want

    refs = []
    for T in REF_LENGTHS:
        xs = make_inputs(specs, BATCH, T, torch.Generator().manual_seed(11 + T))
        feeds = ort_inputs(in_names, xs)
        ys = sess.run(outs, feeds)
        with torch.no_grad():
            y32 = as_dict(model(*[x.float() if x.is_floating_point() else x for x in xs]), outs)
            y64 = as_dict(m64(*[torch.from_numpy(feeds[n]).double() if xs[i].is_floating_point() else xs[i]
                                for i, n in enumerate(in_names)]), outs)
        for k, y in zip(outs, ys):
            r32, r64 = rel_diff(y, y32[k]), rel_diff(y, y64[k])
            if r64 > MATCH or r32 > MATCH:
                failures.append(f"{name} T={T} {k}: onnxruntime vs torch float32 {r32:.3g}, float64 {r64:.3g}")
        files = {"inputs": [save_pb(feeds[n], n, f"{name}.T{T}.input_{i}.pb") for i, n in enumerate(in_names)],
                 "outputs": [save_pb(y, k, f"{name}.T{T}.output_{i}.pb") for i, (k, y) in enumerate(zip(outs, ys))]}
        refs.append({"T": T, "batch": BATCH, **files})

    # the dynamic axes: other batches and a length not used above run and agree with torch
    for B, T in ((1, 9), (3, 2)):
        xs = make_inputs(specs, B, T, torch.Generator().manual_seed(7))
        feeds = ort_inputs(in_names, xs)
        with torch.no_grad():
            y64 = as_dict(m64(*[torch.from_numpy(feeds[n]).double() if xs[i].is_floating_point() else xs[i]
                                for i, n in enumerate(in_names)]), outs)
        for k, y in zip(outs, sess.run(outs, feeds)):
            if rel_diff(y, y64[k]) > MATCH:
                failures.append(f"{name} B={B} T={T} {k}: onnxruntime vs torch float64 {rel_diff(y, y64[k]):.3g}")

    graph = onnx.load(path).graph
    ops = op_types(graph)
    missing = [o for o in case["ops"] if o not in ops]
    inputs = []
    for s, vi in zip(specs, graph.input):
        n, kind, size = spec(s)
        inputs.append({**io_desc(vi), "kind": f"{kind}:{size}"})
    return {
        "file": name + ".onnx", "description": case["why"], "streaming": False,
        "inputs": inputs, "time_axis": 1, "batch_axis": 0,
        "outputs": [{**io_desc(vi), **e} for vi, e in zip(graph.output, out_entries)],
        "cli": sum((["--input", s] for s in specs), []),
        "expect": {"verdict": worst[0], "leak_horizon": worst[1]},
        "ops": ops, "wanted_ops": case["ops"], "missing_ops": missing,
        "references": refs,
    }


def stream_run(step, xs: torch.Tensor, K: int) -> tuple:
    """xs [B, K*CHUNK, C]: the chunks run in order, state carried from zeros; -> (y [B, K*CHUNK, H'],
    final state)."""
    state = np.zeros((xs.shape[0], STATE), np.float32)
    ys = []
    for k in range(K):
        y, state = step(xs[:, k * CHUNK:(k + 1) * CHUNK], state)
        ys.append(y)
    return np.concatenate(ys, axis=1), state


def stream_case(case: Dict, failures: List[str]) -> Dict:
    name = case["name"]
    torch.manual_seed(sum(map(ord, name)))
    model = case["build"]().eval()
    m64 = case["build"]().eval()
    m64.load_state_dict(model.state_dict())
    m64.to(torch.float64)
    path = os.path.join(OUT, name + ".onnx")
    in_names = ["x", "state"] + (["sr"] if case["sr"] else [])
    out_names = ["y", "state_out"]
    gen = torch.Generator().manual_seed(5)
    ex = (torch.randn(BATCH, CHUNK, CHANNELS, generator=gen), torch.randn(BATCH, STATE, generator=gen))
    if case["sr"]:
        ex = ex + (torch.tensor(SR, dtype=torch.int64),)
    axes = {n: {0: "batch"} for n in ["x", "state"] + out_names}
    export(model, ex, path, in_names, out_names, axes)
    sess = session(path)
    assert [i.name for i in sess.get_inputs()] == in_names
    assert [o.name for o in sess.get_outputs()] == out_names
    sr_feed = {"sr": np.array(SR, np.int64)} if case["sr"] else {}

    def ort_step(x, state):
        x = x.numpy().astype(np.float32) if isinstance(x, torch.Tensor) else x
        return sess.run(out_names, {"x": x, "state": state, **sr_feed})

    def torch_step(m, dtype):
        def step(x, state):
            with torch.no_grad():
                args = [torch.as_tensor(np.asarray(x)).to(dtype), torch.as_tensor(np.asarray(state)).to(dtype)]
                if case["sr"]:
                    args.append(torch.tensor(SR, dtype=torch.int64))
                y, s = m(*args)
            return y.numpy(), s.numpy()
        return step

    # brute force with onnxruntime: frame f perturbed alone (2 draws); frame horizon f - g and
    # chunk horizon f // CHUNK - g // CHUNK over the output frames g < f that moved
    per = {"frames": {}, "chunks": {}}
    for K in CHECK_LENGTHS:
        F_ = K * CHUNK
        gen = torch.Generator().manual_seed(1000 + K)
        xs = torch.randn(BATCH, F_, CHANNELS, generator=gen, dtype=torch.float64).float()
        y0, _ = stream_run(ort_step, xs, K)
        scale = np.abs(y0).max()
        hf = hc = 0
        for f in range(1, F_):
            for _ in range(2):
                y, _ = stream_run(ort_step, perturb(xs, "features", CHANNELS, f, gen), K)
                d = np.abs(y.astype(np.float64) - y0).max(axis=(0, 2))[:f] / scale
                moved = np.nonzero(d > TOL)[0]
                if moved.size:
                    hf = max(hf, f - int(moved.min()))
                    hc = max(hc, f // CHUNK - int(moved.min()) // CHUNK)
        per["frames"][K], per["chunks"][K] = hf, hc
    got = {u: classify(per[u]) for u in per}
    # per[u] is keyed by the number of chunks, so a "length-1" from classify would mean K-1 in either
    # unit; every streaming case declares a fixed horizon
    for u in per:
        if got[u] != case["expect"][u]:
            failures.append(f"{name} ({u}): declared {case['expect'][u]}, brute force {got[u]} {per[u]}")

    # references: one call from a random state, then T = 7 and 12 chunks streamed from zeros; both
    # checked against the torch module, float32 and float64
    refs = []
    gen = torch.Generator().manual_seed(11)
    x1 = torch.randn(BATCH, CHUNK, CHANNELS, generator=gen).numpy()
    s1 = torch.randn(BATCH, STATE, generator=gen).numpy()
    got1 = ort_step(x1, s1)
    for m, dtype in ((model, torch.float32), (m64, torch.float64)):
        want = torch_step(m, dtype)(x1, s1)
        for k, g, w in zip(out_names, got1, want):
            r = rel_diff(g, torch.from_numpy(w))
            if r > MATCH:
                failures.append(f"{name} one call {k}: onnxruntime vs torch {dtype} {r:.3g}")
    for B in (1, 3):   # the dynamic batch
        xb = torch.randn(B, CHUNK, CHANNELS, generator=gen).numpy()
        sb = torch.randn(B, STATE, generator=gen).numpy()
        for k, g, w in zip(out_names, ort_step(xb, sb), torch_step(m64, torch.float64)(xb, sb)):
            if rel_diff(g, torch.from_numpy(w)) > MATCH:
                failures.append(f"{name} batch {B} {k}: onnxruntime vs torch float64 {rel_diff(g, torch.from_numpy(w)):.3g}")
    feeds = [x1, s1] + ([np.array(SR, np.int64)] if case["sr"] else [])
    refs.append({"T": "call", "batch": BATCH, "what": "one call: x one chunk, state random",
                 "inputs": [save_pb(a, n, f"{name}.call.input_{i}.pb") for i, (n, a) in enumerate(zip(in_names, feeds))],
                 "outputs": [save_pb(a, n, f"{name}.call.output_{i}.pb") for i, (n, a) in enumerate(zip(out_names, got1))]})
    for K in REF_LENGTHS:
        xs = torch.randn(BATCH, K * CHUNK, CHANNELS, generator=torch.Generator().manual_seed(11 + K)).numpy()
        y, s = stream_run(ort_step, xs, K)
        for m, dtype in ((model, torch.float32), (m64, torch.float64)):
            wy, ws = stream_run(torch_step(m, dtype), xs, K)
            for k, g, w in (("y", y, wy), ("state_out", s, ws)):
                r = rel_diff(g, torch.from_numpy(w))
                if r > MATCH:
                    failures.append(f"{name} {K} chunks {k}: onnxruntime vs torch {dtype} {r:.3g}")
        feeds = [xs, np.zeros((BATCH, STATE), np.float32)] + ([np.array(SR, np.int64)] if case["sr"] else [])
        refs.append({"T": K, "batch": BATCH,
                     "what": f"{K} chunks streamed: input_0 the {K} chunks' frames [B, {K}*{CHUNK}, C], input_1 the "
                             f"initial state (zeros); output_0 the chunks' y concatenated, output_1 the final state",
                     "inputs": [save_pb(a, n, f"{name}.T{K}.input_{i}.pb") for i, (n, a) in enumerate(zip(in_names, feeds))],
                     "outputs": [save_pb(y, "y", f"{name}.T{K}.output_0.pb"), save_pb(s, "state_out", f"{name}.T{K}.output_1.pb")]})

    graph = onnx.load(path).graph
    ops = op_types(graph)
    inputs = [{**io_desc(graph.input[0]), "kind": f"features:{CHANNELS}"}, {**io_desc(graph.input[1]), "kind": "state"}]
    cli = ["--input", f"x=features:{CHANNELS}", "--state", "state=state_out"]
    if case["sr"]:
        inputs.append({**io_desc(graph.input[2]), "kind": f"const:{SR}"})
        cli += ["--input", f"sr=const:{SR}"]
    ef, ec = case["expect"]["frames"], case["expect"]["chunks"]
    return {
        "file": name + ".onnx", "description": case["why"], "streaming": True,
        "inputs": inputs, "time_axis": 1, "batch_axis": 0, "chunk_length": CHUNK,
        "state": [{"in": "state", "out": "state_out"}],
        "outputs": [io_desc(vi) for vi in graph.output],
        "cli": cli,
        "expect": {"verdict": ef[0], "leak_horizon": ef[1], "unit": "frames",
                   "chunks": {"verdict": ec[0], "leak_horizon": ec[1]}},
        "checked": {"onnxruntime_float32_streamed": {u: {f"T{K}": h for K, h in per[u].items()} for u in per}},
        "ops": ops, "wanted_ops": case["ops"], "missing_ops": [o for o in case["ops"] if o not in ops],
        "references": refs,
    }


SUITE_LEN = 16  # the suite's --seq-len


def write_suite(entries) -> None:
    """audits/onnx.json: the fixtures as audit suite cases, with the brute-force expectations. The
    audit perturbs one kind of input per model, so a model taking ids and features is audited with
    its ids held at ones and its features perturbed (both reach every output the same way)."""
    cases = []
    sites = {c["name"] + ".onnx": c.get("leak_sites") for c in CASES + STREAM_CASES}
    for e in entries:
        cli = e["cli"]
        inputs = [cli[k + 1] for k in range(0, len(cli), 2) if cli[k] == "--input"]
        state = [cli[k + 1] for k in range(0, len(cli), 2) if cli[k] == "--state"]
        kinds = {i.split("=")[-1].split(":")[0] for i in inputs}
        why = e["description"] + f" (torch.onnx.export, PyTorch {torch.__version__}, opset {OPSET})"
        if {"tokens", "features"} <= kinds:
            inputs = [i.split("=")[0] + "=ones" if "tokens:" in i else i for i in inputs]
            why += "; the ids held at ones (the audit perturbs one kind of input per model), the features perturbed"
        h = e["expect"]["leak_horizon"]
        case = {"name": e["file"][:-5].replace("_", "-"), "model": "../tests/fixtures/onnx/" + e["file"],
                "seq_len": SUITE_LEN, "mode": "both",
                "expect": {"verdict": e["expect"]["verdict"], "leak_horizon": SUITE_LEN - 1 if h == GROWS else h},
                "why": why}
        if sites[e["file"]] is not None:
            case["expect"]["leak_sites"] = sites[e["file"]]
        if len(inputs) == 1:
            case["input"] = inputs[0]
        else:
            case["inputs"] = inputs
        if state:
            case["state"] = state
        cases.append(case)
    suite = {"suite": "onnx",
             "description": ("ONNX models written by torch.onnx.export (PyTorch " + torch.__version__ + ", opset "
                             + str(OPSET) + ", dynamic batch and sequence axes), run by grassaudit's ONNX "
                             "interpreter: causal and leaky twins of masked attention (Trilu and Where masks), "
                             "convolutions, GRU and bidirectional LSTM, CumSum recurrences, a two-input model with "
                             "named outputs, If, and streaming steps with state (--state) and a constant input. "
                             "Models and expectations from reference/make_onnx_fixtures.py (brute force on the torch "
                             "model and on the file under onnxruntime); the streaming models' horizons are in frames."),
             "producer": "PyTorch " + torch.__version__, "cases": cases}
    with open(os.path.join(ROOT, "audits", "onnx.json"), "w") as f:
        json.dump(suite, f, indent=2)
        f.write("\n")


def main() -> None:
    if int(torch.__version__.split(".")[0]) < 2:
        sys.exit(f"make_onnx_fixtures.py: needs PyTorch 2.x, this is {torch.__version__} "
                 "(bash scripts/test-debian13.sh --run python3 reference/make_onnx_fixtures.py)")
    torch.set_num_threads(1)
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):
        if f.endswith((".onnx", ".pb")):
            os.remove(os.path.join(OUT, f))
    failures: List[str] = []
    entries = []
    for case in CASES + STREAM_CASES:
        e = (stream_case if case["streaming"] else sequence_case)(case, failures)
        entries.append(e)
        size = os.path.getsize(os.path.join(OUT, e["file"]))
        print(f"{case['name']:28s} {e['expect']['verdict']:6s} {str(e['expect']['leak_horizon']):9s} {size:7d} bytes  "
              f"{' '.join(e['ops'])}" + (f"  MISSING {e['missing_ops']}" if e["missing_ops"] else ""))
    if failures:
        print("\n".join("MISMATCH " + f for f in failures))
        sys.exit(1)
    manifest = {
        "description": ("ONNX fixtures for grassaudit's ONNX reader, written by reference/make_onnx_fixtures.py: "
                        "torch.onnx.export(dynamo=False, opset 17). Expectations re-derived by brute force; "
                        "reference outputs computed by onnxruntime (CPUExecutionProvider) and checked against torch."),
        "producer": {"torch": torch.__version__, "onnx": onnx.__version__, "onnxruntime": ort.__version__,
                     "opset": OPSET},
        "tolerance": {"dependence_relative": TOL, "reference_match_relative": MATCH},
        "leak_horizon_length_minus_1": GROWS,
        "models": entries,
    }
    with open(os.path.join(OUT, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")
    write_suite(entries)
    total = sum(os.path.getsize(os.path.join(OUT, f)) for f in os.listdir(OUT))
    digest = hashlib.sha256()
    for f in sorted(os.listdir(OUT)):
        if f.endswith((".onnx", ".pb")):
            with open(os.path.join(OUT, f), "rb") as fh:
                digest.update(f.encode() + fh.read())
    print(f"wrote {len(entries)} models to {OUT}: {total} bytes; sha256 of the .onnx/.pb files {digest.hexdigest()[:16]}")


if __name__ == "__main__":
    main()
