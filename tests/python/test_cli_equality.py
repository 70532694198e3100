"""The report is the CLI's: to_dict() equals `grassaudit audit --json` and str(report) its stdout,
on the same model saved as TorchScript, at the same thread count (1 and 2: equal JSON is a claim
about one machine at one thread count; across thread counts, test_thread_counts_agree_on_decisions).
Equal bits need the same arithmetic on both sides: the same torch and BLAS (the `cli` fixture
skips otherwise), both thread pools at the same count (threads=N sets OpenBLAS's as --threads N
does), and the same OpenBLAS kernel family (conftest.cli_env: the CLI would otherwise pick a
better one than this process runs on a CPU that OpenBLAS under-detects).

Compared field for field except what names the target or measures wall time: `format`
("nn.Module" here, "torchscript" there), `target` (the module's class here, the file's path
there), `seconds` and `seconds_by_check`. The train-mode proof is compared too: the package reads
it from the graph torch.jit.script makes of the live module, the same graph the file holds. A
module that does not script has no proof (null), and its train mode is probed on its own."""
import json
import re
import subprocess
from typing import Dict, Tuple

import pytest
import torch
import torch.nn as nn

import grassaudit
from conftest import cli_env
import make_audit_controls as controls

UNCOMPARED = ("format", "target", "seconds", "seconds_by_check")
THREADS = [1, 2]


def run_cli(cli, path, seq_len, inputs, json_path, threads, *flags):
    cmd = [cli, "audit", "--model", str(path), "--seq-len", str(seq_len), "--threads", str(threads),
           "--json", str(json_path), *flags]
    for i in inputs:
        cmd += ["--input", i]
    return subprocess.run(cmd, capture_output=True, text=True, env=cli_env(threads))


def comparable(d: Dict) -> Dict:
    return {k: v for k, v in d.items() if k not in UNCOMPARED}


def comparable_summary(text: str) -> str:
    # The first line names the target ("TorchScript PATH (" / "nn.Module CLASS (") and the wall
    # time ("..., 0.20 s)").
    first, _, rest = text.partition("\n")
    first = re.sub(r"^(TorchScript \S+|nn\.Module \S+) \(", "TARGET (", first)
    first = re.sub(r", [0-9.]+ s\)", ")", first)
    return first + "\n" + rest


class TwoInputTuple(nn.Module):
    """Two features inputs, a tuple output with a leaky and a causal leaf and a skipped one."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(3, 5)
        self.b = nn.Linear(2, 5)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        h = self.a(x) + self.b(y)
        causal = torch.cumsum(h, dim=1)
        leaky = h + 0.5 * torch.roll(h, -2, dims=1)
        return causal, leaky, h.mean(dim=1)


class DictOut(nn.Module):
    """Tokens in, a dict out: the leaves are named ["logits"] and ["hidden"]."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(30, 8)
        self.head = nn.Linear(8, 30)

    def forward(self, ids: torch.Tensor) -> Dict[str, torch.Tensor]:
        h = self.emb(ids)
        h = h + torch.nn.functional.pad(h, [0, 0, 1, 0])[:, :-1]  # x_{t-1}: causal
        return {"logits": self.head(h), "hidden": h}


def conv_symmetric():
    case = next(c for c in controls.CASES if c["name"] == "conv-symmetric-padding")
    torch.manual_seed(case["seed"])
    return case["build"]().eval(), [case["input"]], case["seq_len"]


def two_input_tuple():
    torch.manual_seed(5)
    return TwoInputTuple().eval(), ["features:3", "y=features:2"], 16


def dict_out():
    torch.manual_seed(6)
    return DictOut().eval(), ["tokens:30"], 12


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("make", [conv_symmetric, two_input_tuple, dict_out])
def test_report_equals_cli(make, threads, cli, tmp_path):
    model, inputs, seq_len = make()
    path = tmp_path / "model.pt"
    torch.jit.script(model).save(str(path))
    report = grassaudit.audit(model, inputs=inputs, seq_len=seq_len, threads=threads)

    done = run_cli(cli, path, seq_len, inputs, tmp_path / "cli.json", threads)
    assert done.returncode == (0 if report.causal else 1), done.stderr
    expected = json.loads((tmp_path / "cli.json").read_text())

    got = report.to_dict()
    assert got["format"] == "nn.Module" and expected["format"] == "torchscript"
    assert comparable(got) == comparable(expected)
    assert comparable_summary(str(report)) == comparable_summary(done.stdout)
    assert str(report).startswith(f"nn.Module {type(model).__name__} (")


@pytest.mark.parametrize("make", [conv_symmetric, two_input_tuple])
def test_no_train_proof_equals_cli(make, cli, tmp_path):
    model, inputs, seq_len = make()
    path = tmp_path / "model.pt"
    torch.jit.script(model).save(str(path))
    report = grassaudit.audit(model, inputs=inputs, seq_len=seq_len, no_train_proof=True, mode="both", batch=8,
                              threads=1)
    run_cli(cli, path, seq_len, inputs, tmp_path / "cli.json", 1, "--no-train-proof", "--mode", "both", "--batch", "8")
    assert comparable(report.to_dict()) == comparable(json.loads((tmp_path / "cli.json").read_text()))


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("make", [conv_symmetric, dict_out])
def test_property_search_equals_cli(make, threads, cli, tmp_path):
    """property=N runs the CLI's RapidCheck search (the package's own runner module): the same
    cases, the same minimal counterexample (a leaky model) or none (a causal one)."""
    model, inputs, seq_len = make()
    path = tmp_path / "model.pt"
    torch.jit.script(model).save(str(path))
    report = grassaudit.audit(model, inputs=inputs, seq_len=seq_len, property=20, threads=threads)
    run_cli(cli, path, seq_len, inputs, tmp_path / "cli.json", threads, "--property", "20")
    got, expected = report.to_dict(), json.loads((tmp_path / "cli.json").read_text())
    assert comparable(got) == comparable(expected)
    if report.causal:
        assert got["counterexample"] is None
        assert "property search: 20 cases passed (float64)" in got["notes"]
    else:
        assert got["counterexample"]["cut"] >= 1 and got["counterexample"]["cases"] == 20


class Unscriptable(nn.Module):
    """Python TorchScript does not compile (a generator expression): no graph, no proof."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return sum(torch.cumsum(self.lin(x), dim=1) * k for k in (1.0, 2.0))


def test_unscriptable_module_probes_train_mode():
    report = grassaudit.audit(Unscriptable(), inputs="features:4", seq_len=8)
    got = report.to_dict()
    assert report.causal and got["train_mode_proof"] is None
    assert set(got["mode_horizons"]) == {"eval", "train"}


class AsksIfScripted(nn.Module):
    """Code that branches on torch.jit.is_scripting(): the scripted graph is not what eager runs
    (here eager reads `training`, the graph does not), so there is no proof."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        h = torch.cumsum(self.lin(x), dim=1)
        if not torch.jit.is_scripting() and self.training:
            h = h + torch.roll(h, -1, dims=1)  # a train-only leak eager takes and the graph does not
        return h


def test_code_that_asks_if_scripted_gets_no_proof():
    report = grassaudit.audit(AsksIfScripted(), inputs="features:4", seq_len=8)
    got = report.to_dict()
    assert got["train_mode_proof"] is None
    assert not report.causal and got["mode_horizons"] == {"eval": 0, "train": 1}


def decisions(d: Dict) -> Dict:
    """What the audit decided, without the measured magnitudes the JSON lists as
    thread_dependent (and without the costs)."""
    out = {k: v for k, v in d.items() if k not in UNCOMPARED + ("forwards", "threads", "thread_dependent")}
    for k in ("max_effect", "max_effect_float32", "past_effect", "leak_map", "effect_at_horizon",
              "effect_beyond_horizon", "threshold", "precision_floor", "gradient_check", "length_evidence",
              "batch_evidence", "length_profile", "batch_profile", "notes"):
        out.pop(k, None)
    out["violations"] = [{k: v for k, v in x.items() if k != "evidence"} for x in d["violations"]]
    out["outputs"] = [{k: v for k, v in o.items() if k != "max_effect"} for o in d["outputs"]]
    out["floor_measured"] = d["precision_floor"] is not None
    out["gradient_verdict"] = (d["gradient_check"] or {}).get("verdict")
    return out


@pytest.mark.parametrize("make", [conv_symmetric, two_input_tuple, dict_out])
def test_thread_counts_agree_on_decisions(make):
    """At 1 and 2 threads the same decisions (verdict, horizons, violations, the precision that
    decided, whether a floor was measured); the measured magnitudes may differ in the last bits
    (a GEMM rounds a row differently in another thread split), so they are compared to 1e-6 of
    the output scale (they are relative to it: one float32 ulp of the scale is 6e-8, so 1e-6 is
    about 16 of them), far below any threshold a decision is made against."""
    model, inputs, seq_len = make()
    one = grassaudit.audit(model, inputs=inputs, seq_len=seq_len, threads=1).to_dict()
    two = grassaudit.audit(model, inputs=inputs, seq_len=seq_len, threads=2).to_dict()
    assert one["threads"] == 1 and two["threads"] == 2
    assert "past_effect" in one["thread_dependent"]
    assert decisions(one) == decisions(two)
    # max_effect is decided in float64 where anything moved (then ~1e-15 on a causal model): its own
    # tolerance; the float32 effects to 1e-6 of the output scale.
    assert one["max_effect"] == pytest.approx(two["max_effect"], rel=1e-6, abs=1e-12)
    for k in ("max_effect_float32", "past_effect"):
        assert one[k] == pytest.approx(two[k], rel=1e-6, abs=1e-6), k
    # 100 x a measured rounding floor: rounding noise, whose size (not its bits) is the model's.
    assert (one["threshold"] == 0) == (two["threshold"] == 0)
    if one["threshold"]:
        assert 0.25 < one["threshold"] / two["threshold"] < 4
