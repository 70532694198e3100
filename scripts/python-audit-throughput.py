#!/usr/bin/python3
"""In-process audit (the Python package on the eager module) against the CLI on the same model
saved as TorchScript: the user-sized GPT of scripts/audit-throughput.sh (reference/make_user_gpt.py,
17M parameters), alternated ROUNDS times on the same machine, and the Python call overhead per
probe pass (the adapter's forward call and the state put back after it, against a bare forward).

  PYTHONPATH=build/python-package /usr/bin/python3 scripts/python-audit-throughput.py

Both run under OMP_WAIT_POLICY=PASSIVE (the CLI's default; set here before torch starts OpenMP).
Environment: L (128), THREADS (2), ROUNDS (2), DROPOUT (0), CLI (build/grassaudit),
CACHE (~/.cache/grassaudit), EXTRA (CLI flags for both, e.g. "--mode eval").
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "reference"))
import make_user_gpt  # noqa: E402

import grassaudit  # noqa: E402
from grassaudit._adapter import ModuleAdapter  # noqa: E402

L = int(os.environ.get("L", 128))
THREADS = int(os.environ.get("THREADS", 2))
ROUNDS = int(os.environ.get("ROUNDS", 2))
DROPOUT = float(os.environ.get("DROPOUT", 0))
CLI = os.environ.get("CLI", os.path.join(ROOT, "build", "grassaudit"))
CACHE = os.environ.get("CACHE", os.path.expanduser("~/.cache/grassaudit"))
EXTRA = os.environ.get("EXTRA", "").split()


def python_kwargs(extra):
    """The CLI flags of EXTRA as audit() keywords ("--mode eval" -> mode="eval")."""
    out, i = {}, 0
    while i < len(extra):
        key = extra[i].lstrip("-").replace("-", "_")
        if i + 1 < len(extra) and not extra[i + 1].startswith("--"):
            out[key] = int(extra[i + 1]) if extra[i + 1].isdigit() else extra[i + 1]
            i += 2
        else:
            out[key] = True
            i += 1
    return out


def main() -> None:
    # The CLI runs under OMP_WAIT_POLICY=PASSIVE unless told otherwise (src/cli/main.cpp): PyTorch's
    # OpenMP threads spin-waiting against OpenBLAS's own doubled the forward time here. It must be
    # set before OpenMP starts, so for a Python process before torch is imported: the same rule.
    if "OMP_WAIT_POLICY" not in os.environ:
        os.execve(sys.executable, [sys.executable] + sys.argv, {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"})
    torch.manual_seed(20261201)
    model = make_user_gpt.GPT(DROPOUT).eval()
    os.makedirs(CACHE, exist_ok=True)
    path = os.path.join(CACHE, f"user-gpt-d384-l6-v8000{'' if DROPOUT == 0 else f'-dropout{DROPOUT:g}'}.pt")
    if not os.path.exists(path):
        torch.jit.script(model).save(path)
    print(f"model: {path}; L {L}, threads {THREADS}, extra {EXTRA}")
    for r in range(1, ROUNDS + 1):
        with tempfile.NamedTemporaryFile(suffix=".json") as out:
            t = time.perf_counter()
            subprocess.run([CLI, "audit", "--model", path, "--input", "tokens:8000", "--seq-len", str(L),
                            "--threads", str(THREADS), "--json", out.name, *EXTRA], stdout=subprocess.DEVNULL, check=False)
            cli_wall = time.perf_counter() - t
            cli = json.load(open(out.name))
        t = time.perf_counter()
        rep = grassaudit.audit(model, inputs=["tokens:8000"], seq_len=L, threads=THREADS, **python_kwargs(EXTRA))
        py_wall = time.perf_counter() - t
        py = rep.to_dict()
        same = {k: (py[k], cli[k]) for k in ("verdict", "leak_horizon", "past_horizon") if py[k] != cli[k]}
        print(f"round {r}: CLI {cli['seconds']:.1f} s audit ({cli_wall:.1f} s wall, {cli['probes']} probes); "
              f"in-process {py['seconds']:.1f} s audit ({py_wall:.1f} s wall, {py['probes']} probes); "
              f"ratio {py['seconds'] / cli['seconds']:.2f} (wall {py_wall / cli_wall:.2f}); "
              f"{'same verdict and horizons' if not same else f'DIFFERENT: {same}'}")
        print("  by check  CLI:", {k: round(v, 1) for k, v in cli["seconds_by_check"].items()})
        print("  by check  Py: ", {k: round(v, 1) for k, v in py["seconds_by_check"].items()})

    # The Python overhead per probe pass, apart from the forward itself (whose time on a shared
    # machine varies by more than the overhead): the adapter's call (kwargs, module __call__, the
    # output normalised) against a bare call, both on a module whose forward costs nothing, and
    # the state put back after every pass, one adapter call per recorded item of the GPT.
    class Nothing(torch.nn.Module):
        def forward(self, ids):
            return ids

    nothing = Nothing()
    x = torch.zeros(32, L, dtype=torch.long)
    adapter = ModuleAdapter(model)
    state = adapter.state_items()
    cheap = ModuleAdapter(nothing)
    n = 2000

    def timed(f):
        f()
        best = float("inf")
        for _ in range(3):
            t = time.perf_counter()
            for _ in range(n):
                f()
            best = min(best, (time.perf_counter() - t) / n)
        return best

    def put_back():
        for name, value in state:
            adapter.set_state(name, value)

    with torch.no_grad():
        bare = timed(lambda: nothing(x))
        wrapped = timed(lambda: cheap.call({"ids": x}))
        restore = timed(put_back)
    print(f"Python overhead per probe pass: the adapter's call {(wrapped - bare) * 1e6:.0f} us over a bare module call "
          f"({bare * 1e6:.0f} us), the state put back ({len(state)} items) {restore * 1e6:.0f} us: "
          f"{(wrapped - bare + restore) * 1e3:.2f} ms in all")


if __name__ == "__main__":
    main()
