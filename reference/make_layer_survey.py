#!/usr/bin/python3
"""Layer survey: every torch.nn layer that keeps state, normalises over batch or time,
or is piecewise linear, audited in eval and train mode.

Writes audits/layers/*.pt (small TorchScript modules, fixed seeds) and audits/layers.json (a suite:
`grassaudit audit --suite audits/layers.json`).

Every model maps x [B, L, 4] -> ... -> a final nn.Linear head -> [B, L, 2], and comes in a causal
arrangement and, where people write the layer non-causally, its leaky twin:

  * BatchNorm2d after a causal Conv2d over [B, C, T, 1], BatchNorm1d after a causal Conv1d
    (running statistics in eval: causal; batch statistics over batch and time in train: leaky);
  * InstanceNorm1d(track_running_stats=True) (eval uses the running statistics: causal; train
    normalises each channel over time: leaky);
  * GroupNorm(1, C) over [B, C, T] (statistics span time: leaky) vs per frame over [B*T, C] (causal);
  * LayerNorm over each token's channels [B, T, C] (causal) vs F.layer_norm over the time axis of
    [B, C, T] (leaky);
  * RNNCell, GRUCell, LSTMCell unrolled forward in a scripted loop (causal) and backward (leaky, an
    effect that decays with the distance); nn.RNN, nn.GRU, nn.LSTM unidirectional (causal) and
    nn.RNN bidirectional (leaky);
  * ReLU MLP and Hardtanh after a causal convolution (causal) vs a same-padded one (leaky, horizon
    1); MaxPool1d with left padding (causal) vs centred padding (leaky, horizon 1).

Each model is audited in eval, train and both modes at L 16; the backward recurrences once more
at L 64 (mode both), where their decaying effect crosses the horizon threshold inside the sequence.
Each model also has a zero-head twin: the same weights with the output projection (weight and bias)
zero-initialised, so the weights as given compute the constant 0. The audit's structural pass
redraws the exactly-zero head and must give the random-initialised model's verdict over both modes
("structural" leaky or causal, a "structural" violation where leaky).

Every expectation is re-derived by brute force on the saved file with make_soundness_controls.py's
method (float64, each mode, every length of the schedule, horizons at 100 x max(measured float64
floor, 2.2e-16)); for a zero-head twin the weights as given are checked to give exactly 0 and the
structural verdict is brute force on a copy with the zero head redrawn. The script aborts (exit 1)
when a declared expectation (DECLARED below) disagrees.

Run with Debian's python (torch 1.13):  /usr/bin/python3 reference/make_layer_survey.py
"""
import copy
import json
import os
import sys
from typing import Dict, List, Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import make_audit_controls as mac  # noqa: E402  (probes, schedule, input conventions)
import make_soundness_controls as msc  # noqa: E402  (brute force, expectations, redrawn copies)

AUDITS = os.path.join(ROOT, "audits")
OUT = os.path.join(AUDITS, "layers")
C_IN = mac.CHANNELS   # features [B, L, 4]
WIDTH = 16
SEQ_LEN = 16
FEAT = f"features:{C_IN}"


# --------------------------------------------------------------------------------------------
# models (all scriptable, dtype-agnostic, every one ending in nn.Linear head -> [B, L, 2])
# --------------------------------------------------------------------------------------------

class ConvBatchNorm2d(nn.Module):
    """x [B, L, 4] -> [B, 4, T, 1] -> causal Conv2d (kernel (3, 1), padded 2 | 0 in time) ->
    BatchNorm2d -> GELU -> Linear."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(C_IN, WIDTH, (3, 1))
        self.norm = nn.BatchNorm2d(WIDTH)
        self.head = nn.Linear(WIDTH, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        u = F.pad(x.transpose(1, 2).unsqueeze(-1), [0, 0, 2, 0])    # [B, 4, T + 2, 1]
        h = self.norm(self.conv(u)).squeeze(-1).transpose(1, 2)     # [B, T, 16]
        return self.head(F.gelu(h))


class ConvNorm1d(nn.Module):
    """x [B, L, 4] -> causal Conv1d (kernel 3, padded 2 | 0) -> a norm over [B, C, T]
    (BatchNorm1d, InstanceNorm1d, GroupNorm) -> GELU -> Linear."""

    def __init__(self, norm: nn.Module):
        super().__init__()
        self.conv = nn.Conv1d(C_IN, WIDTH, 3)
        self.norm = norm
        self.head = nn.Linear(WIDTH, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm(self.conv(F.pad(x.transpose(1, 2), [2, 0])))
        return self.head(F.gelu(h.transpose(1, 2)))


class ConvGroupNormPerFrame(nn.Module):
    """x [B, L, 4] -> causal Conv1d -> GroupNorm(1, C) applied to each frame alone ([B*T, C]) ->
    GELU -> Linear: causal."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(C_IN, WIDTH, 3)
        self.norm = nn.GroupNorm(1, WIDTH)
        self.head = nn.Linear(WIDTH, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.conv(F.pad(x.transpose(1, 2), [2, 0])).transpose(1, 2)   # [B, T, C]
        B, T, C = h.shape
        h = self.norm(h.reshape(B * T, C)).reshape(B, T, C)
        return self.head(F.gelu(h))


class ConvLayerNorm(nn.Module):
    """x [B, L, 4] -> causal Conv1d -> LayerNorm over each token's channels ([B, T, C]: causal) or
    F.layer_norm over the time axis of [B, C, T] (over_time: leaky) -> GELU -> Linear."""

    def __init__(self, over_time: bool):
        super().__init__()
        self.conv = nn.Conv1d(C_IN, WIDTH, 3)
        self.norm = nn.LayerNorm(WIDTH)
        self.over_time = over_time

        self.head = nn.Linear(WIDTH, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.conv(F.pad(x.transpose(1, 2), [2, 0]))                    # [B, C, T]
        if self.over_time:
            h = F.layer_norm(h, [h.size(-1)]).transpose(1, 2)
        else:
            h = self.norm(h.transpose(1, 2))
        return self.head(F.gelu(h))


class CellLoop(nn.Module):
    """x [B, L, 4] -> RNNCell or GRUCell unrolled over time in a scripted loop, forward from the
    start (causal) or backward from the end (leaky: every output reads every later input, by an
    effect that decays with the distance) -> Linear."""

    def __init__(self, kind: str, backward: bool):
        super().__init__()
        self.cell = nn.RNNCell(C_IN, WIDTH) if kind == "rnn" else nn.GRUCell(C_IN, WIDTH)
        self.backward = backward
        self.width = WIDTH
        self.head = nn.Linear(WIDTH, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, L = x.size(0), x.size(1)
        h = torch.zeros(B, self.width, dtype=x.dtype, device=x.device)
        outs: List[torch.Tensor] = []
        for i in range(L):
            t = L - 1 - i if self.backward else i
            h = self.cell(x[:, t], h)
            outs.append(h)
        if self.backward:
            outs.reverse()
        return self.head(torch.stack(outs, dim=1))


class LstmCellLoop(nn.Module):
    """As CellLoop with an LSTMCell (state h, c)."""

    def __init__(self, backward: bool):
        super().__init__()
        self.cell = nn.LSTMCell(C_IN, WIDTH)
        self.backward = backward
        self.width = WIDTH
        self.head = nn.Linear(WIDTH, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, L = x.size(0), x.size(1)
        h = torch.zeros(B, self.width, dtype=x.dtype, device=x.device)
        c = torch.zeros(B, self.width, dtype=x.dtype, device=x.device)
        outs: List[torch.Tensor] = []
        for i in range(L):
            t = L - 1 - i if self.backward else i
            h, c = self.cell(x[:, t], (h, c))
            outs.append(h)
        if self.backward:
            outs.reverse()
        return self.head(torch.stack(outs, dim=1))


class Recurrent(nn.Module):
    """x [B, L, 4] -> nn.RNN / nn.GRU / nn.LSTM (hidden 16, batch_first) -> Linear."""

    def __init__(self, kind: str, bidirectional: bool):
        super().__init__()
        cls = {"rnn": nn.RNN, "gru": nn.GRU, "lstm": nn.LSTM}[kind]
        self.rnn = cls(C_IN, WIDTH, batch_first=True, bidirectional=bidirectional)
        self.head = nn.Linear(2 * WIDTH if bidirectional else WIDTH, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y, _ = self.rnn(x)
        return self.head(y)


class ConvActivation(nn.Module):
    """x [B, L, 4] -> Conv1d (kernel 3) padded 2 | 0 (causal) or 1 | 1 ("same": reads x_{t+1}) ->
    an activation (ReLU, then a ReLU MLP layer; or Hardtanh) -> Linear."""

    def __init__(self, kind: str, same: bool):
        super().__init__()
        self.conv = nn.Conv1d(C_IN, WIDTH, 3)
        self.act = nn.ReLU() if kind == "relu" else nn.Hardtanh()
        self.mid = nn.Linear(WIDTH, 32) if kind == "relu" else nn.Identity()
        self.act2 = nn.ReLU() if kind == "relu" else nn.Identity()
        self.head = nn.Linear(32 if kind == "relu" else WIDTH, 2)
        self.left = 1 if same else 2
        self.right = 1 if same else 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.conv(F.pad(x.transpose(1, 2), [self.left, self.right])).transpose(1, 2)
        return self.head(self.act2(self.mid(self.act(h))))


class MaxPoolTime(nn.Module):
    """x [B, L, 4] -> Linear(4, 16) -> MaxPool1d(3, stride 1) over time of [B, C, T], after left
    padding by 2 with -inf (causal) or with the layer's own centred padding 1 (leaky, horizon 1)
    -> Linear."""

    def __init__(self, centred: bool):
        super().__init__()
        self.inp = nn.Linear(C_IN, WIDTH)
        self.pool = nn.MaxPool1d(3, stride=1, padding=1 if centred else 0)
        self.centred = centred
        self.head = nn.Linear(WIDTH, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.inp(x).transpose(1, 2)
        if not self.centred:
            h = F.pad(h, [2, 0], value=float("-inf"))
        return self.head(self.pool(h).transpose(1, 2))


def running(model: nn.Module) -> nn.Module:
    """A few train-mode batches so running statistics are not the identity."""
    return msc.with_running_stats(model)


# name, layer, arrangement, build, declared (eval horizon, train horizon): "L-1" for the whole
# sequence at each length of the schedule (L - 1 at the main length).
WHOLE = "L-1"
DECLARED: List[Tuple[str, str, str, object, Tuple[object, object]]] = [
    ("batchnorm2d-causal-conv", "BatchNorm2d", "causal Conv2d over [B, C, T, 1] + BatchNorm2d",
     lambda: running(ConvBatchNorm2d()), (0, WHOLE)),
    ("batchnorm1d-causal-conv", "BatchNorm1d", "causal Conv1d + BatchNorm1d over [B, C, T]",
     lambda: running(ConvNorm1d(nn.BatchNorm1d(WIDTH))), (0, WHOLE)),
    ("instancenorm1d-running-stats", "InstanceNorm1d", "InstanceNorm1d(affine, track_running_stats) over [B, C, T]",
     lambda: running(ConvNorm1d(nn.InstanceNorm1d(WIDTH, affine=True, track_running_stats=True))), (0, WHOLE)),
    ("groupnorm-over-time", "GroupNorm", "GroupNorm(1, C) over [B, C, T]",
     lambda: ConvNorm1d(nn.GroupNorm(1, WIDTH)), (WHOLE, WHOLE)),
    ("groupnorm-per-frame", "GroupNorm", "GroupNorm(1, C) per frame over [B*T, C]",
     lambda: ConvGroupNormPerFrame(), (0, 0)),
    ("layernorm-channels", "LayerNorm", "LayerNorm(C) over [B, T, C]",
     lambda: ConvLayerNorm(False), (0, 0)),
    ("layernorm-over-time", "LayerNorm", "F.layer_norm over the time axis of [B, C, T]",
     lambda: ConvLayerNorm(True), (WHOLE, WHOLE)),
    ("rnncell-forward", "RNNCell", "unrolled forward (scripted loop)", lambda: CellLoop("rnn", False), (0, 0)),
    ("rnncell-backward", "RNNCell", "unrolled backward (scripted loop)", lambda: CellLoop("rnn", True),
     (WHOLE, WHOLE)),
    ("grucell-forward", "GRUCell", "unrolled forward (scripted loop)", lambda: CellLoop("gru", False), (0, 0)),
    ("grucell-backward", "GRUCell", "unrolled backward (scripted loop)", lambda: CellLoop("gru", True),
     (WHOLE, WHOLE)),
    ("lstmcell-forward", "LSTMCell", "unrolled forward (scripted loop)", lambda: LstmCellLoop(False), (0, 0)),
    ("lstmcell-backward", "LSTMCell", "unrolled backward (scripted loop)", lambda: LstmCellLoop(True),
     (WHOLE, WHOLE)),
    ("rnn-unidirectional", "RNN", "nn.RNN unidirectional", lambda: Recurrent("rnn", False), (0, 0)),
    ("rnn-bidirectional", "RNN", "nn.RNN bidirectional", lambda: Recurrent("rnn", True), (WHOLE, WHOLE)),
    ("gru-unidirectional", "GRU", "nn.GRU unidirectional", lambda: Recurrent("gru", False), (0, 0)),
    ("lstm-unidirectional", "LSTM", "nn.LSTM unidirectional", lambda: Recurrent("lstm", False), (0, 0)),
    ("relu-causal-conv", "ReLU", "causal Conv1d + ReLU MLP", lambda: ConvActivation("relu", False), (0, 0)),
    ("relu-same-conv", "ReLU", "same-padded Conv1d + ReLU MLP", lambda: ConvActivation("relu", True), (1, 1)),
    ("maxpool1d-left-pad", "MaxPool1d", "MaxPool1d(3, 1) after left padding 2", lambda: MaxPoolTime(False), (0, 0)),
    ("maxpool1d-centred", "MaxPool1d", "MaxPool1d(3, 1, padding=1) (centred)", lambda: MaxPoolTime(True), (1, 1)),
    ("hardtanh-causal-conv", "Hardtanh", "causal Conv1d + Hardtanh", lambda: ConvActivation("hardtanh", False),
     (0, 0)),
    ("hardtanh-same-conv", "Hardtanh", "same-padded Conv1d + Hardtanh", lambda: ConvActivation("hardtanh", True),
     (1, 1)),
]

# Where each leaky model's future leak is planted: the module path(s) the audit's localise check must
# name ("" = the model's own forward code: F.layer_norm over time, a loop over a time-less cell, an
# F.pad [1, 1] whose conv sees L + 2 frames), written as leak_sites to every case with a future horizon;
# None: the audit names another site than the planted one, no expectation written.
LEAK_SITES: Dict[str, Optional[List[str]]] = {
    "batchnorm2d-causal-conv": ["norm"],
    "batchnorm1d-causal-conv": ["norm"],
    "instancenorm1d-running-stats": ["norm"],
    "groupnorm-over-time": ["norm"],
    "layernorm-over-time": [""],
    "rnncell-backward": [""],
    "grucell-backward": [""],
    "lstmcell-backward": [""],
    "rnn-bidirectional": ["rnn"],
    "relu-same-conv": [""],
    "maxpool1d-centred": ["pool"],
    "hardtanh-same-conv": [""],
}


# Models whose float64 autograd is wrong in PyTorch/LibTorch 1.13 (CPU): BatchNorm2d's backward,
# given a grad_output whose strides look channels-last ([B, C, T, 1] reached through squeeze(-1)
# and transpose(1, 2)) while its input is contiguous, mixes channels and time, so the gradient of
# y_0 is non-zero at every later input in eval mode (running statistics), where perturbation finds
# outputs exactly unmoved. Their eval-mode case leaves the gradient method's result (and the
# structural horizon it gives) out of the expectation; the script checks the bug still shows.
GRADIENT_BUG = {"batchnorm2d-causal-conv": "eval"}


def zero_head(model: nn.Module) -> nn.Module:
    twin = copy.deepcopy(model)
    with torch.no_grad():
        twin.head.weight.zero_()
        twin.head.bias.zero_()
    return twin.eval()


def declared_at(h, L: int) -> int:
    return L - 1 if h == WHOLE else int(h)


def constant_as_given(path: str, L: int) -> bool:
    """float64, both modes, several random batches: is every output exactly 0?"""
    m = torch.jit.load(path)
    m.to(torch.float64)
    gen = torch.Generator().manual_seed(8000 + L)
    for train in (False, True):
        m.train(train)
        for n in mac.schedule(L):
            with torch.no_grad():
                torch.manual_seed(mac.TRAIN_SEED)
                y = m(mac.make_input("features", C_IN, 4, n, gen, torch.float64))
            if y.shape[:2] != (4, n) or bool((y != 0).any()):
                return False
    return True


# Backward recurrences audited once more at L 64 (mode both), where the effect of a later input,
# decaying with the distance, crosses the horizon threshold inside the sequence.
DECAYING = ("rnncell-backward", "grucell-backward", "lstmcell-backward", "rnn-bidirectional")
DECAY_L = 64


def decaying_case(name: str, f: str, why: str) -> Dict:
    """As make_soundness_controls.py's DECAYING cases: brute force at L 64, the structural horizon
    (a path, by float64 gradient) L - 1, the horizon within the band where the effect by distance
    is within a factor 16 of the threshold (the probe's random inputs place the crossing there)."""
    L = DECAY_L
    got = msc.brute_force(f, L)
    h = max(got["eval"]["leak_horizon"], got["train"]["leak_horizon"])
    reach = got["eval"]["structural_horizon"]
    curve = msc.effect_by_distance(f, L, False)
    tol_h = got["tolerance_horizon"]
    band = sum(1 for e in curve[1:] if tol_h / 16 < e <= tol_h * 16)
    within = 0 if h == L - 1 else max(1, band)
    print(f"{name + ' L64':30s} h{h} structural {reach} floor {got['precision_floor_f64']:.2g} tol {tol_h:.2g} "
          f"effect at L-1 {curve[L - 1]:.2g} within {within}", flush=True)
    expect = msc.expectation(got, "both", L, True)
    expect["structural_horizon"] = reach
    expect["decaying"] = reach > h
    if within:
        expect["leak_horizon_within"] = within
    if LEAK_SITES[name] is not None:
        expect["leak_sites"] = LEAK_SITES[name]
    DECAY_RESULTS[name] = (h, reach, within)
    return {"name": f"{name}-L64", "model": os.path.relpath(f, AUDITS), "input": FEAT, "seq_len": L, "mode": "both",
            "expect": expect, "why": why + " At L 64 the effect of a later input decays below the threshold.",
            "checked": {**got, "effect_by_distance_eval": curve}}


DECAY_RESULTS: Dict[str, Tuple[int, int, int]] = {}


def fmt_h(verdict_h: int, reach: int) -> str:
    if verdict_h == 0:
        return "causal"
    return f"leaky h{verdict_h}" + (f" (path reaches {reach})" if reach > verdict_h else "")


def main() -> None:
    if os.environ.get("PYTHONHASHSEED") != "0":
        os.execve(sys.executable, [sys.executable] + sys.argv, {**os.environ, "PYTHONHASHSEED": "0"})
    torch.set_num_threads(1)
    os.makedirs(OUT, exist_ok=True)
    only = set(sys.argv[1:])  # optional model names: brute force these only, write nothing
    cases, failures, rows = [], [], []
    L = SEQ_LEN
    for i, (name, layer, arrangement, build, declared) in enumerate(DECLARED):
        if only and name not in only:
            continue
        torch.manual_seed(500 + i)
        model = build().eval()
        f = os.path.join(OUT, name.replace("-", "_") + ".pt")
        torch.jit.script(model).save(f)
        fz = os.path.join(OUT, name.replace("-", "_") + "_zero_head.pt")
        torch.jit.script(zero_head(model)).save(fz)

        got = msc.brute_force(f, L)
        h_eval, h_train = got["eval"]["leak_horizon"], got["train"]["leak_horizon"]
        want = (declared_at(declared[0], L), declared_at(declared[1], L))
        print(f"{name:30s} eval h{h_eval} (grad {got['eval']['gradient_horizon_at_L']}, reach "
              f"{got['eval']['structural_horizon']}) train h{h_train} (grad {got['train']['gradient_horizon_at_L']}, "
              f"reach {got['train']['structural_horizon']}) coupled {got['batch_coupled_eval']}/"
              f"{got['batch_coupled_train']} floor {got['precision_floor_f64']:.2g} proof {got['train_from_eval']}",
              flush=True)
        if (h_eval, h_train) != want:
            failures.append(f"{name}: declared horizons eval {want[0]} train {want[1]}, brute force {h_eval} {h_train}")
        why = f"{layer}: {arrangement}."
        for mode in ("eval", "train", "both"):
            expect = msc.expectation(got, mode, L, True)
            g_mode = "train" if mode == "train" else "eval"  # the audit's gradient mode
            reach = got[g_mode]["structural_horizon"]
            # The audit gives the structural horizon from a float64 gradient only: a model it decides
            # in float32 (a causal one whose float32 future effects are exactly zero) reports null.
            if expect["leak_horizon"] > 0:
                expect["structural_horizon"] = reach
                expect["decaying"] = reach > expect["leak_horizon"]
                if LEAK_SITES[name] is not None:
                    expect["leak_sites"] = LEAK_SITES[name]
            if GRADIENT_BUG.get(name) == g_mode:
                if not (got[g_mode]["gradient_horizon_at_L"] > 0 and got[g_mode]["leak_horizon"] == 0
                        and got[g_mode]["max_rel_future_change_f64"] == 0.0 and reach > 0):
                    failures.append(f"{name} ({mode}): the known autograd bug no longer shows: drop GRADIENT_BUG")
                for key in ("gradient_check", "structural_horizon", "decaying"):
                    expect.pop(key, None)
            elif expect["gradient_check"] != "agrees":
                failures.append(f"{name} ({mode}): the gradient method's horizon differs from brute force")
            cases.append({"name": f"{name}-{mode}", "model": os.path.relpath(f, AUDITS), "input": FEAT, "seq_len": L,
                          "mode": mode, "expect": expect, "why": why, "checked": got})

        if name in DECAYING:
            cases.append(decaying_case(name, f, why))
            h64, reach64, _ = DECAY_RESULTS[name]
            if reach64 != DECAY_L - 1 or h64 == 0:
                failures.append(f"{name} at L {DECAY_L}: horizon {h64}, structural horizon {reach64} (want > 0, L - 1)")
            if cases[-1]["expect"]["gradient_check"] != "agrees":
                failures.append(f"{name} at L {DECAY_L}: the gradient method's horizon differs from brute force")

        # The zero-head twin: constant as given; the structural pass must find the model's verdict.
        constant = constant_as_given(fz, L)
        tmp = msc.redrawn_copy(fz)
        try:
            structural = msc.brute_force(tmp, L)
        finally:
            os.remove(tmp)
        hs = max(structural["eval"]["leak_horizon"], structural["train"]["leak_horizon"])
        h = max(h_eval, h_train)
        print(f"{name + ' zero head':30s} constant as given {constant}, structural h{hs} "
              f"(eval {structural['eval']['leak_horizon']} train {structural['train']['leak_horizon']})", flush=True)
        if not constant:
            failures.append(f"{name} zero head: the weights as given do not compute 0")
        if (hs > 0) != (h > 0):
            failures.append(f"{name} zero head: structural horizon {hs}, the random-initialised model's {h}")
        expect = {"verdict": "leaky" if hs > 0 else "causal", "leak_horizon": 0,
                  "violations": ["structural"] if hs > 0 else [], "batch_coupled": False,
                  "structural": "leaky" if hs > 0 else "causal"}
        cases.append({"name": f"{name}-zero-head", "model": os.path.relpath(fz, AUDITS), "input": FEAT, "seq_len": L,
                      "mode": "both", "expect": expect,
                      "why": (f"{layer}: {arrangement}, its output projection zero-initialised (weight and bias): the "
                              "weights as given compute the constant 0; the structural pass redraws the head and must "
                              "find the random-initialised model's verdict."),
                      "checked": {"constant_as_given": constant, "structural": structural}})
        rows.append({"name": name, "layer": layer, "arrangement": arrangement,
                     "eval": fmt_h(h_eval, got["eval"]["structural_horizon"]),
                     "train": fmt_h(h_train, got["train"]["structural_horizon"]),
                     "batch_coupled_train": got["batch_coupled_train"],
                     "zero_head_as_given": "constant 0 (causal, vacuous)" if constant else "NOT constant",
                     "zero_head_structural": "leaky" if hs > 0 else "causal", "zero_head_structural_horizon": hs,
                     "L64": DECAY_RESULTS.get(name)})

    if failures:
        print("\n".join("MISMATCH " + x for x in failures))
        sys.exit(1)
    if only:
        return
    suite = {"suite": "layers",
             "description": ("Issue #32's layer survey: every torch.nn layer that keeps state, normalises over batch "
                             "or time, or is piecewise linear (BatchNorm1d/2d, InstanceNorm1d with running statistics, "
                             "GroupNorm, LayerNorm, RNN/GRU/LSTM cells unrolled both ways, nn.RNN/GRU/LSTM, ReLU, "
                             "MaxPool1d, Hardtanh), each in a causal arrangement and, where people write it so, a "
                             "leaky one, audited in eval and train mode; and each with its output projection "
                             "zero-initialised (constant as given; the structural pass must find the model's "
                             "verdict). Generated by reference/make_layer_survey.py; expectations re-derived by brute "
                             "force (float64, every length of the schedule, horizons at 100 x max(measured float64 "
                             "floor, 2.2e-16)), the gradient method's by float64 autograd."),
             "producer": f"PyTorch {torch.__version__}",
             "cases": cases}
    with open(os.path.join(AUDITS, "layers.json"), "w") as fh:
        json.dump(suite, fh, indent=2)
        fh.write("\n")
    with open("/tmp/layer-survey-rows.json", "w") as fh:  # for the survey table (not part of the suite)
        json.dump(rows, fh, indent=2)
        fh.write("\n")
    print(f"wrote {len(cases)} cases to {os.path.join(AUDITS, 'layers.json')}")


if __name__ == "__main__":
    main()
