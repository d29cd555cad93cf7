#!/usr/bin/env python3
"""Runs the shell commands of the front page and the guide, as a reader would type them.

Every ```sh block in README.md and docs/*.md is either runnable (```sh) or marked
illustrative (```sh illustrative: why), e.g. a synopsis with [options] or a command that
needs a folder of the reader's own. The runnable blocks of a page run in order, in a fresh
folder of their own, under bash -e, with:
- ./build/release/ pointing at the build being tested, ./build/venv at the test environment
  (a block that uses it, or the pretrained BERT make setup puts in ~/.cache/anatomy, is skipped
  without it, unless ANATOMY_REQUIRE_TEST_VENV=1), and
  ../shared/data at the data beside the source tree;
- tiny budgets: --time-budget N becomes 2, --epochs N becomes 1, --iters N becomes 5, so that
  the commands run through in seconds and still write what the next command reads.

Usage: run_doc_commands.py SOURCE_DIR BUILD_DIR. Exits non-zero, naming the page and the
block, when a block fails or an sh block is neither runnable nor marked illustrative.
"""
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

source = Path(sys.argv[1]).resolve()
build = Path(sys.argv[2]).resolve()
pages = [source / "README.md"] + sorted((source / "docs").glob("*.md"))
fence = re.compile(r"^```(\S*)([^\n]*)\n(.*?)^```", re.S | re.M)
failures, ran = [], 0
# What make setup puts in the cache, which the blocks name as ~/.cache/anatomy/pretrained/...
pretrained = Path.home() / ".cache" / "anatomy" / "pretrained" / "all-MiniLM-L6-v2" / ".requirement"

for page in pages:
    blocks = []
    for m in fence.finditer(page.read_text(encoding="utf-8")):
        lang, rest, body = m.group(1), m.group(2).strip(), m.group(3)
        if lang != "sh":
            continue
        line = page.read_text(encoding="utf-8")[: m.start()].count("\n") + 1
        if rest.startswith("illustrative"):
            if not rest.partition(":")[2].strip():
                failures.append(f"{page.name}:{line}: an illustrative block says why (sh illustrative: why)")
            continue
        if rest:
            failures.append(f"{page.name}:{line}: '```sh {rest}': runnable blocks are plain ```sh")
            continue
        blocks.append((line, body))
    if not blocks:
        continue
    with tempfile.TemporaryDirectory(prefix="anatomy_doc_") as tmp:
        work = Path(tmp) / "repo"
        (work / "build").mkdir(parents=True)
        (work / "build" / "release").symlink_to(build)
        venv = source / "build" / "venv"
        if (venv / ".requirements").exists():
            (work / "build" / "venv").symlink_to(venv)
        for line, body in blocks:
            if ".cache/anatomy/pretrained" in body and not pretrained.exists():
                print(f"{page.name}:{line}: skipped: make setup has not put the pretrained BERT in ~/.cache/anatomy")
                if os.environ.get("ANATOMY_REQUIRE_TEST_VENV") == "1":
                    failures.append(f"{page.name}:{line}: needs the pretrained BERT (make setup)")
                continue
            if "build/venv" in body and not (work / "build" / "venv").exists():
                print(f"{page.name}:{line}: skipped: the test environment build/venv is missing")
                if os.environ.get("ANATOMY_REQUIRE_TEST_VENV") == "1":
                    failures.append(f"{page.name}:{line}: needs build/venv (cmake/test-venv.sh)")
                continue
            script = body.replace("../shared/data", str(source.parent / "shared" / "data"))
            script = re.sub(r"--time-budget \d+", "--time-budget 2", script)
            script = re.sub(r"--epochs \d+", "--epochs 1", script)
            script = re.sub(r"--iters \d+", "--iters 5", script)
            try:
                done = subprocess.run(["bash", "-e", "-c", script], cwd=work, capture_output=True,
                                      text=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"})
            except subprocess.TimeoutExpired:
                failures.append(f"{page.name}:{line}: did not finish in 300 s")
                continue
            ran += 1
            if done.returncode != 0:
                tail = "\n    ".join((done.stdout + done.stderr).strip().splitlines()[-8:])
                failures.append(f"{page.name}:{line}: exit {done.returncode}\n    {tail}")

for f in failures:
    print(f)
print(f"{ran} block(s) run, {len(failures)} problem(s)")
sys.exit(1 if failures else 0)
