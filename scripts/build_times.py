#!/usr/bin/env python3
"""Where a build's time went, by target, from ninja's log of the last build of each output.

    scripts/build_times.py build/.ninja_log [N]

Prints the wall time from the first step to the last, the compile time summed over every step (on 2
cores about twice the wall time), the N targets (default 12) that took the most, and the N slowest
steps. Run it after a clean build: an incremental one logs only what it rebuilt.
"""
import collections
import sys


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    top = int(sys.argv[2]) if len(sys.argv) == 3 else 12
    steps = {}  # output -> (start ms, end ms): a later line for an output replaces the earlier
    with open(sys.argv[1], encoding="utf-8") as log:
        for line in log:
            if line.startswith("#"):
                continue
            start, end, _, output, _ = line.rstrip("\n").split("\t")
            steps[output] = (int(start), int(end))
    if not steps:
        sys.exit(f"{sys.argv[1]}: no steps")
    first = min(s for s, _ in steps.values())
    last = max(e for _, e in steps.values())
    total = sum(e - s for s, e in steps.values()) / 1000
    print(f"{len(steps)} steps: {(last - first) / 1000:.0f} s from first to last, "
          f"{total:.0f} s of work")
    by_target = collections.Counter()
    for output, (start, end) in steps.items():
        target = output.split(".dir/")[0] if ".dir/" in output else "linking and generated files"
        by_target[target.replace("CMakeFiles/", "")] += (end - start) / 1000
    print("by target:")
    for target, seconds in by_target.most_common(top):
        print(f"  {seconds:7.1f} s  {target}")
    print("slowest steps:")
    for output, (start, end) in sorted(steps.items(), key=lambda kv: kv[1][0] - kv[1][1])[:top]:
        print(f"  {(end - start) / 1000:7.1f} s  {output}")


if __name__ == "__main__":
    main()
