#!/usr/bin/python3
"""Time one full training step of the paper-6l language model in PyTorch (baseline for the
C++ benchmark): AdamW, forward + backward + optimizer step, next-token cross-entropy.
The loss is PyTorch eager's: the full [B*L, V] logits, then F.cross_entropy ("loss_impl":
"materialized" in the output); the C++ bench's default is its fused (chunked) head, so
`grassaudit bench --loss-impl fused` against this is the C++ step against eager PyTorch.

paper-6l config: V = 30522, d = 256, N = 6, L = 128, batch 32, 4 heads, d_ff = 1024, r = 32,
offsets (1,2,4,8,12,16) one per layer, dropout 0.1, tied head.

  /usr/bin/python3 reference/python/bench_train_step.py --mixer past --threads 1 --steps 3

Prints one JSON object on stdout.
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from grassmann_lm import PAPER_OFFSETS, LanguageModel, n_params  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description="time one training step (AdamW) of the paper-6l LM")
    ap.add_argument("--mixer", choices=["past", "future", "attention"], default="past")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=3, help="timed steps after warm-up")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--vocab", type=int, default=30522)
    ap.add_argument("--offset-mode", choices=["per-layer", "all"], default="per-layer")
    ap.add_argument("--impl", choices=["literal", "wedge"], default="literal",
                    help="Grassmann layer: literal per-offset reference, or the exact wedge identity")
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    offsets = PAPER_OFFSETS if args.layers == 6 else ([1, 1, 2, 2, 4, 4, 8, 8, 12, 12, 16, 16]
                                                      if args.layers == 12 else PAPER_OFFSETS[:args.layers])
    model = LanguageModel(vocab=args.vocab, d=256, n_layers=args.layers, max_len=args.seq_len,
                          mixer=args.mixer, offsets=offsets, offset_mode=args.offset_mode, impl=args.impl)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    gen = torch.Generator().manual_seed(args.seed)
    data = torch.randint(0, args.vocab, (args.batch, args.seq_len + 1), generator=gen)
    inp, tgt = data[:, :-1], data[:, 1:]

    def step() -> float:
        opt.zero_grad(set_to_none=True)
        logits = model(inp)
        loss = F.cross_entropy(logits.reshape(-1, args.vocab), tgt.reshape(-1))
        loss.backward()
        opt.step()
        return loss.item()

    for _ in range(args.warmup):
        step()
    times, losses = [], []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        losses.append(step())
        times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    tokens = args.batch * args.seq_len
    print(json.dumps({
        "mixer": args.mixer,
        "threads": args.threads,
        "tokens_per_second": tokens / med,
        "ms_per_step_median": med * 1e3,
        "ms_per_step": [t * 1e3 for t in times],
        "batch": args.batch,
        "seq_len": args.seq_len,
        "layers": args.layers,
        "vocab": args.vocab,
        "offset_mode": args.offset_mode if args.mixer != "attention" else None,
        "impl": args.impl if args.mixer != "attention" else None,
        "params": n_params(model),
        "steps": args.steps,
        "warmup": args.warmup,
        "loss_last": losses[-1] if losses else None,
        "optimizer": "AdamW(lr=%g, weight_decay=0.01)" % args.lr,
        "loss_impl": "materialized",
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
    }))


if __name__ == "__main__":
    main()
