#!/usr/bin/python3
"""Every case of the audit suites through two audit configurations, side by side: the facts an
audit reports (verdict, horizons per mode and length, the leak map, max effects, length / batch /
past-horizon results, every violation and its evidence) must be identical; seconds and probes may
differ and are printed: a faster audit must keep identical verdicts and evidence.

  scripts/audit-compare.py A_BIN B_BIN [--a-args=...] [--b-args=...] [--suites a.json,...] [--facts f1,f2,...]
  scripts/audit-compare.py build/grassaudit build/grassaudit --a-args=--no-train-proof

--whole compares every field of the JSON but what the audit spent (seconds, seconds_by_check, and
forwards: the passes it ran, printed as forward-equivalents): what a change that only moves code
or saves time must leave as it was, probe counts and notes included.
--added 'KEY=JSON;...' names fields only B writes (a new field) and the value B must write where A
has none: e.g. --added 'discrete_routing=null;horizon_bound="exact"'.
--explains KEY,... names fields only B writes that explain a verdict without changing it (e.g.
leak_sites): set aside, at the top and in each of `outputs`, whatever B writes there.
--same-forwards also compares the forwards (every pass, by check and dtype), except on the cases
where B reports discrete routing: what the routing search may add to.
--summary also compares the text summary, line for line (the headline's seconds aside): what a
change that moves the summary's code must leave as it was.

Refused cases are compared by their exit status and first line. Exit 0: every case identical."""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

SUITES = ["audits/controls.json", "audits/signature.json", "audits/torch2.json", "audits/incremental.json",
          "audits/soundness.json"]
NUM = re.compile(r"[0-9][0-9.e+-]*")
SECONDS = re.compile(r"[0-9]+\.[0-9]+ s\b")  # the headline's seconds: the summary's only timing
# What an audit says about the model (not how long it took or how many rows it ran).
FACTS = ["verdict", "leak_horizon", "max_effect", "first_leaking_cut", "modes", "seq_lens", "rounding_only",
         "precision", "max_effect_float32", "threshold", "precision_floor", "vacuous", "past_effect",
         "mode_horizons", "length_horizons", "gradient_check", "leak_map", "contract", "contract_holds",
         "length_dependent", "length_evidence", "batch_coupled", "batch_evidence", "past_horizon", "violations",
         "incremental", "outputs", "worst_output"]


# What an audit spent, not what it found.
COSTS = {"seconds", "seconds_by_check", "forwards"}


def forward_equivalents(j):
    f = j.get("forwards") or {}
    return f"{f['forward_equivalents']:.1f}fe" if f.get("forward_equivalents") is not None else "-"


def case_args(suite_dir, c):
    args = ["--model", os.path.join(suite_dir, c["model"]), "--seq-len", str(c["seq_len"])]
    for i in c.get("inputs", [c.get("input")]):
        args += ["--input", i]
    if "time_axis" in c:
        args += ["--time-axis", str(c["time_axis"])]
    if "output" in c:
        args += ["--output", c["output"]]
    if "seq_lens" in c:
        args += ["--seq-lens", ",".join(str(x) for x in c["seq_lens"])]
    args += ["--mode", c.get("mode", "both")]
    k = c.get("contract", {})
    if "lookahead" in k:
        args += ["--allow-lookahead", str(k["lookahead"])]
    if "window" in k:
        args += ["--window", str(k["window"])]
    for st in c.get("state", []):
        args += ["--state", st]
    if "state_init" in c:
        args += ["--state-init", os.path.join(suite_dir, c["state_init"])]
    if c.get("incremental"):
        args += ["--incremental"]
    if c.get("gradient_check") is False:
        args += ["--no-gradient-check"]
    if c.get("weights_as_given"):
        args += ["--weights-as-given"]
    return args


def flat(j, prefix=""):
    """A nested JSON object as {"a.b.c": value}."""
    out = {}
    for k, v in j.items():
        if isinstance(v, dict):
            out.update(flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def forwards_off(ja, jb):
    """The forwards' entries that differ, as "key a/b"."""
    fa, fb = flat(ja.get("forwards") or {}), flat(jb.get("forwards") or {})
    return [f"{k} {fa.get(k)}/{fb.get(k)}" for k in sorted(set(fa) | set(fb)) if fa.get(k) != fb.get(k)]


def run(binary, args, extra):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    p = subprocess.run([binary, "audit", *args, *extra, "--json", out], capture_output=True, text=True)
    try:
        j = json.load(open(out)) if os.path.getsize(out) > 0 else None
    except (OSError, ValueError):
        j = None
    os.unlink(out)
    first = (p.stderr.strip().splitlines() or [""])[0]
    return p.returncode, j, first, SECONDS.sub("# s", p.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--a-args", default="")
    ap.add_argument("--b-args", default="")
    ap.add_argument("--suites", default=",".join(SUITES))
    ap.add_argument("--facts", default=",".join(FACTS),
                    help="the JSON fields compared (e.g. without the fields an older binary lacks)")
    ap.add_argument("--whole", action="store_true", help="compare every field but the timings")
    ap.add_argument("--added", default="", help="KEY=JSON;...: fields only B writes, and their value")
    ap.add_argument("--explains", default="", help="KEY,...: fields only B writes that explain, set aside")
    ap.add_argument("--summary", action="store_true",
                    help="the text summary must be identical too (the headline's seconds aside)")
    ap.add_argument("--same-forwards", action="store_true",
                    help="the forwards must be identical where B reports no discrete routing")
    o = ap.parse_args()
    added = {}
    for item in filter(None, o.added.split(";")):
        key, _, value = item.partition("=")
        added[key] = json.loads(value)
    facts = o.facts.split(",")
    differ = 0
    total_a = total_b = 0.0
    for suite in o.suites.split(","):
        s = json.load(open(suite))
        d = os.path.dirname(suite)
        for c in s["cases"]:
            args = case_args(d, c)
            rc_a, ja, ea, text_a = run(o.a, args, shlex.split(o.a_args))
            rc_b, jb, eb, text_b = run(o.b, args, shlex.split(o.b_args))
            if ja is None or jb is None:
                # A refusal: its reason, without the numbers (noise refused in eval mode moves by
                # whatever the unseeded RNG drew).
                same = rc_a == rc_b and (ja is None) == (jb is None) and NUM.sub("#", ea) == NUM.sub("#", eb)
                what = f"exit {rc_a}/{rc_b}: {ea if same else ea + ' | ' + eb}"
            else:
                for j in (ja, jb):
                    if isinstance(j.get("incremental"), dict):
                        j["incremental"].pop("seconds", None)
                # A field inside gradient_check that only one binary writes (the mode, added later)
                # says how, not what: compared only when both have it.
                ga, gb = ja.get("gradient_check"), jb.get("gradient_check")
                if isinstance(ga, dict) and isinstance(gb, dict):
                    for k in set(ga) ^ set(gb):
                        ga.pop(k, None)
                        gb.pop(k, None)
                # thread_dependent names fields: a set, whatever order a binary lists it in.
                for j in (ja, jb):
                    if isinstance(j.get("thread_dependent"), list):
                        j["thread_dependent"] = sorted(j["thread_dependent"])
                for key in filter(None, o.explains.split(",")):  # only B explains: set aside
                    if key not in ja:
                        jb.pop(key, None)
                        for out_a, out_b in zip(ja.get("outputs") or [], jb.get("outputs") or []):
                            if isinstance(out_a, dict) and isinstance(out_b, dict) and key not in out_a:
                                out_b.pop(key, None)
                for key, value in added.items():  # a new field: B's value is the neutral one, or it differs
                    if key not in ja and key in jb:
                        ja[key] = value
                keys = sorted((set(ja) | set(jb)) - COSTS) if o.whole else facts
                off = [k for k in keys if ja.get(k) != jb.get(k)]
                if o.same_forwards and jb.get("discrete_routing") is None and ja.get("forwards") != jb.get("forwards"):
                    off.append("forwards: " + ", ".join(forwards_off(ja, jb)))
                if o.summary and text_a != text_b:
                    off.append("summary")
                same = rc_a == rc_b and not off
                sa, sb = ja["seconds"], jb["seconds"]
                total_a += sa
                total_b += sb
                proof = (jb.get("train_mode_proof") or {}).get("train_from_eval")
                what = (f"{jb['verdict']} h{jb['leak_horizon']} {sa:.2f}s/{sb:.2f}s probes {ja['probes']}/{jb['probes']} "
                        f"{forward_equivalents(ja)}/{forward_equivalents(jb)}"
                        f"{' train=eval' if proof else ''}" + ("" if same else f" DIFFER: {off} exit {rc_a}/{rc_b}"))
            differ += 0 if same else 1
            print(f"{os.path.basename(suite):<18} {c['name']:<40} {'same' if same else 'DIFFERENT'}  {what}", flush=True)
    print(f"{differ} case(s) differ; audit seconds {total_a:.1f} (a) vs {total_b:.1f} (b)")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
