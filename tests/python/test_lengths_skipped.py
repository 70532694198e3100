"""Lengths where a model does not run are skipped, not refused: a top-k attention whose k is
fixed at 4 raises below L 4, and a dynamic-NTK RoPE traced on its scaled branch returns NaN at
and below L 8. Both run at the length asked for, so the audit answers there and names each
skipped length with its reason: in the package (the eager module) and in the CLI (its trace)."""
import json
import subprocess

import pytest
import torch
import torch.nn as nn

import grassaudit

VOCAB = 29


class TopKAttention(nn.Module):
    """Causal attention in which each query keeps its 4 best keys (torch.topk, k = 4)."""

    def __init__(self, d=8, k=4):
        super().__init__()
        self.emb, self.qkv, self.head = nn.Embedding(VOCAB, d), nn.Linear(d, 3 * d), nn.Linear(d, VOCAB)
        self.k = k

    def forward(self, ids):
        q, k, v = self.qkv(self.emb(ids)).chunk(3, dim=-1)
        scores = q @ k.transpose(1, 2)
        L = ids.shape[1]
        future = torch.ones(L, L, dtype=torch.bool).triu(1)
        scores = scores.masked_fill(future, float("-inf"))
        top, idx = scores.topk(self.k, dim=-1)  # raises when L < k
        kept = torch.full_like(scores, float("-inf")).scatter(-1, idx, top)
        return self.head(torch.softmax(kept, dim=-1).nan_to_num(0.0) @ v)


class DynamicNtkRope(nn.Module):
    """HF's dynamic-NTK RoPE on its scaled branch (the branch a trace at a long length keeps):
    base * (factor * L / max_pos - (factor - 1)) ** (d / (d - 2)) is NaN or Inf at and below
    L = max_pos * (factor - 1) / factor = 8. A running sum after it reads no future input, but
    the rotation depends on the length: y_t moves with how many inputs follow (a length
    violation, the audit's answer wherever the lengths it can run show it)."""

    def __init__(self, d=8, max_pos=16, factor=2.0):
        super().__init__()
        self.emb, self.head = nn.Embedding(VOCAB, d), nn.Linear(d, VOCAB)
        self.d, self.max_pos, self.factor = d, max_pos, factor

    def forward(self, ids):
        h = self.emb(ids)
        pos = torch.arange(ids.shape[1], dtype=h.dtype)
        length = pos[-1] + 1
        base = 10000.0 * (self.factor * length / self.max_pos - (self.factor - 1)) ** (self.d / (self.d - 2))
        inv = 1.0 / base ** (torch.arange(0, self.d, 2, dtype=h.dtype) / self.d)
        angle = pos[:, None] * inv[None, :]
        cos, sin = angle.cos(), angle.sin()
        a, b = h[..., 0::2], h[..., 1::2]
        rotated = torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)
        return self.head(rotated.cumsum(dim=1))


def test_a_length_where_the_model_raises_is_skipped():
    torch.manual_seed(0)
    report = grassaudit.audit(TopKAttention(), inputs=[f"tokens:{VOCAB}"], seq_len=16)
    assert report.verdict == "causal"
    assert [s["length"] for s in report.lengths_skipped] == [2]
    assert "k" in report.lengths_skipped[0]["reason"]
    assert 2 not in report.lengths_probed and 16 in report.lengths_probed
    assert "skipped where the model does not run" in str(report)


def test_nan_at_short_lengths_is_skipped_and_named():
    torch.manual_seed(0)
    report = grassaudit.audit(DynamicNtkRope(), inputs=[f"tokens:{VOCAB}"], seq_len=32)
    assert report.leak_horizon == 0
    assert [v["kind"] for v in report.violations] == ["length"]
    assert [s["length"] for s in report.lengths_skipped] == [8, 4, 2]
    assert all(s["reason"] == "NaN or Inf outputs" for s in report.lengths_skipped)
    assert "returns NaN or Inf at L 8, 4, 2" in str(report)


def test_the_length_asked_for_failing_is_refused():
    torch.manual_seed(0)
    with pytest.raises(grassaudit.ModelError, match="NaN or Inf"):
        grassaudit.audit(DynamicNtkRope(), inputs=[f"tokens:{VOCAB}"], seq_len=8)
    with pytest.raises(grassaudit.ForwardError, match="forward failed at L=3"):
        grassaudit.audit(TopKAttention(), inputs=[f"tokens:{VOCAB}"], seq_len=3)


def test_traces_skip_the_same_lengths_in_the_cli(cli, tmp_path):
    for model, L, skipped, verdict in ((TopKAttention(), 16, [2], "causal"), (DynamicNtkRope(), 32, [8, 4, 2], "leaky")):
        torch.manual_seed(0)
        ids = torch.randint(0, VOCAB, (2, L))
        path = str(tmp_path / f"{type(model).__name__}.pt")
        with torch.no_grad():
            torch.jit.trace(model.eval(), ids, check_trace=False).save(path)
        out = str(tmp_path / "audit.json")
        r = subprocess.run([cli, "audit", "--model", path, "--input", f"tokens:{VOCAB}", "--seq-len", str(L),
                            "--json", out], capture_output=True, text=True)
        assert r.returncode == (0 if verdict == "causal" else 1), r.stderr
        j = json.load(open(out))
        assert j["verdict"] == verdict and j["leak_horizon"] == 0
        assert [s["length"] for s in j["lengths_skipped"]] == skipped, j["lengths_skipped"]
        assert "skipped where the model does not run" in r.stdout + r.stderr
