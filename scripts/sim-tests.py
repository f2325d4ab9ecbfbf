#!/usr/bin/python3
"""The tests make test's sim step runs: those whose case is cut under -race.

A test that reads internal/race's Enabled (in its own body) plays a small
case under -race and its full case without it; make test's race step
runs every test, and the sim step runs only these again, without -race,
so a test that is the same in both modes is not run twice.

    scripts/sim-tests.py             the -run pattern: ^(TestA|TestB)$
    scripts/sim-tests.py --packages  their packages, as ./dir paths
"""
import os
import re
import sys

FUNC = re.compile(r"^func (Test\w+)\(t \*testing\.T\) \{$", re.M)


def scan(root):
    found = {}
    for dirpath, dirnames, files in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and d not in ("testdata", "bin")]
        for f in files:
            if not f.endswith("_test.go"):
                continue
            src = open(os.path.join(dirpath, f), encoding="utf-8").read()
            heads = list(FUNC.finditer(src))
            for i, m in enumerate(heads):
                end = heads[i + 1].start() if i + 1 < len(heads) else len(src)
                # The body ends at the first top-level closing brace.
                body = src[m.end():end].split("\n}\n", 1)[0]
                if "race.Enabled" in body:
                    pkg = "./" + os.path.relpath(dirpath, root)
                    found.setdefault(pkg, []).append(m.group(1))
    return found


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    found = scan(root)
    if not found:
        sys.exit("sim-tests: no test reads race.Enabled")
    if sys.argv[1:] == ["--packages"]:
        print(" ".join(sorted(found)))
    else:
        names = sorted({n for ns in found.values() for n in ns})
        print("^(" + "|".join(names) + ")$")


if __name__ == "__main__":
    main()
