#!/usr/bin/python3
"""What PyTorch's ONNX exporter writes for the architectures the audit suites hold, and what of it
the ONNX reader refuses (src/formats/onnx/README.md, "What exporters write").

Run with PyTorch 2.6 (Debian 13's, in the root of scripts/debian13-root.sh):
    bash scripts/test-debian13.sh --run python3 reference/survey_onnx_exports.py OUT_DIR
then audit every file it wrote with the host build:
    python3 scripts/onnx-export-survey.py OUT_DIR

Every TorchScript model of audits/{controls,signature,soundness,layers,torch2,incremental}.json is
loaded (torch.jit.load) and exported with torch.onnx.export(dynamo=False, opset 17: the
TorchScript-based exporter, the one that takes ScriptModules), batch and time dynamic, on the
suite case's inputs. OUT_DIR/survey.json lists per model: the file written or the exporter's own
error (its first line), and the audit arguments (inputs, seq_len, time axis, output).
"""
import json
import os
import sys
import warnings

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
AUDITS = os.path.join(ROOT, "audits")
SUITES = ["controls", "signature", "soundness", "layers", "torch2", "incremental"]
OPSET = 17


def example(spec: str, B: int, L: int, time_axis: int, gen: torch.Generator) -> torch.Tensor:
    kind = spec.split("=")[-1]
    if kind.startswith("tokens:"):
        return torch.randint(0, int(kind.split(":")[1]), (B, L), generator=gen)
    if kind.startswith("features:"):
        C = int(kind.split(":")[1])
        return torch.randn((B, C, L) if time_axis == 2 else (B, L, C), generator=gen)
    if kind == "ones":
        return torch.ones(B, L, dtype=torch.int64)
    if kind == "zeros":
        return torch.zeros(B, L, dtype=torch.int64)
    if kind.startswith("const:"):
        return torch.tensor(float(kind.split(":")[1]))
    raise ValueError(f"input spec {spec}")


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: survey_onnx_exports.py OUT_DIR")
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")
    seen, rows = set(), []
    for suite in SUITES:
        for case in json.load(open(os.path.join(AUDITS, suite + ".json")))["cases"]:
            model = case["model"]
            if model in seen or not model.endswith(".pt"):
                continue
            seen.add(model)
            specs = case.get("inputs") or [case["input"]]
            time_axis = case.get("time_axis", 1)
            L = case.get("seq_len", 16)
            row = {"suite": suite, "model": model, "inputs": specs, "seq_len": L, "time_axis": time_axis,
                   "output": case.get("output")}
            name = suite + "__" + os.path.splitext(os.path.basename(model))[0] + ".onnx"
            try:
                m = torch.jit.load(os.path.join(AUDITS, model)).eval()
                gen = torch.Generator().manual_seed(0)
                args = tuple(example(s, 2, L, time_axis, gen) for s in specs)
                names = [s.split("=")[0] if "=" in s else f"in{i}" for i, s in enumerate(specs)]
                axes = {n: ({0: "batch", time_axis: "seq"} if a.dim() >= 2 else {}) for n, a in zip(names, args)}
                torch.onnx.export(m, args, os.path.join(out_dir, name), dynamo=False, opset_version=OPSET,
                                  input_names=names, dynamic_axes=axes)
                row["file"] = name
            except Exception as e:  # the exporter's refusal: recorded, not ours to fix
                row["export_error"] = (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
            rows.append(row)
            print(f"{model:60s} {'exported' if 'file' in row else 'export failed: ' + row['export_error'][:80]}")
    with open(os.path.join(out_dir, "survey.json"), "w") as f:
        json.dump({"torch": torch.__version__, "opset": OPSET, "models": rows}, f, indent=1)
    print(f"{sum('file' in r for r in rows)} of {len(rows)} exported to {out_dir}")


if __name__ == "__main__":
    main()
