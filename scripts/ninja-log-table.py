"""Summarises a ninja log (.ninja_log, v5): the units compiled, seconds per library, the ten slowest.
   python3 scripts/ninja-log-table.py build/.ninja_log [WALL_SECONDS CPU_NAME JOBS]
A library is the CMake target whose folder holds the object (src/CMakeFiles/grassaudit_core.dir/...:
grassaudit_core); precompiled headers count as units of their donor target."""
import re
import sys
from collections import defaultdict


def units(path):
    latest = {}
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                continue
            start, end, _, out, _ = line.rstrip("\n").split("\t")
            if out.endswith((".o", ".gch")):
                latest[out] = (int(end) - int(start)) / 1000.0  # the last build of each output
    return latest


def library(out):
    m = re.search(r"CMakeFiles/([^/]+)\.dir/", out)
    return m.group(1) if m else "(other)"


def main():
    log = units(sys.argv[1])
    wall = sys.argv[2] if len(sys.argv) > 2 else None
    cpu = sys.argv[3] if len(sys.argv) > 3 else None
    jobs = sys.argv[4] if len(sys.argv) > 4 else None
    per = defaultdict(lambda: [0, 0.0])
    for out, sec in log.items():
        per[library(out)][0] += 1
        per[library(out)][1] += sec
    total = sum(log.values())
    if cpu:
        print(f"CPU: {cpu}, {jobs} jobs")
    print(f"{len(log)} units, {total:.0f} s of unit time" + (f", {wall} s wall" if wall else ""))
    print()
    print("| library | units | seconds |")
    print("|---|---:|---:|")
    for lib, (n, sec) in sorted(per.items(), key=lambda kv: -kv[1][1]):
        print(f"| {lib} | {n} | {sec:.1f} |")
    print()
    print("| slowest units | seconds |")
    print("|---|---:|")
    for out, sec in sorted(log.items(), key=lambda kv: -kv[1])[:10]:
        name = re.sub(r".*CMakeFiles/[^/]+\.dir/", "", out)
        print(f"| {library(out)}: {name} | {sec:.1f} |")


if __name__ == "__main__":
    main()
