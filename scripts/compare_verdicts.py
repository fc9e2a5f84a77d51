#!/usr/bin/env python3
"""Compares the per-rule verdicts of `unity rules verify --json` reports: verdict, detail, proved scope
and concrete cases must be identical for every rule (seconds may differ).

    scripts/compare_verdicts.py BASE.json OTHER.json...

Exit 0 when every report holds the same rules as BASE, each with the same verdict, and none failed."""
import json, sys
reports = [json.load(open(p)) for p in sys.argv[1:]]
def key(r): return (r["verdict"], r["detail"], json.dumps(r["proved"], sort_keys=True), r["concrete_cases"])
base = {r["rule"]: key(r) for r in reports[0]["rules"]}
ok = True
for path, rep in zip(sys.argv[2:], reports[1:]):
    other = {r["rule"]: key(r) for r in rep["rules"]}
    if set(other) != set(base):
        print(f"{path}: other rules"); ok = False
    diff = [n for n in base if n in other and other[n] != base[n]]
    for n in diff: print(f"{path}: {n}: {base[n]} vs {other[n]}")
    print(f"{path}: {len(other)} rules, {len(diff)} differ from {sys.argv[1]}; failed {rep['failed']}, proved now {rep['proved']}")
    ok = ok and not diff and rep["failed"] == 0
sys.exit(0 if ok else 1)
