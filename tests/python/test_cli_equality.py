"""The report is the CLI's: to_dict() equals `grassaudit audit --json` and str(report) its stdout,
on the same model saved as TorchScript.

Compared field for field except what names the target or measures wall time: `format`
("nn.Module" here, "torchscript" there), `target` (the module's class here, the file's path
there), `seconds`, `seconds_by_check`, and `train_mode_proof`: the CLI proves train mode equal to
eval mode from the TorchScript graph, and a live module has no graph to prove it from, so both
sides run with no_train_proof / --no-train-proof (train mode probed on its own) and the CLI's
record of the proof it was not asked to use is left out."""
import json
import re
import subprocess
from typing import Dict, Tuple

import pytest
import torch
import torch.nn as nn

import grassaudit
import make_audit_controls as controls

UNCOMPARED = ("format", "target", "seconds", "seconds_by_check", "train_mode_proof")


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


@pytest.mark.parametrize("make", [conv_symmetric, two_input_tuple, dict_out])
def test_report_equals_cli(make, cli, tmp_path):
    model, inputs, seq_len = make()
    path = tmp_path / "model.pt"
    torch.jit.script(model).save(str(path))
    report = grassaudit.audit(model, inputs=inputs, seq_len=seq_len, no_train_proof=True)

    cmd = [cli, "audit", "--model", str(path), "--seq-len", str(seq_len), "--no-train-proof",
           "--json", str(tmp_path / "cli.json")]
    for i in inputs:
        cmd += ["--input", i]
    done = subprocess.run(cmd, capture_output=True, text=True, env={"OMP_NUM_THREADS": "1"})
    assert done.returncode == (0 if report.causal else 1), done.stderr
    expected = json.loads((tmp_path / "cli.json").read_text())

    got = report.to_dict()
    assert got["format"] == "nn.Module" and expected["format"] == "torchscript"
    assert comparable(got) == comparable(expected)
    assert comparable_summary(str(report)) == comparable_summary(done.stdout)
    assert str(report).startswith(f"nn.Module {type(model).__name__} (")
