#!/usr/bin/python3
"""Is a change faster or slower? W1, W2 and W4 of two builds of models_benchmark, in turns.

On a shared machine a workload's time moves by 10-30% from one minute to the next, far more
than most changes move it, and PyTorch's time moves as much as ours: the ratios of make bench,
taken a few minutes apart, cannot show a change of a few percent. Here the two builds run one
after the other, PAIRS times (which goes first alternates), and each pair gives one ratio
new / old taken seconds apart; the median of those ratios is what a slow stretch of the machine
moves least. Below 1: the new build is faster. The yardsticks of make bench (PyTorch, OpenBLAS)
are the same programs for both builds, so a ratio to them changes by this factor.

    benchmarks/compare_builds.py OLD_BUILD NEW_BUILD [--pairs 12] [--threads 2]
        [--workloads W1,W2,W4]

OLD_BUILD and NEW_BUILD are bench build folders (cmake --preset bench), e.g. a worktree of the
commit before the change and this one.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys


def time_ms(binary, threads, workload):
    out = subprocess.run([binary, str(threads), workload], capture_output=True, text=True,
                         check=True).stdout
    m = re.search(r"\(ms\): ([\d.]+)", out)
    if not m:
        sys.exit(f"compare_builds: no time in the output of {binary} {threads} {workload}:\n{out}")
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old", help="the build folder before the change")
    ap.add_argument("new", help="the build folder after it")
    ap.add_argument("--pairs", type=int, default=12, help="runs of each build (default 12)")
    ap.add_argument("--threads", type=int, default=2, help="as make bench (default 2)")
    ap.add_argument("--workloads", default="W1,W2,W4")
    a = ap.parse_args()
    if a.pairs < 1:
        sys.exit(f"compare_builds: --pairs must be >= 1 (got {a.pairs})")
    workloads = a.workloads.split(",")
    unknown = [w for w in workloads if w not in ("W1", "W2", "W4")]
    if unknown:
        sys.exit(f"compare_builds: unknown workload(s) {', '.join(unknown)} (W1, W2, W4)")
    binaries = {}
    for side in ("old", "new"):
        b = os.path.join(getattr(a, side), "benchmarks", "models_benchmark")
        if not os.access(b, os.X_OK):
            sys.exit(f"compare_builds: {b} is missing: build it with "
                     f"cmake --build {getattr(a, side)} --target models_benchmark")
        binaries[side] = b
    print(f"| workload, {a.threads} threads | pairs | old ms (median) | new ms (median) | "
          f"new / old, median of the pairs | lowest, highest pair |")
    print("|---|---|---|---|---|---|")
    for w in workloads:
        times = {"old": [], "new": []}
        ratios = []
        for i in range(a.pairs):
            for side in (("old", "new") if i % 2 == 0 else ("new", "old")):
                times[side].append(time_ms(binaries[side], a.threads, w))
            ratios.append(times["new"][-1] / times["old"][-1])
        print(f"| {w} | {a.pairs} | {statistics.median(times['old']):.2f} | "
              f"{statistics.median(times['new']):.2f} | {statistics.median(ratios):.3f} | "
              f"{min(ratios):.2f}, {max(ratios):.2f} |", flush=True)


if __name__ == "__main__":
    main()
