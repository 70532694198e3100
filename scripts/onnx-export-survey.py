#!/usr/bin/python3
"""Audits every ONNX file reference/survey_onnx_exports.py wrote and tallies what the reader
refuses, by the first words of its one-line error.

    python3 scripts/onnx-export-survey.py OUT_DIR [--grassaudit build/grassaudit] [--markdown]

Each file is audited as its suite case is (its inputs, length, time axis; every output leaf), eval mode, one
trial, no property search: what is surveyed is whether the reader runs the file, not the verdict.
Exit 0 always (a survey); the last line counts the files run and refused.
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir")
    ap.add_argument("--grassaudit", default="build/grassaudit")
    ap.add_argument("--markdown", action="store_true", help="the refusals as a Markdown table")
    a = ap.parse_args()
    survey = json.load(open(os.path.join(a.out_dir, "survey.json")))
    ran, refused, not_exported = 0, collections.defaultdict(list), collections.defaultdict(list)
    for m in survey["models"]:
        if "file" not in m:
            not_exported[m["export_error"][:90]].append(m["model"])
            continue
        cmd = [a.grassaudit, "audit", "--model", os.path.join(a.out_dir, m["file"]), "--seq-len", str(m["seq_len"]),
               "--mode", "eval", "--trials", "1"]
        for spec in m["inputs"]:
            cmd += ["--input", spec]
        if m.get("time_axis", 1) != 1:
            cmd += ["--time-axis", str(m["time_axis"])]
        # No --output: the exporter flattens a tuple or dict into outputs named its own way (a
        # suite case's TorchScript path such as [0] names nothing there); every leaf is audited.
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode in (0, 1):
            ran += 1
            continue
        line = (p.stderr.strip().splitlines() or ["(no message)"])[-1]
        # The reason without the file's path and the node's name: refusals of one kind group.
        why = re.sub(r"^grassaudit audit: error: (onnx )?\S+( \([^)]*\))?: ", "", line)
        why = re.sub(r"node \d+ '[^']*' ", "node ", why)
        refused[why[:160]].append(m["model"])
    if a.markdown:
        print("| refused with | files |")
        print("|---|---|")
        for why, models in sorted(refused.items(), key=lambda kv: -len(kv[1])):
            print(f"| {why} | {len(models)}: {', '.join(os.path.basename(x) for x in models[:4])}"
                  f"{', ...' if len(models) > 4 else ''} |")
    else:
        for why, models in sorted(refused.items(), key=lambda kv: -len(kv[1])):
            print(f"refused ({len(models)}): {why}\n    {' '.join(models)}")
        for why, models in sorted(not_exported.items(), key=lambda kv: -len(kv[1])):
            print(f"not exported by PyTorch ({len(models)}): {why}\n    {' '.join(models)}")
    n_refused = sum(len(v) for v in refused.values())
    n_unexported = sum(len(v) for v in not_exported.values())
    print(f"{ran} run, {n_refused} refused, {n_unexported} the exporter did not write "
          f"(PyTorch {survey['torch']}, opset {survey['opset']})")
    sys.exit(0)


if __name__ == "__main__":
    main()
