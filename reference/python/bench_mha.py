#!/usr/bin/python3
"""Time torch.nn.MultiheadAttention (batch_first, d 256, 4 heads) with a causal mask:
forward + backward of a scalar loss.  Baseline for the C++ attention benchmark.

  /usr/bin/python3 reference/python/bench_mha.py --batch 32 --seq-len 128 --threads 1

Prints one JSON object on stdout; tokens_per_second = batch * seq_len / median rep time.
"""
import argparse
import json
import statistics
import time

import torch
import torch.nn as nn


def main() -> None:
    ap = argparse.ArgumentParser(description="time causal nn.MultiheadAttention forward+backward")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--d-model", type=int, default=256)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--dropout", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    mha = nn.MultiheadAttention(args.d_model, args.heads, dropout=args.dropout, batch_first=True)
    mha.train()
    L = args.seq_len
    mask = torch.ones(L, L, dtype=torch.bool).triu(1)           # True = not allowed (future)
    x = torch.randn(args.batch, L, args.d_model, requires_grad=True)

    def rep() -> None:
        mha.zero_grad(set_to_none=True)
        x.grad = None
        out, _ = mha(x, x, x, attn_mask=mask, need_weights=False)
        out.square().mean().backward()

    for _ in range(args.warmup):
        rep()
    times = []
    for _ in range(args.reps):
        t0 = time.perf_counter()
        rep()
        times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    print(json.dumps({
        "op": "nn.MultiheadAttention causal fwd+bwd",
        "batch": args.batch,
        "seq_len": L,
        "d_model": args.d_model,
        "heads": args.heads,
        "threads": args.threads,
        "tokens_per_second": args.batch * L / med,
        "ms_per_rep_median": med * 1e3,
        "reps": args.reps,
        "warmup": args.warmup,
        "dropout": args.dropout,
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
    }))


if __name__ == "__main__":
    main()
