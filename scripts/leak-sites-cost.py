#!/usr/bin/python3
"""What naming the leak sites costs, beside the audit before it, on every leaky case of the suites:
each case is audited once (its suite's settings, as scripts/audit-compare.py runs it), and the
localise check's forwards (forward-equivalents of the audited shape) and seconds are set beside
the sum of every other check's. The localisation must cost no more than the audit it explains.

  scripts/leak-sites-cost.py build/grassaudit [--suites audits/controls.json,...]

Prints a row per case that names sites (or says why not) and the largest ratios; exit 1 when a
case's localisation ran more forwards than the rest of its audit."""
import argparse
import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("audit_compare", os.path.join(HERE, "audit-compare.py"))
compare = importlib.util.module_from_spec(spec)
spec.loader.exec_module(compare)

SUITES = ["audits/controls.json", "audits/layers.json", "audits/soundness.json", "audits/export.json",
          "audits/onnx.json", "audits/routing.json"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--suites", default=",".join(SUITES))
    o = ap.parse_args()
    import json
    worst_fe, worst_s, over, rows = 0.0, 0.0, [], 0
    print(f"{'case':44s} {'sites':28s} {'localise fe':>11s} {'audit fe':>9s} {'ratio':>6s} {'s ratio':>7s}")
    for suite in o.suites.split(","):
        d = json.load(open(suite))
        for c in d["cases"]:
            if c.get("expect", {}).get("verdict") != "leaky":
                continue
            rc, j, first, _ = compare.run(o.binary, compare.case_args(os.path.dirname(suite), c), [])
            if j is None or "localise" not in (j.get("forwards") or {}).get("by_check", {}):
                continue  # no future violation: nothing localised
            by = j["forwards"]["by_check"]
            loc = by["localise"]["forward_equivalents"]
            rest = sum(v["forward_equivalents"] for k, v in by.items() if k != "localise")
            sec = j.get("seconds_by_check", {})
            s_loc = sec.get("localise", 0.0)
            s_rest = sum(v for k, v in sec.items() if k != "localise")
            sites = j.get("leak_sites")
            named = ",".join(s["path"] or '""' for s in sites) if sites else ("none" if sites == [] else "-")
            ratio, s_ratio = loc / rest if rest else float("inf"), s_loc / s_rest if s_rest else float("inf")
            worst_fe, worst_s, rows = max(worst_fe, ratio), max(worst_s, s_ratio), rows + 1
            if ratio > 1:
                over.append(c["name"])
            print(f"{os.path.basename(suite)[:-5] + ':' + c['name']:44.44s} {named:28.28s} {loc:11.1f} {rest:9.1f} "
                  f"{ratio:6.2f} {s_ratio:7.2f}")
    print(f"{rows} leaky cases localised; largest localise/audit: forwards {worst_fe:.2f}, seconds {worst_s:.2f}")
    if over:
        print("more forwards than the audit: " + ", ".join(over))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
