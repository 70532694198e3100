"""scripts/check-unity-names.py on batches written here: every kind of clash is found and named,
and a batch without one passes. Run by ctest (unity_names_check)."""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "scripts", "check-unity-names.py")
FIX = os.path.join(HERE, "fixtures", "unity")


def check(*files):
    with tempfile.TemporaryDirectory() as build:
        os.makedirs(os.path.join(build, "lib.dir", "Unity"))
        with open(os.path.join(build, "lib.dir", "Unity", "unity_0_cxx.cxx"), "w") as f:
            for name in files:
                f.write('#include "%s"\n' % os.path.join(FIX, name))
        r = subprocess.run([sys.executable, SCRIPT, build], capture_output=True, text=True)
        return r.returncode, r.stderr


def main():
    failures = []
    code, err = check("clash_a.cpp", "clash_b.cpp")
    if code != 1:
        failures.append(f"a clashing batch: exit {code}, want 1")
    for needle in ("scale: internal to both", "op_identity: internal to both", "TWICE: a macro of",
                   "`using namespace std` at namespace scope"):
        if needle not in err:
            failures.append(f"a clashing batch: no line with {needle!r} in:\n{err}")
    code, err = check("clash_a.cpp", "clean_b.cpp")
    if code != 0:
        failures.append(f"a batch without clashes: exit {code}, want 0:\n{err}")
    code, err = check("gtest_a.cpp", "gtest_b.cpp")
    if code != 0:
        failures.append(f"one suite over two files, members named alike: exit {code}, want 0:\n{err}")
    code, err = check("gtest_a.cpp", "gtest_clash_b.cpp")
    if code != 1:
        failures.append(f"a repeated test and a directive reaching global code: exit {code}, want 1")
    for needle in ("Shared_One_Test: internal to both", "`using namespace demo` at namespace scope"):
        if needle not in err:
            failures.append(f"a repeated test: no line with {needle!r} in:\n{err}")
    for f in failures:
        print(f)
    print("unity_names_check:", "FAILED" if failures else "passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
