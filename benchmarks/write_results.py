#!/usr/bin/env python3
"""Rewrites the results of docs/performance.md from what `make bench` printed.

The block between the markers `<!-- make bench: begin -->` and `<!-- make bench: end -->` is
replaced, never appended to: a line naming the date, the commit, the machine (CPU, cores, SIMD
width) and the yardstick's version, then every table the benchmarks printed, in their order.

usage: write_results.py PAGE RESULTS_DIR   (RESULTS_DIR holds one .md file per benchmark; one
without a table, a benchmark that skipped itself, is named as giving no result)
       write_results.py --header           prints that line alone (make bench begins with it)
"""
import datetime
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

root = Path(__file__).resolve().parent.parent


def cpu() -> str:
    info = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    model = re.search(r"model name\s*:\s*(.*)", info)
    flags = re.search(r"flags\s*:\s*(.*)", info)
    width = "AVX-512 (16 float lanes)" if flags and "avx512f" in flags.group(1).split() else \
        "AVX2 (8 float lanes)" if flags and "avx2" in flags.group(1).split() else "SSE (4 float lanes)"
    return f"{model.group(1).strip() if model else platform.processor()}, {os.cpu_count()} cores, {width}"


def torch_version() -> str:
    # The benchmarks run the yardstick with the test environment's Python (cmake/test-venv.sh).
    python = os.environ.get("ANATOMY_TORCH_PYTHON", str(root / "build" / "venv" / "bin" / "python"))
    try:
        out = subprocess.run([python, "-c", "import torch; print(torch.__version__)"],
                             capture_output=True, text=True, timeout=120)
        return out.stdout.strip() or "not installed"
    except (OSError, subprocess.TimeoutExpired):
        return "not installed"


def commit() -> str:
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=60)
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=60).stdout.strip()
        return (out.stdout.strip() or "unknown") + (" with uncommitted changes" if dirty else "")
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


def header() -> str:
    return (f"Measured by `make bench` on {datetime.date.today().isoformat()} at commit {commit()}, "
            f"on {cpu()}; the yardstick is PyTorch {torch_version()}, eager and torch.compile, "
            f"at 1 and 2 threads.")


if sys.argv[1:] == ["--header"]:
    print(header())
    sys.exit(0)
page, results = Path(sys.argv[1]), Path(sys.argv[2])
begin, end = "<!-- make bench: begin -->", "<!-- make bench: end -->"
text = page.read_text(encoding="utf-8")
if text.count(begin) != 1 or text.count(end) != 1 or text.index(begin) > text.index(end):
    sys.exit(f"write_results: {page} needs one '{begin}' before one '{end}'")

blocks = []
for f in sorted(results.glob("*.md")):
    lines = f.read_text(encoding="utf-8").splitlines()
    tables, current = [], []
    for line in lines + [""]:
        if line.startswith("|"):
            current.append(line)
        elif current:
            tables.append("\n".join(current))
            current = []
    if not tables:
        # A benchmark that skipped itself (bench_shakespeare.sh without ../shared/data) printed
        # no table: the page says so rather than keep an older result.
        print(f"write_results: {f.name} holds no table (the benchmark skipped itself?)")
        tables = [f"({f.stem.split('_', 1)[-1]}: no result in this run)"]
    blocks.extend(tables)

body = f"{begin}\n\n{header()}\n\n" + "\n\n".join(blocks) + f"\n\n{end}"
text = text[: text.index(begin)] + body + text[text.index(end) + len(end):]
page.write_text(text, encoding="utf-8")
print(f"wrote {len(blocks)} tables into {page}")
