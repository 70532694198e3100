#!/usr/bin/python3
"""A user-sized GPT-style decoder as TorchScript, for the audit-throughput measurement
(scripts/audit-throughput.sh): d 384, 6 layers, 6 heads, d_ff 1536, V 8000, learned
positions (256), pre-norm, causal attention (explicit -inf mask), untied head: 16.9M
parameters. Fixed seed; not committed (68 MB). --dropout P adds nn.Dropout(P) after the embeddings,
the attention and the MLP (GPT-2's places): a model whose train mode differs from its eval mode.

  /usr/bin/python3 reference/make_user_gpt.py OUT.pt [--dropout P]
  /usr/bin/python3 reference/make_user_gpt.py --time-forward OUT.pt --seq-len 128 --threads 2
  python3 reference/make_user_gpt.py --export OUT.pt2   (PyTorch 2.5+: the same model, same seed,
      saved by torch.export with a dynamic batch and sequence dimension, for `grassaudit bench
      --files OUT.pt,OUT.pt2`: the graph interpreter against TorchScript on one model)
  /usr/bin/python3 reference/make_user_gpt.py --onnx OUT.onnx   (torch 1.13: the same model, same
      seed, exported by torch.onnx.export at opset 17 with dynamic batch and sequence axes, input
      "ids", output "logits", for `grassaudit bench --files OUT.pt,OUT.onnx`: the ONNX interpreter
      against TorchScript on one model)
"""
import collections
import math
import os
import re
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

V, D, LAYERS, HEADS, FF, MAX_LEN = 8000, 384, 6, 6, 1536, 256


class Block(nn.Module):
    def __init__(self, p: float):
        super().__init__()
        self.drop = nn.Dropout(p) if p > 0 else nn.Identity()
        self.ln1 = nn.LayerNorm(D)
        self.qkv = nn.Linear(D, 3 * D)
        self.proj = nn.Linear(D, D)
        self.ln2 = nn.LayerNorm(D)
        self.fc = nn.Linear(D, FF)
        self.out = nn.Linear(FF, D)
        self.d = D
        self.heads = HEADS

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        B, L, _ = h.shape
        d, H = self.d, self.heads
        q, k, v = self.qkv(self.ln1(h)).split(d, dim=-1)
        q = q.view(B, L, H, d // H).transpose(1, 2)
        k = k.view(B, L, H, d // H).transpose(1, 2)
        v = v.view(B, L, H, d // H).transpose(1, 2)
        s = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d // H)
        s = s.masked_fill(torch.ones(L, L, dtype=torch.bool, device=h.device).triu(1), float("-inf"))
        o = torch.matmul(torch.softmax(s, -1), v).transpose(1, 2).reshape(B, L, d)
        h = h + self.drop(self.proj(o))
        return h + self.drop(self.out(F.gelu(self.fc(self.ln2(h)))))


class GPT(nn.Module):
    def __init__(self, p: float = 0.0):
        super().__init__()
        self.drop = nn.Dropout(p) if p > 0 else nn.Identity()
        self.tok = nn.Embedding(V, D)
        self.pos = nn.Embedding(MAX_LEN, D)
        self.blocks = nn.ModuleList([Block(p) for _ in range(LAYERS)])
        self.ln = nn.LayerNorm(D)
        self.head = nn.Linear(D, V, bias=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        L = ids.size(1)
        h = self.drop(self.tok(ids) + self.pos(torch.arange(L, device=ids.device)).unsqueeze(0))
        for b in self.blocks:
            h = b(h)
        return self.head(self.ln(h))


def export_onnx(path: str) -> None:
    # Opset 17 is the newest torch 1.13 writes (LayerNormalization is one node from 17 on). The
    # host has no onnxruntime and no onnx package, so the check here is torch's own: the graph it
    # exported, as text, takes "ids" with both axes dynamic, holds every weight and no Dropout;
    # agreement with TorchScript is checked by running both files through grassaudit.
    torch.manual_seed(20261201)
    model = GPT().eval()
    ids = torch.randint(0, V, (2, 64), generator=torch.Generator().manual_seed(1))
    kw = dict(input_names=["ids"], output_names=["logits"], opset_version=17, do_constant_folding=True,
              dynamic_axes={"ids": {0: "batch", 1: "seq"}, "logits": {0: "batch", 1: "seq"}})
    with torch.no_grad():
        torch.onnx.export(model, (ids,), path, **kw)
        text = torch.onnx.export_to_pretty_string(model, (ids,), **kw)
    ops = collections.Counter(re.findall(r'Node \{type: "(\w+)"', text))
    weights = len(re.findall(r"TensorProto shape: \[", text.split("nodes: [")[0]))
    problems = []
    if 'inputs: [{name: "ids", type:Tensor dtype: 7, Tensor dims: ? ?}]' not in text:
        problems.append("input 'ids' is not int64 [batch, seq] with both axes dynamic")
    if weights != len(list(model.parameters())):
        problems.append(f"{weights} initializers for {len(list(model.parameters()))} parameters")
    if ops["Dropout"]:
        problems.append("Dropout nodes in an eval-mode export")
    if problems or os.path.getsize(path) < 4 * sum(p.numel() for p in model.parameters()):
        sys.exit(f"{path}: the export is not the model: {'; '.join(problems) or 'file smaller than its weights'}")
    print(f"{sum(p.numel() for p in model.parameters()):,} parameters -> {path}; {sum(ops.values())} nodes: "
          + ", ".join(f"{k} {n}" for k, n in ops.most_common()), file=sys.stderr)


def main() -> None:
    if sys.argv[1] == "--time-forward":
        path, L, threads = sys.argv[2], int(sys.argv[4]), int(sys.argv[6])
        torch.set_num_threads(threads)
        m = torch.jit.load(path).eval()
        x = torch.randint(0, V, (32, L), generator=torch.Generator().manual_seed(1))
        with torch.no_grad():
            m(x)
            times = []
            for _ in range(5):
                t = time.perf_counter()
                m(x)
                times.append(time.perf_counter() - t)
        print(f"{sorted(times)[2]:.4f}")
        return
    if sys.argv[1] == "--export":
        from torch.export import Dim
        torch.manual_seed(20261201)
        model = GPT().eval()
        ids = torch.zeros(2, 64, dtype=torch.long)
        ep = torch.export.export(model, (ids,),
                                 dynamic_shapes=({0: Dim("batch", max=4096), 1: Dim("seq", min=2, max=MAX_LEN)},))
        torch.export.save(ep, sys.argv[2])
        return
    if sys.argv[1] == "--onnx":
        export_onnx(sys.argv[2])
        return
    p = float(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[2] == "--dropout" else 0.0
    torch.manual_seed(20261201)
    model = GPT(p).eval()
    print(f"{sum(p.numel() for p in model.parameters()):,} parameters", file=sys.stderr)
    torch.jit.script(model).save(sys.argv[1])


if __name__ == "__main__":
    main()
