#!/usr/bin/python3
"""Compare two `hintstream whatif --json` reports field for field.

Timings (elapsed_s, requests_per_s) are left out; every other leaf must
be equal. Fields only the second report has are listed, not counted as
differences: --json grows by new fields only.

    scripts/whatif-json-diff.py before.json after.json
"""
import json
import sys

TIMINGS = {"elapsed_s", "requests_per_s"}


def walk(a, b, path, out):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in a:
            if k in TIMINGS:
                continue
            if k not in b:
                out["missing"].append(path + "." + k)
            else:
                walk(a[k], b[k], path + "." + k, out)
        out["added"].extend(path + "." + k for k in b if k not in a)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out["diff"].append(f"{path}: {len(a)} items, then {len(b)}")
        for i, (x, y) in enumerate(zip(a, b)):
            walk(x, y, f"{path}[{i}]", out)
    else:
        out["leaves"] += 1
        if a != b:
            out["diff"].append(f"{path}: {a!r} then {b!r}")


def main():
    a, b = (json.load(open(p)) for p in sys.argv[1:3])
    out = {"missing": [], "added": [], "diff": [], "leaves": 0}
    walk(a, b, "", out)
    for k in ("missing", "diff"):
        for line in out[k]:
            print(k, line)
    print(f"{out['leaves']} fields compared, {len(out['diff'])} differ, "
          f"{len(out['missing'])} missing, {len(out['added'])} added")
    sys.exit(1 if out["diff"] or out["missing"] else 0)


if __name__ == "__main__":
    main()
