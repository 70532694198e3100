#!/usr/bin/python3
"""Controls for the model signature: structured outputs, several inputs, time axes.

Writes audits/signature/*.pt and audits/signature.json (a suite: `grassaudit audit --suite
audits/signature.json`, and tests/audit/test_signature_controls.cpp). Each model has a causal and
a leaky twin; every expectation is re-derived here by brute force on the saved file, the method of
make_audit_controls.py applied leaf by leaf: each position s perturbed alone (every perturbed
input at s together, 2 draws), float64, eval and train mode with the RNG re-seeded before each
pass, every length of the audit schedule; the horizon of a leaf is the largest s - t with y_t
moving by more than 1e-9 of that leaf's own scale, and the case's verdict is its worst leaf's.
The script aborts when a declared expectation disagrees.

Run with Debian's python (torch 1.13):  /usr/bin/python3 reference/make_signature_controls.py
"""
import copy
import json
import os
import sys
from typing import Callable, Dict, List, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import make_audit_controls as mac  # noqa: E402  (schedule, tolerances, seeds)

AUDITS = os.path.join(ROOT, "audits")
OUT = os.path.join(AUDITS, "signature")
VOCAB, D, C = 64, 12, 4   # D != the audit length 16: a [B, D] leaf is never mistaken for [B, L]


class Emb(nn.Module):
    """ids [B, L] -> h [B, L, D] (token + position), then a causal conv over 3 positions."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D)
        self.pos = nn.Embedding(64, D)
        self.conv = nn.Conv1d(D, D, 3)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = self.emb(ids) + self.pos(torch.arange(ids.size(1), device=ids.device)).unsqueeze(0)
        return self.conv(F.pad(h.transpose(1, 2), (2, 0))).transpose(1, 2)


class TupleOut(nn.Module):
    """(logits [B, L, V], hidden [B, L, D]) as Hugging Face models return them. Leaky twin: the
    hidden states (scaled down 1000x, as a small auxiliary output would be) also read the next
    position: a leak only in output [1], which a joint scale would hide."""

    def __init__(self, leak: bool):
        super().__init__()
        self.leak = leak
        self.body = Emb()
        self.head = nn.Linear(D, VOCAB)

    def forward(self, ids: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        h = self.body(ids)
        hidden = h * 1e-3
        if self.leak:
            nxt = torch.cat([h[:, 1:], torch.zeros_like(h[:, :1])], 1)
            hidden = hidden + 1e-3 * nxt
        return self.head(h), hidden


class DictOut(nn.Module):
    """{"logits": [B, L, V], "pooled": [B, D] (no time axis: skipped), "lengths": int [B] (skipped),
    "aux": [B, L, D]}. Leaky twin: "aux" adds the sequence mean (every position sees the whole
    sequence)."""

    def __init__(self, leak: bool):
        super().__init__()
        self.leak = leak
        self.body = Emb()
        self.head = nn.Linear(D, VOCAB)

    def forward(self, ids: torch.Tensor) -> Dict[str, torch.Tensor]:
        h = self.body(ids)
        aux = torch.tanh(h)
        if self.leak:
            aux = aux + h.mean(1, keepdim=True)
        lengths = torch.full((ids.size(0),), ids.size(1), dtype=torch.long, device=ids.device)
        return {"logits": self.head(h), "pooled": h[:, 0], "lengths": lengths, "aux": aux}


class MaskedLM(nn.Module):
    """forward(input_ids, attention_mask) -> logits: the padding mask weighs padded positions down.
    Leaky twin: it also divides by the number of valid tokens of the whole row (mask.sum(1)), the
    padding-normalisation bug: with the mask perturbed as tokens:2 every position sees the future's
    mask bits; held at ones it divides by L (length-dependent)."""

    def __init__(self, leak: bool):
        super().__init__()
        self.leak = leak
        self.body = Emb()
        self.head = nn.Linear(D, VOCAB)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        m = attention_mask.to(self.head.weight.dtype).unsqueeze(-1)
        h = self.body(input_ids) * (0.5 + m)  # a padded position still carries signal: the leak shows at every t
        if self.leak:
            h = h / m.sum(1, keepdim=True).clamp_min(1.0)
        return self.head(h)


class Audio(nn.Module):
    """Channels-first audio [B, C, T] -> [B, 8, T]: a causal conv (kernel 3, padded on the left).
    Leaky twin: padding="same"-style symmetric padding, the usual bug: y_t reads x_{t+1}."""

    def __init__(self, leak: bool):
        super().__init__()
        self.leak = leak
        self.conv = nn.Conv1d(C, 8, 3)
        self.out = nn.Conv1d(8, 8, 1)

    def forward(self, wav: torch.Tensor) -> torch.Tensor:
        pad = (1, 1) if self.leak else (2, 0)
        return self.out(torch.relu(self.conv(F.pad(wav, pad))))


class AudioStreams(nn.Module):
    """Two channels-first feature inputs (wav [B, 4, T], cond [B, 2, T]) -> [B, 8, T]; the leaky twin
    reads the future of the conditioning stream only (cond shifted left by one)."""

    def __init__(self, leak: bool):
        super().__init__()
        self.leak = leak
        self.conv = nn.Conv1d(C + 2, 8, 3)

    def forward(self, wav: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        if self.leak:
            cond = torch.cat([cond[:, :, 1:], torch.zeros_like(cond[:, :, :1])], 2)
        return self.conv(F.pad(torch.cat([wav, cond], 1), (2, 0)))


class CallCounter(nn.Module):
    """A buffer counting calls, added to the output: the same input gives other outputs on the next
    call. Refused (state): its outputs depend on earlier calls."""

    def __init__(self):
        super().__init__()
        self.body = Emb()
        self.head = nn.Linear(D, VOCAB)
        self.register_buffer("calls", torch.zeros(1))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return self.head(self.body(ids)) + 0.01 * self.calls


class CacheOffset(nn.Module):
    """A position offset kept in the module (an int attribute advanced by L each call, as a
    streaming cache offset would be): positions shift between identical calls. Refused (state)."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D)
        self.head = nn.Linear(D, VOCAB)
        self.offset = 0

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        L = ids.size(1)
        pos = torch.arange(self.offset, self.offset + L, device=ids.device).to(self.head.weight.dtype)
        self.offset = self.offset + L
        return self.head(self.emb(ids) + torch.sin(pos / 10.0).unsqueeze(0).unsqueeze(-1))


class UnusedCounter(nn.Module):
    """Counts its calls in a buffer that no output reads: causal, and the audit puts the buffer back."""

    def __init__(self):
        super().__init__()
        self.body = Emb()
        self.head = nn.Linear(D, VOCAB)
        self.register_buffer("calls", torch.zeros(1))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return self.head(self.body(ids))


class EvalNoise(nn.Module):
    """Its own noise layer, on in eval mode too: the same input moves outputs. Refused
    (nondeterministic in eval mode)."""

    def __init__(self):
        super().__init__()
        self.body = Emb()
        self.head = nn.Linear(D, VOCAB)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = self.body(ids)
        return self.head(h + 0.1 * torch.randn_like(h))


class BiRNN(nn.Module):
    """A bidirectional LSTM or GRU over token embeddings: y_t reads the whole sequence (the backward
    direction), horizon L-1. Its gates keep memory (forget/update gate biases +4), so the farthest
    input still moves y_0 by ~1e-2 in float64, far above rounding but, through 63 steps, below the
    old fixed float32 threshold of 1e-4 for part of the reach. torch.jit.trace bakes the initial
    state's dtype (float32) into the graph: the plain float64 forward fails."""

    def __init__(self, cell: str):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 8)
        self.rnn = (nn.LSTM if cell == "lstm" else nn.GRU)(8, 8, batch_first=True, bidirectional=True)
        with torch.no_grad():
            for name, p in self.rnn.named_parameters():
                if "bias" in name:
                    p.zero_()
                    n = p.numel() // (4 if cell == "lstm" else 3)
                    p[n:2 * n] = 4.0  # LSTM forget gate, GRU update gate: open
        self.head = nn.Linear(16, VOCAB)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.head(self.rnn(self.emb(ids))[0])


def case(name, build, inputs, verdict, horizon, why, time_axis=1, output=None, seq_len=16, trace=False):
    return dict(name=name, build=build, inputs=inputs, verdict=verdict, horizon=horizon, why=why,
                time_axis=time_axis, output=output, seq_len=seq_len, trace=trace)


CASES = [
    case("tuple-output-causal", lambda: TupleOut(False), ["tokens:64"], "causal", 0, "(logits, hidden), both causal"),
    case("tuple-output-leaky-aux", lambda: TupleOut(True), ["tokens:64"], "leaky", 1,
         "(logits, hidden): the small hidden output reads the next position"),
    case("dict-output-causal", lambda: DictOut(False), ["tokens:64"], "causal", 0,
         "a dict with logits, aux, and two leaves without a time axis (skipped)"),
    case("dict-output-leaky-aux", lambda: DictOut(True), ["tokens:64"], "leaky", 15,
         "a dict whose aux output adds the sequence mean"),
    case("attention-mask-causal", lambda: MaskedLM(False), ["input_ids=tokens:64", "attention_mask=tokens:2"],
         "causal", 0, "forward(input_ids, attention_mask), the mask perturbed with the ids"),
    case("attention-mask-ones-causal", lambda: MaskedLM(False), ["tokens:64", "attention_mask=ones"],
         "causal", 0, "the same model with the mask held at ones"),
    case("attention-mask-leaky", lambda: MaskedLM(True), ["input_ids=tokens:64", "attention_mask=tokens:2"],
         "leaky", 15, "divides by the row's valid-token count: the leak comes only through the mask input"),
    case("audio-channels-first-causal", lambda: Audio(False), ["features:4"], "causal", 0,
         "[B, C, T] audio, causal conv", time_axis=2),
    case("audio-channels-first-leaky", lambda: Audio(True), ["features:4"], "leaky", 1,
         "[B, C, T] audio, symmetric padding", time_axis=2),
    case("audio-two-streams-causal", lambda: AudioStreams(False), ["wav=features:4", "cond=features:2"], "causal", 0,
         "two [B, C, T] inputs perturbed together", time_axis=2),
    case("audio-two-streams-leaky", lambda: AudioStreams(True), ["features:4", "features:2"], "leaky", 1,
         "the conditioning stream is read one step ahead", time_axis=2),
    case("call-counter-buffer", lambda: CallCounter(), ["tokens:64"], "refused:state", 0,
         "a buffer counting calls is added to the output"),
    case("cache-offset-attribute", lambda: CacheOffset(), ["tokens:64"], "refused:state", 0,
         "a position offset kept in an int attribute, advanced each call"),
    case("unused-call-counter", lambda: UnusedCounter(), ["tokens:64"], "causal", 0,
         "a call counter no output reads: causal, the buffer restored"),
    case("noise-in-eval-mode", lambda: EvalNoise(), ["tokens:64"], "refused:nondeterministic", 0,
         "its own noise layer, on in eval mode"),
    case("traced-bidirectional-lstm", lambda: BiRNN("lstm"), ["tokens:64"], "leaky", 63,
         "torch.jit.trace of a bidirectional LSTM (float32 initial state baked in)", seq_len=64, trace=True),
    case("traced-bidirectional-gru", lambda: BiRNN("gru"), ["tokens:64"], "leaky", 63,
         "torch.jit.trace of a bidirectional GRU (float32 initial state baked in)", seq_len=64, trace=True),
    case("tuple-output-leaky-aux-only-logits", lambda: TupleOut(True), ["tokens:64"], "causal", 0,
         "the leaky tuple model with --output [0]: the logits alone are causal", output="[0]"),
]


# --------------------------------------------------------------------------------------------
# brute force through the signature: canonical input -> arguments -> leaves
# --------------------------------------------------------------------------------------------

def parse(inputs: List[str]) -> List[Tuple[str, str, int]]:
    out = []
    for text in inputs:
        name, _, kind = text.rpartition("=")
        if kind in ("ones", "zeros"):
            out.append((name, kind, 0))
        else:
            k, n = kind.split(":")
            out.append((name, k, int(n)))
    return out


def draw(spec, B: int, L: int, gen: torch.Generator, dtype) -> List[torch.Tensor]:
    """One tensor per perturbed input, in canonical layout ([B, L] ids or [B, L, C] features)."""
    out = []
    for _, kind, n in spec:
        if kind == "tokens":
            out.append(torch.randint(0, n, (B, L), generator=gen))
        elif kind == "features":
            out.append(torch.randn(B, L, n, generator=gen, dtype=torch.float64).to(dtype))
    return out


def perturb_at(xs: List[torch.Tensor], spec, s: int, gen: torch.Generator) -> List[torch.Tensor]:
    out, i = [], 0
    for _, kind, n in spec:
        if kind not in ("tokens", "features"):
            continue
        x = xs[i].clone()
        if kind == "tokens":
            x[:, s] = (x[:, s] + torch.randint(1, n, (x.size(0),), generator=gen)) % n if n > 1 else x[:, s]
        else:
            x[:, s] = x[:, s] + torch.randn(x.size(0), n, generator=gen, dtype=torch.float64).to(x.dtype)
        out.append(x)
        i += 1
    return out


def call(m, spec, xs: List[torch.Tensor], time_axis: int):
    args, i = [], 0
    B, L = xs[0].shape[:2]
    for _, kind, n in spec:
        if kind in ("ones", "zeros"):
            args.append((torch.ones if kind == "ones" else torch.zeros)(B, L, dtype=torch.long))
            continue
        x = xs[i]
        i += 1
        if kind == "features" and time_axis != 1:
            x = x.movedim(1, time_axis).contiguous()
        args.append(x)
    return m(*args)


def leaves(out, path="") -> List[Tuple[str, object]]:
    if isinstance(out, torch.Tensor):
        return [(path, out)]
    if isinstance(out, (tuple, list)):
        return [leaf for i, v in enumerate(out) for leaf in leaves(v, f"{path}[{i}]")]
    if isinstance(out, dict):
        return [leaf for k, v in out.items() for leaf in leaves(v, f'{path}["{k}"]')]
    return [(path, out)]


def audited(out, B: int, L: int, time_axis: int, only) -> Dict[str, torch.Tensor]:
    res = {}
    for path, t in leaves(out):
        if only is not None and path != only:
            continue
        if isinstance(t, torch.Tensor) and t.is_floating_point() and t.dim() > time_axis and t.size(0) == B \
                and t.size(time_axis) == L:
            res[path] = t.movedim(time_axis, 1).reshape(B, L, -1).to(torch.float64)
    return res


def horizon(path: str, c: Dict, L: int, train: bool, dtype, eager=None) -> Dict[str, int]:
    spec = parse(c["inputs"])
    # A traced file cannot run in float64 (its float32 constants): brute force runs the eager model.
    m = copy.deepcopy(eager) if eager is not None else torch.jit.load(path)
    m.to(dtype)
    m.train(train)
    gen = torch.Generator().manual_seed(1000 + L)
    xs = draw(spec, 2, L, gen, dtype)

    def run(inp):
        if train:
            torch.manual_seed(mac.TRAIN_SEED)
        with torch.no_grad():
            return audited(call(m, spec, inp, c["time_axis"]), 2, L, c["time_axis"], c["output"])

    y0 = run(xs)
    assert y0, f"{path}: no audited leaf"
    hz = {k: 0 for k in y0}
    for s in range(1, L):
        for _ in range(2):
            y = run(perturb_at(xs, spec, s, gen))
            for k in y0:
                d = (y[k] - y0[k]).abs().amax(dim=(0, 2)) / y0[k].abs().max().item()
                dep = (d[:s] > mac.TOL_F64).nonzero().flatten()
                if dep.numel():
                    hz[k] = max(hz[k], s - int(dep.min()))
    return hz


def refusal(path: str, c: Dict) -> str:
    """refused:state when two identical calls differ and a buffer or attribute changed between them,
    refused:nondeterministic when they differ with no state change (eval mode, or train mode with
    the RNG reset), else what the verdict brute force will find (not refused)."""
    spec = parse(c["inputs"])
    m = torch.jit.load(path)
    m.double()
    for train in (False, True):
        m.train(train)
        xs = draw(spec, 2, c["seq_len"], torch.Generator().manual_seed(5), torch.float64)

        def state():
            return {k: (v.clone() if isinstance(v, torch.Tensor) else v)
                    for k, v in m.state_dict().items()} | {"offset": getattr(m, "offset", None)}
        before = state()
        with torch.no_grad():
            if train:
                torch.manual_seed(mac.TRAIN_SEED)
            y1 = call(m, spec, xs, 1)
            changed = any((not torch.equal(a, b)) if isinstance(a, torch.Tensor) else a != b
                          for a, b in zip(before.values(), state().values()))
            if train:
                torch.manual_seed(mac.TRAIN_SEED)
            y2 = call(m, spec, xs, 1)
        if not torch.equal(y1, y2):
            return "refused:state" if changed else "refused:nondeterministic"
    return "not refused"


def main() -> None:
    if os.environ.get("PYTHONHASHSEED") != "0":
        os.execve(sys.executable, [sys.executable] + sys.argv, {**os.environ, "PYTHONHASHSEED": "0"})
    torch.set_num_threads(1)
    os.makedirs(OUT, exist_ok=True)
    suite_cases, failures = [], []
    for i, c in enumerate(CASES):
        torch.manual_seed(100 + i)
        f = os.path.join(OUT, c["name"].replace("-", "_") + ".pt")
        model = c["build"]().eval()
        if c["trace"]:
            torch.jit.trace(model, torch.zeros(2, c["seq_len"], dtype=torch.long), check_trace=False).save(f)
        else:
            torch.jit.script(model).save(f)
        if c["verdict"].startswith("refused:"):
            why = refusal(f, c)
            if why != c["verdict"]:
                failures.append(f"{c['name']}: declared {c['verdict']}, brute force {why}")
            suite_cases.append({"name": c["name"], "model": os.path.relpath(f, AUDITS), "inputs": c["inputs"],
                                "seq_len": c["seq_len"], "mode": "both",
                                "expect": {"refused": c["verdict"].split(":", 1)[1]}, "why": c["why"]})
            print(f"{c['name']:36s} {why}")
            continue
        per_leaf: Dict[str, int] = {}
        lengths = [c["seq_len"]] if c["trace"] else mac.schedule(c["seq_len"])
        for train in (False, True):
            for L in lengths:
                for k, h in horizon(f, c, L, train, torch.float64, model if c["trace"] else None).items():
                    per_leaf[k] = max(per_leaf.get(k, 0), h)
        worst = max(per_leaf.values())
        verdict = "leaky" if worst > 0 else "causal"
        if (verdict, worst) != (c["verdict"], c["horizon"]):
            failures.append(f"{c['name']}: declared {c['verdict']} {c['horizon']}, brute force {verdict} {worst}")
        entry = {"name": c["name"], "model": os.path.relpath(f, AUDITS), "inputs": c["inputs"],
                 "seq_len": c["seq_len"], "mode": "both",
                 "expect": {"verdict": c["verdict"], "leak_horizon": c["horizon"]}, "why": c["why"],
                 "checked": {"lengths": lengths, "leak_horizon_by_output": per_leaf}}
        if c["trace"]:
            entry["seq_lens"] = lengths
        if c["time_axis"] != 1:
            entry["time_axis"] = c["time_axis"]
        if c["output"] is not None:
            entry["output"] = c["output"]
        suite_cases.append(entry)
        print(f"{c['name']:36s} {verdict:6s} {worst:3d}  {per_leaf}")
    if failures:
        print("\n".join("MISMATCH " + x for x in failures))
        sys.exit(1)
    suite = {"suite": "signature",
             "description": ("Controls of the model signature: tuple and dict outputs (audited leaf by leaf; leaves "
                             "without the time axis skipped), several inputs (an attention mask perturbed with the "
                             "ids, or held at ones), channels-first [B, C, T] audio (time_axis 2), one input or two, "
                             "each with a causal and a leaky twin. Generated by reference/make_signature_controls.py; "
                             "expectations re-derived by brute force leaf by leaf (float64, eval and train mode, every "
                             "length of the schedule)."),
             "producer": f"PyTorch {torch.__version__}",
             "cases": suite_cases}
    with open(os.path.join(AUDITS, "signature.json"), "w") as fh:
        json.dump(suite, fh, indent=2)
        fh.write("\n")
    print(f"wrote {len(suite_cases)} cases to {os.path.join(AUDITS, 'signature.json')}")


if __name__ == "__main__":
    main()
