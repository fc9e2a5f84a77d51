#!/usr/bin/env python3
"""Prints the slowest tests of a CTest run and warns about each test past its budget.

    scripts/test_times.py build/ctest-junit.xml tests/test-budgets.txt

The budgets file holds lines "SECONDS PATTERN" (a shell-style pattern over the CTest name; the first
pattern that matches applies). A test past its budget is a warning, never a failure: speed is
measured by the benchmarks, and a test's time on a loaded 2-core machine says little. What to do
about one is in docs/testing.md.
"""
import fnmatch
import sys
import xml.etree.ElementTree as ET


def budgets(path):
    out = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            seconds, _, pattern = line.partition(" ")
            try:
                out.append((pattern.strip(), float(seconds)))
            except ValueError:
                sys.exit(f"{path}:{number}: expected 'SECONDS PATTERN', got '{line}'")
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    cases = []
    for case in ET.parse(sys.argv[1]).getroot().iter("testcase"):
        cases.append((float(case.get("time", "0")), case.get("name", "?")))
    limits = budgets(sys.argv[2])
    cases.sort(reverse=True)
    total = sum(t for t, _ in cases)
    print(f"test.sh: {len(cases)} tests, {total:.0f} s of test time; the slowest:")
    for t, name in cases[:8]:
        print(f"  {t:7.1f} s  {name}")
    for t, name in cases:
        budget = next((b for p, b in limits if fnmatch.fnmatchcase(name, p)), None)
        if budget is not None and t > budget:
            print(f"test.sh: warning: {name} took {t:.0f} s, past its budget of {budget:.0f} s "
                  f"(tests/test-budgets.txt, docs/testing.md)")


if __name__ == "__main__":
    main()
