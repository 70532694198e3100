#!/usr/bin/python3
"""Discrete-routing controls: models that select over the time axis, each beside its causal twin.

Run with Debian's python (torch 1.13, CPU):  /usr/bin/python3 reference/make_routing_controls.py
then, for the same models as users export them with PyTorch 2.6 (Debian 13's python3-torch):
    bash scripts/test-debian13.sh --run python3 reference/make_routing_controls.py --exported
which adds audits/routing/*.pt2 (torch.export.save, dynamic batch and length) and *.onnx
(torch.onnx.export, dynamo=False, opset 17, dynamic axes), each with the TorchScript file's
weights, and their cases to audits/routing.json. Their expectations are the TorchScript file's
brute force, once each exported program has been checked to compute the same function: its
output against the TorchScript file's on random inputs at every length of both schedules
(onnxruntime for the ONNX files), float32, each position within 1e-5 relative but for the few
where a selection flips on a near tie that other float32 kernels round otherwise.

Writes audits/routing/*.pt (TorchScript: scripted, or traced where the family is written to be
traced) and audits/routing.json, the suite. A selection over time (top-k, argmax into a capacity
queue, block selection, sorting into buckets) makes a dependence that is all or nothing: y_t moves
when x_s changes only if the change flips a selection y_t reads. Gradients do not see it and a
random replacement flips it only sometimes, so the expectations here come from a brute force
that is much larger than the audit's search: float64, every length of the audit's schedule, each
position replaced alone, BRUTE_BASES base sequences x BRUTE_SUBS substitutions per position. The
script aborts (exit 1) when a declared horizon disagrees with it.

The families (tokens in, logits out, vocabulary 32, width 16):
  expert choice        each of 4 experts takes its top L/4 tokens of the whole sequence (leaky)
                       / of the prefix, by rank among the scores so far (causal, reads the past)
  capacity queue       each token picks its argmax expert; an expert takes L/4 tokens: the first that
                       pick it along the sequence (causal in time, reads the past; length-dependent
                       as token-choice MoE is) / those with the highest scores of the sequence
                       (leaky) / the first of the batch, row-major over [B * L] (batch-coupled)
  block selection      NSA-style: keys mean-pooled in blocks of 4, each query keeps its top 2 blocks
                       (token attention causal inside them) of all blocks (leaky), of the blocks
                       started by t (leaky, 3 ahead), of the blocks complete by t (causal)
  top-k attention      each query keeps its top 4 keys, the causal mask applied after the selection
                       (leaky) / before it (causal); traced, so k is fixed at 4 and L 2 fails
  sort bucketing       tokens sorted by an LSH bucket, attention causal inside chunks of 4 of the
                       sorted order (leaky: which tokens share a chunk depends on all of them) /
                       attention to the same bucket's earlier tokens over the whole sorted order
                       (causal: the sort only permutes)
"""
import json
import os
import sys
from typing import Dict, List

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import make_audit_controls as mac  # noqa: E402  (schedule, floor, tolerance, length and batch checks)

AUDITS = os.path.join(ROOT, "audits")
OUT = os.path.join(AUDITS, "routing")
VOCAB, D, EXPERTS, BLOCK = 32, 16, 4, 4
PREFIX_K = 4      # the causal expert choice: fewer than 4 scores so far beat token t's
BUCKETS = 4       # LSH buckets of the sort bucketing
TOK = f"tokens:{VOCAB}"
BRUTE_BASES, BRUTE_SUBS = 128, 8


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


class Experts(nn.Module):
    """EXPERTS small MLPs applied to every token: [B, L, D] -> [B, L, EXPERTS, D]."""

    def __init__(self):
        super().__init__()
        self.w1 = nn.Parameter(torch.randn(EXPERTS, D, 2 * D) / D ** 0.5)
        self.w2 = nn.Parameter(torch.randn(EXPERTS, 2 * D, D) / (2 * D) ** 0.5)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        u = torch.tanh(torch.einsum("bld,edf->blef", h, self.w1))
        return torch.einsum("blef,efd->bled", u, self.w2)


class ExpertChoice(nn.Module):
    """Each expert takes its top L/4 tokens by router score: of the whole sequence (prefix=False,
    leaky), or token t when fewer than 4 scores of x_0..x_t beat its own (prefix=True, causal; a
    fixed 4, so that a prefix run is the full run's prefix)."""

    def __init__(self, prefix: bool):
        super().__init__()
        self.prefix_k = PREFIX_K
        self.prefix = prefix
        self.router = nn.Linear(D, EXPERTS)
        self.experts = Experts()

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        L = h.size(1)
        k = L // 4  # none below L 4 (no max(): an exporter's trace would fix it)
        s = self.router(h)                                   # [B, L, E]
        if self.prefix:
            beats = (s.unsqueeze(1) > s.unsqueeze(2))         # [B, t, s', E]: score_s' > score_t
            past = torch.ones(L, L, dtype=torch.bool, device=h.device).tril().view(1, L, L, 1)
            taken = ((beats & past).sum(2) < self.prefix_k).to(h.dtype)  # [B, L, E]
        else:
            idx = torch.topk(s, k, dim=1).indices            # [B, k, E]
            taken = torch.zeros_like(s).scatter(1, idx, 1.0)
        gate = torch.sigmoid(s) * taken
        return (gate.unsqueeze(-1) * self.experts(h)).sum(2)


class CapacityQueue(nn.Module):
    """Each token picks its argmax expert; an expert takes L / EXPERTS tokens (capacity factor 1,
    so the queue's length follows the sequence's, as in token-choice MoE: the model is length
    dependent): the first along the sequence (order="sequence", causal in time), the highest
    scores of the sequence (order="score", leaky), or the first B * L / (2 EXPERTS) of the batch
    read row-major (order="batch": the later rows get what the earlier ones left, so rows couple)."""

    def __init__(self, order: str):
        super().__init__()
        self.n_experts = EXPERTS
        self.order = order
        self.router = nn.Linear(D, EXPERTS)
        self.experts = Experts()

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        B, L = h.size(0), h.size(1)
        s = self.router(h)                                   # [B, L, E]
        choice = F.one_hot(torch.argmax(s, -1), self.n_experts).to(h.dtype)  # [B, L, E]
        if self.order == "score":
            top = (s * choice).sum(-1)                        # each token's own score [B, L]
            ahead = (top.unsqueeze(1) > top.unsqueeze(2)).to(h.dtype)   # [B, t, s']: s' scores higher
            place = torch.einsum("bts,bse,bte->bte", ahead, choice, choice)
        elif self.order == "batch":
            flat = choice.reshape(1, B * L, self.n_experts)
            place = (torch.cumsum(flat, 1) - flat).reshape(B, L, self.n_experts)
        else:
            place = torch.cumsum(choice, 1) - choice          # tokens before t that chose t's expert
        # Capacity factor 1 of a row's tokens; row-major, half of the batch's: a pair of identical rows
        # (how the audit probes rows that mix) fills row 0's queues as a sequence does.
        capacity = (B * L // 2 if self.order == "batch" else L) // self.n_experts
        kept = choice * (place < capacity).to(h.dtype)
        gate = torch.sigmoid(s) * kept
        return (gate.unsqueeze(-1) * self.experts(h)).sum(2)


class BlockSelect(nn.Module):
    """NSA-style: keys mean-pooled in blocks of BLOCK (and one empty block after them, so that there
    are always two to keep); each query keeps its top 2 candidate blocks by q . pooled key and
    attends causally (s <= t) to the tokens of the blocks it kept. Candidates:
    every block ("all"), the blocks started by t ("started"), the blocks complete by t plus its
    own ("complete": its own block's pooled key is not read)."""

    def __init__(self, candidates: str):
        super().__init__()
        self.block = BLOCK
        self.d = D
        self.candidates = candidates
        self.q = nn.Linear(D, D)
        self.k = nn.Linear(D, D)
        self.v = nn.Linear(D, D)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        B, L = h.size(0), h.size(1)
        nb = (L + self.block - 1) // self.block + 1  # one empty block more: at least two to keep
        q, k, v = self.q(h), self.k(h), self.v(h)
        # Block n's pooled key, sum(k_s for s in the block) / BLOCK, as one product (a pad and a
        # reshape by the block would tie the length to a multiple of the block in an export).
        pool = (torch.arange(L, device=h.device).view(1, L) // self.block ==
                torch.arange(nb, device=h.device).view(nb, 1)).to(h.dtype) / self.block        # [nb, L]
        kp = torch.einsum("ns,bsd->bnd", pool, k)                                                  # [B, nb, D]
        score = torch.einsum("btd,bnd->btn", q, kp)                                  # [B, L, nb]
        t = torch.arange(L, device=h.device).view(L, 1)
        start = (torch.arange(nb, device=h.device) * self.block).view(1, nb)
        own = (t // self.block) == (start // self.block)
        if self.candidates == "all":
            cand = torch.ones(L, nb, dtype=torch.bool, device=h.device)
        elif self.candidates == "started":
            cand = start <= t
        else:
            cand = (start + self.block - 1 <= t) & ~own
        neg = torch.full_like(score, -1e9)
        score = torch.where(cand.unsqueeze(0), score, neg)
        keep = torch.topk(score, 2, dim=2).indices                                   # [B, L, 2]
        kept = torch.zeros_like(score).scatter(2, keep, 1.0) * cand.unsqueeze(0).to(h.dtype)
        if self.candidates == "complete":
            kept = torch.maximum(kept, own.unsqueeze(0).to(h.dtype))
        block_of = torch.arange(L, device=h.device) // self.block                         # [L]
        tok_kept = kept.gather(2, block_of.view(1, 1, L).expand(B, L, L)) > 0        # [B, t, s]
        causal = torch.ones(L, L, dtype=torch.bool, device=h.device).tril().unsqueeze(0)
        allowed = tok_kept & causal
        att = torch.einsum("btd,bsd->bts", q, k) / self.d ** 0.5
        att = att.masked_fill(~allowed, -1e9).softmax(-1) * allowed.to(h.dtype)
        return torch.einsum("bts,bsd->btd", att, v)


class TopKAttention(nn.Module):
    """Each query keeps its top 4 keys; the causal mask is applied after the selection
    (mask_first=False: future keys take places, so which past keys are kept depends on them) or
    before it (mask_first=True, causal)."""

    def __init__(self, mask_first: bool):
        super().__init__()
        self.d = D
        self.mask_first = mask_first
        self.q = nn.Linear(D, D)
        self.k = nn.Linear(D, D)
        self.v = nn.Linear(D, D)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        L = h.size(1)
        q, k, v = self.q(h), self.k(h), self.v(h)
        att = torch.einsum("btd,bsd->bts", q, k) / self.d ** 0.5
        pos = torch.arange(L, device=h.device)
        causal = (pos.view(1, L) <= pos.view(L, 1)).unsqueeze(0)
        if self.mask_first:
            att = att.masked_fill(~causal, -1e9)
        top = torch.topk(att, 4, dim=-1).indices
        kept = torch.zeros_like(att).scatter(-1, top, 1.0) > 0
        allowed = kept & causal
        w = att.masked_fill(~allowed, -1e9).softmax(-1) * allowed.to(h.dtype)
        return torch.einsum("bts,bsd->btd", w, v)


class SortBuckets(nn.Module):
    """Tokens sorted by an LSH bucket (argmax of a random projection), then attention in the
    sorted order: causal inside chunks of 4 (chunks=True, leaky: a chunk's members depend on every
    token's bucket), or to the same bucket's earlier tokens over the whole order (chunks=False:
    the sort only permutes, causal)."""

    def __init__(self, chunks: bool):
        super().__init__()
        self.d = D
        self.chunks = chunks
        self.proj = nn.Parameter(torch.randn(D, BUCKETS))
        self.k = nn.Linear(D, D)
        self.v = nn.Linear(D, D)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        B, L = h.size(0), h.size(1)
        bucket = torch.argmax(h @ self.proj, -1)                                      # [B, L]
        pos = torch.arange(L, device=h.device).view(1, L).expand(B, L)
        order = torch.argsort(bucket * L + pos, dim=1)                                # [B, L]
        hs = h.gather(1, order.unsqueeze(-1).expand(B, L, self.d))
        ps = pos.gather(1, order)
        bs = bucket.gather(1, order)
        k, v = self.k(hs), self.v(hs)
        att = torch.einsum("btd,bsd->bts", hs, k) / self.d ** 0.5
        allowed = ps.unsqueeze(2) >= ps.unsqueeze(1)                                  # earlier or self
        if self.chunks:
            chunk = torch.arange(L, device=h.device) // 4
            allowed = allowed & (chunk.view(1, L, 1) == chunk.view(1, 1, L))
        else:
            allowed = allowed & (bs.unsqueeze(2) == bs.unsqueeze(1))
        w = att.masked_fill(~allowed, -1e9).softmax(-1)
        ys = torch.einsum("bts,bsd->btd", w, v)
        return torch.zeros_like(ys).scatter(1, order.unsqueeze(-1).expand(B, L, self.d), ys)


def model(mixer: nn.Module) -> nn.Module:
    return TokenLM(mixer).eval()


# name, file, build, how it is saved, what it is (the expectations come from the brute force and
# must equal the declared leak class: "leaky" | "causal" | "batch")
FAMILIES = [
    ("expert-choice", "expert_choice", lambda: model(ExpertChoice(prefix=False)), "script", "leaky"),
    ("expert-choice-prefix", "expert_choice_prefix", lambda: model(ExpertChoice(prefix=True)), "script", "causal"),
    ("capacity-sequence", "capacity_sequence", lambda: model(CapacityQueue("sequence")), "script", "causal"),
    ("capacity-score", "capacity_score", lambda: model(CapacityQueue("score")), "script", "leaky"),
    ("capacity-row-major", "capacity_row_major", lambda: model(CapacityQueue("batch")), "script", "batch"),
    ("block-select-all", "block_select_all", lambda: model(BlockSelect("all")), "script", "leaky"),
    ("block-select-started", "block_select_started", lambda: model(BlockSelect("started")), "script", "leaky"),
    ("block-select-complete", "block_select_complete", lambda: model(BlockSelect("complete")), "script", "causal"),
    ("topk-attention-mask-after", "topk_attention_mask_after", lambda: model(TopKAttention(False)), "trace", "leaky"),
    ("topk-attention-mask-first", "topk_attention_mask_first", lambda: model(TopKAttention(True)), "trace", "causal"),
    ("sort-chunks", "sort_chunks", lambda: model(SortBuckets(chunks=True)), "script", "leaky"),
    ("sort-buckets-masked", "sort_buckets_masked", lambda: model(SortBuckets(chunks=False)), "script", "causal"),
]
LENGTHS = [16, 64]

# Where each leaky family's future leak is planted: the module path(s) the audit's localise check must
# name (the selection code is the mixer's own; Experts sees [B, L, E, D] per token and reads no other
# position), written as leak_sites to every leaky case (future, length or batch), exported twins alike.
LEAK_SITES: Dict[str, List[str]] = {
    "expert-choice": ["mixer"],
    "capacity-score": ["mixer"],
    "block-select-all": ["mixer"],
    "block-select-started": ["mixer"],
    "topk-attention-mask-after": ["mixer"],
    "sort-chunks": ["mixer"],
    "capacity-sequence": ["mixer"],
    "capacity-row-major": ["mixer"],
}


def runs_at(m, L: int) -> bool:
    try:
        with torch.no_grad():
            y = m(torch.zeros(2, L, dtype=torch.long))
        return bool(torch.isfinite(y).all())
    except Exception:  # noqa: BLE001  (a traced topk of 4 at L < 4)
        return False


def brute_force(m, L: int, tol: float, alone: bool = False) -> Dict:
    """float64, eval mode: each position s replaced alone, BRUTE_BASES bases x BRUTE_SUBS
    substitutions (always a different token): the largest s - t with y_t (t < s) moved and the
    largest t - s with y_t (t > s) moved, relative to each base's max |y|. alone: every sequence
    in a pass of its own (two identical rows, row 0 kept), as the audit probes a mode whose rows
    mix."""
    def run(inp: torch.Tensor) -> torch.Tensor:
        if not alone:
            return m(inp).to(torch.float64)
        return torch.cat([m(inp[i:i + 1].repeat(2, 1))[:1] for i in range(inp.size(0))]).to(torch.float64)

    gen = torch.Generator().manual_seed(5000 + L)
    x = torch.randint(0, VOCAB, (BRUTE_BASES, L), generator=gen)
    future, past = 0, 0
    with torch.no_grad():
        y0 = run(x)
        scale = y0.abs().amax(dim=(1, 2)).view(-1, 1)
        for s in range(L):
            for _ in range(BRUTE_SUBS):
                x2 = x.clone()
                x2[:, s] = (x2[:, s] + torch.randint(1, VOCAB, (BRUTE_BASES,), generator=gen)) % VOCAB
                d = ((run(x2) - y0).abs().amax(-1) / scale).amax(0)   # [L]
                before = (d[:s] > tol).nonzero().flatten()
                if before.numel():
                    future = max(future, s - int(before.min()))
                after = (d[s + 1:] > tol).nonzero().flatten()
                if after.numel():
                    past = max(past, int(after.max()) + 1)
    return dict(future=future, past=past)


def length_dependent(path: str, L: int, guard: int, tol: float) -> bool:
    """make_audit_controls.length_dependent, skipping the prefix lengths the model does not run at
    (as the audit's length check does)."""
    m = torch.jit.load(path)
    m.to(torch.float64).eval()
    gen = torch.Generator().manual_seed(2000 + L)
    x = torch.randint(0, VOCAB, (2, L), generator=gen)
    with torch.no_grad():
        y = m(x).to(torch.float64)
        scale = y.abs().max().item()
        for p in range(2, L):
            k = p - guard
            if k <= 0 or not runs_at(m, p):
                continue
            yp = m(x[:, :p].contiguous()).to(torch.float64)
            if (yp[:, :k] - y[:, :k]).abs().max().item() / scale > tol:
                return True
    return False


def main() -> None:
    """--only NAME,...: those families again, the other cases of audits/routing.json kept as they are."""
    only = None
    if "--only" in sys.argv[1:]:
        only = set(sys.argv[sys.argv.index("--only") + 1].split(","))
    if os.environ.get("PYTHONHASHSEED") != "0":
        os.execve(sys.executable, [sys.executable] + sys.argv, {**os.environ, "PYTHONHASHSEED": "0"})
    torch.set_num_threads(1)
    os.makedirs(OUT, exist_ok=True)
    cases, failures, rows = [], [], []
    kept = {}
    if only is not None:
        with open(os.path.join(AUDITS, "routing.json")) as f:
            kept = {c["name"]: c for c in json.load(f)["cases"] if c["model"].endswith(".pt")}
    for i, (name, file, build, how, leak_class) in enumerate(FAMILIES):
        if only is not None and name not in only:
            cases += [kept[f"{name}-L{L}"] for L in LENGTHS]
            continue
        torch.manual_seed(100 + i)
        m = build()
        path = os.path.join(OUT, file + ".pt")
        saved = torch.jit.trace(m, torch.randint(0, VOCAB, (2, 16))) if how == "trace" else torch.jit.script(m)
        saved.save(path)
        for L in LENGTHS:
            loaded = torch.jit.load(path)
            loaded.to(torch.float64).eval()
            floor = mac.precision_floor(path, TOK, L)
            tol_h = mac.horizon_tol(floor)
            future, past, skipped = 0, 0, []
            for n in mac.schedule(L):
                if not runs_at(loaded, n):
                    skipped.append(n)
                    continue
                b = brute_force(loaded, n, tol_h, alone=leak_class == "batch")
                future, past = max(future, b["future"]), max(past, b["past"])
            tol = max(mac.TOL_F64, mac.FLOOR_MARGIN * floor)
            length_dep = length_dependent(path, L, future, tol)
            batch = mac.batch_coupled(path, TOK, L, tol)
            violations = (["future"] if future else []) + (["length"] if length_dep else []) + \
                         (["batch"] if batch else [])
            have = "leaky" if future else "batch" if batch else "causal"  # length: declared by the why
            if have != leak_class:
                failures.append(f"{name} L={L}: declared {leak_class}, brute force gives future {future}, batch {batch}")
            expect = {"verdict": "leaky" if violations else "causal", "leak_horizon": future, "violations": violations,
                      "past_horizon": past, "batch_coupled": batch, "discrete_routing": True, "horizon_bound": "exact"}
            if future < L - 1:  # else no prefix has a position that what follows it cannot move: not checked
                expect["length_dependent"] = length_dep
            if violations:
                expect["leak_sites"] = LEAK_SITES[name]
            cases.append({"name": f"{name}-L{L}", "model": f"routing/{file}.pt", "input": TOK, "seq_len": L,
                          "mode": "eval", "expect": expect, "leak_class": leak_class, "why": build().mixer.__doc__.split(".")[0],
                          "checked": {"lengths": mac.schedule(L), "skipped_lengths": skipped, "bases": BRUTE_BASES,
                                      "substitutions": BRUTE_SUBS, "precision_floor_f64": floor,
                                      "tolerance_horizon": tol_h}})
            rows.append((name, L, future, past, batch, length_dep, skipped))
            print(f"{name:28s} L={L:3d} future {future:3d} past {past:3d} batch {batch!s:5s} length {length_dep!s:5s} "
                  f"skipped {skipped}", flush=True)
    if failures:
        print("\n".join(failures), file=sys.stderr)
        sys.exit(1)
    suite = {"suite": "routing",
             "description": "Discrete routing over time (expert choice, capacity queues, NSA-style block selection, "
                            "top-k attention, sort bucketing), each beside its causal twin, at L 16 and 64. Generated "
                            "by reference/make_routing_controls.py; every horizon is a float64 brute force of "
                            f"{BRUTE_BASES} bases x {BRUTE_SUBS} substitutions for each position replaced alone, "
                            "every length of the schedule.",
             "producer": f"torch {torch.__version__}", "cases": cases}
    with open(os.path.join(AUDITS, "routing.json"), "w") as f:
        json.dump(suite, f, indent=1)
        f.write("\n")


def exported() -> None:
    """The exported twins of every family (PyTorch 2.6): see the top of this file."""
    import onnxruntime
    from torch.export import Dim
    suite_path = os.path.join(AUDITS, "routing.json")
    with open(suite_path) as f:
        suite = json.load(f)
    by_name = {c["name"]: c for c in suite["cases"] if c["model"].endswith(".pt")}
    cases = list(by_name.values())
    failures, not_exported = [], []
    for name, file, build, how, leak_class in FAMILIES:
        ts = torch.jit.load(os.path.join(OUT, file + ".pt"))
        m = build()
        m.load_state_dict(ts.state_dict())
        m.eval()
        shortest = 4  # torch.export guards the top-k's k (L // 4, or 4) to be at least 1: from L 4
        ids = torch.randint(0, VOCAB, (2, 16), generator=torch.Generator().manual_seed(5))
        pt2 = os.path.join(OUT, file + ".pt2")
        exts = [("onnx", "onnx")]
        try:
            with torch.no_grad():
                ep = torch.export.export(m, (ids,), dynamic_shapes=({0: Dim("batch", min=1, max=4096),
                                                                       1: Dim("seq", min=shortest, max=64)},))
            torch.export.save(ep, pt2)
            exts.insert(0, ("pt2", "torch.export"))
        except torch._dynamo.exc.UserError as e:  # the block count's guards: PyTorch 2.6 cannot prove them
            not_exported.append(f"{name}: {str(e).splitlines()[1].strip()}")
            if os.path.exists(pt2):
                os.remove(pt2)
        onnx_path = os.path.join(OUT, file + ".onnx")
        with torch.no_grad():
            torch.onnx.export(m, (ids,), onnx_path, dynamo=False, opset_version=17, input_names=["input_ids"],
                              output_names=["logits"], dynamic_axes={"input_ids": {0: "batch", 1: "seq"},
                                                                     "logits": {0: "batch", 1: "seq"}},
                              do_constant_folding=True)
        ort = onnxruntime.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
        prog = torch.export.load(pt2).module() if os.path.exists(pt2) else None
        gen = torch.Generator().manual_seed(6)
        for L in sorted({n for L0 in LENGTHS for n in mac.schedule(L0) if n >= shortest}):
            x = torch.randint(0, VOCAB, (3, L), generator=gen)
            with torch.no_grad():
                want = ts(x)
                scale = want.abs().max().item()
                runs = [("onnx", lambda: torch.from_numpy(ort.run(None, {"input_ids": x.numpy()})[0]))]
                if prog is not None:
                    runs.append(("torch.export", lambda: prog(x)))
                for kind, run in runs:
                    try:
                        got = run()
                    except Exception as e:  # noqa: BLE001
                        failures.append(f"{name} ({kind}) L={L}: does not run: {str(e).splitlines()[0]}")
                        continue
                    # A selection can flip where float32 kernels round a near tie otherwise (ORT's
                    # against LibTorch's): that moves the positions that read it, a few. A program
                    # that computes another function (a size the export froze) moves most of them.
                    off = ((got - want).abs().amax(-1) / scale > 1e-5).double().mean().item()
                    if off > 0.2:
                        failures.append(f"{name} ({kind}) L={L}: {off:.0%} of the output positions differ from "
                                        "the TorchScript file's")
        for L in LENGTHS:
            base = by_name[f"{name}-L{L}"]
            for ext, fmt in exts:
                case = json.loads(json.dumps(base))
                case["name"] = f"{name}-L{L}-{ext}"
                case["model"] = f"routing/{file}.{ext}"
                case["why"] = f"{base['why']} ({fmt}, PyTorch {torch.__version__})"
                if ext == "onnx":
                    case["input"] = f"input_ids=tokens:{VOCAB}"
                cases.append(case)
        print(f"{name}: exported", flush=True)
    if failures:
        print("\n".join(failures), file=sys.stderr)
        sys.exit(1)
    suite["cases"] = cases
    suite["exported_by"] = f"torch {torch.__version__}"
    suite["not_exported"] = not_exported  # torch.export refused these; their ONNX files are in
    with open(suite_path, "w") as f:
        json.dump(suite, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    if "--exported" in sys.argv[1:]:
        exported()
    else:
        main()
