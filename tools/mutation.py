#!/usr/bin/python3
"""Mutation testing: which wrong code would the test suite let through?

It makes one small change at a time to the library's source (a mutant: `+` for `-`, `<=` for
`<`, a constant 0.5 -> 1, a term dropped from a formula, a dimension index moved, a loop bound off
by one, ...), rebuilds incrementally, and runs the tests. A mutant the tests fail on is killed;
one they pass survived: wrong code the suite cannot tell from right code. The score of a folder
is killed / (killed + survived); a mutant that does not compile is stillborn and not counted, one
whose tests outrun the timeout counts as killed (it hangs: a student would notice) and is listed.

It works on a copy of the repository (build/mutation/src, its own build tree), never on your
files, samples `--count` mutants per folder (`--seed` fixes which), and writes
build/mutation/report.md and report.json: the score per folder and per file, and every survivor
as file:line with the mutation.

Mutants that cannot change behaviour (equivalent mutants) are listed with the reason in
tools/mutation_equivalent.txt and not counted.

    tools/mutation.py --count 40 --seed 1                   # every folder (make mutation)
    tools/mutation.py --folders nn --count 20 --seed 3
    tools/mutation.py --files models/masks.cpp --count 10   # one file
    tools/mutation.py --list --folders data                  # the candidate sites, no run
    tools/mutation.py --recheck build/mutation/report.json   # only the last run's survivors
    tools/mutation.py --survivors-page                       # rewrite docs/mutation-survivors.md
"""
import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDERS = ["autograd", "kernels", "io", "nn", "models", "checkpoints", "generation", "tokenizers",
           "data", "viz", "run_folders", "inference", "training", "export", "cli"]
# What each folder's tests are: the unit tests of the whole suite (a change in autograd/ can be
# caught by a model's parity test), and for the folders that only the `anatomy` program reaches,
# the end-to-end cases too.
END_TO_END = {"run_folders", "inference", "training", "export", "cli"}
# ctest's checks outside the unit tests that read a folder's code against an independent
# implementation or from outside the process: the tokenizer.json reader against the tokenizers
# library on every English Tatoeba sentence; `export --to-hf` (BERT's and GPT-2's names and
# configs) loaded by transformers; export and average killed at each of their file operations;
# the attention pages, whose script draws them, opened in headless Chromium. They run after the
# unit tests, when those pass.
CHECKS = {
    "checkpoints": ["hf_export_loads_in_transformers"],
    "tokenizers": ["tokenizer_json_matches_tokenizers"],
    "viz": ["browser_attention_pages"],
    "training": ["kill_during_writes_leaves_nothing_half_written"],
    "export": ["hf_export_loads_in_transformers",
               "kill_during_writes_leaves_nothing_half_written"],
}


def kind(folder):
    """What a folder's test run is made of; the unmutated run of each kind is timed once."""
    return " + ".join(["end_to_end" if folder in END_TO_END else "unit"] + CHECKS.get(folder, []))

# (name, pattern, replacement). Patterns see code only (strings and comments blanked out);
# clang-format spaces binary operators, which is how `a - b` is told from `-b` and `a<b>` from
# `a < b`.
OPERATORS = [
    ("+ -> -", r"(?<=[\w)\]]) \+ (?=[\w(])", " - "),
    ("- -> +", r"(?<=[\w)\]]) - (?=[\w(])", " + "),
    ("* -> /", r"(?<=[\w)\]]) \* (?=[\w(])", " / "),
    ("/ -> *", r"(?<=[\w)\]]) / (?=[\w(])", " * "),
    ("+= -> -=", r" \+= ", " -= "),
    ("-= -> +=", r" -= ", " += "),
    ("*= -> /=", r" \*= ", " /= "),
    ("< -> <=", r"(?<=[\w)\]]) < (?=[\w(-])", " <= "),
    ("<= -> <", r" <= ", " < "),
    ("> -> >=", r"(?<=[\w)\]]) > (?=[\w(-])", " >= "),
    (">= -> >", r" >= ", " > "),
    ("== -> !=", r" == ", " != "),
    ("!= -> ==", r" != ", " == "),
    ("&& -> ||", r" && ", " || "),
    ("|| -> &&", r" \|\| ", " && "),
    ("true -> false", r"\btrue\b", "false"),
    ("false -> true", r"\bfalse\b", "true"),
    ("0.5 -> 1", r"(?<![\w.])0\.5f?(?![\w.])", "1.0f"),
    ("1.0 -> 0.0", r"(?<![\w.])1\.0f?(?![\w.])", "0.0f"),
    ("0 -> 1", r"(?<![\w.])0(?![\w.])", "1"),
    ("1 -> 0", r"(?<![\w.\-])1(?![\w.])", "0"),
    ("2 -> 3", r"(?<![\w.])2(?![\w.])", "3"),
    ("drop '* x'", r" \* [A-Za-z_][\w.:]*(\([^()]*\))?(?![\w(:\[]|->)", ""),
    ("drop '+ x'", r" \+ [A-Za-z_][\w.:]*(\([^()]*\))?(?![\w(:\[]|->)", ""),
    ("drop '- x'", r" - [A-Za-z_][\w.:]*(\([^()]*\))?(?![\w(:\[]|->)", ""),
    ("dim -1 -> -2", r"(?<=[(, ])-1(?=[),])", "-2"),
    ("dim -2 -> -1", r"(?<=[(, ])-2(?=[),])", "-1"),
    ("bound - 1", r"(?<=; \w) < ([\w.()]+);", r" < \1 - 1;"),
    ("drop '!'", r"(?<=[(\s])!(?=[\w(])", ""),
    ("max -> min", r"\bstd::max\b", "std::min"),
    ("min -> max", r"\bstd::min\b", "std::max"),
]

SKIP_LINE = re.compile(r"^\s*(#|static_assert|throw\b)|\bthrow Error\(|\bfmt::format\(\"")


def blank_strings_and_comments(line):
    """The line with string/char literals and // comments replaced by spaces (same columns)."""
    out, i, n = [], 0, len(line)
    while i < n:
        c = line[i]
        if line.startswith("//", i):
            out.append(" " * (n - i))
            break
        if c in "\"'":
            j = i + 1
            while j < n and line[j] != c:
                j += 2 if line[j] == "\\" else 1
            out.append(c + " " * (min(j, n) - i - 1) + (c if j < n else ""))
            i = j + 1
            continue
        out.append(c)
        i += 1
    return "".join(out)[:n]


def sites(path):
    """Every (line number, start, end, replacement, operator) a mutation can apply at."""
    found = []
    in_block_comment = False
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        lines = f.read().split("\n")
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if in_block_comment:
            in_block_comment = "*/" not in stripped
            continue
        if stripped.startswith("/*"):
            in_block_comment = "*/" not in stripped
            continue
        if not stripped or SKIP_LINE.search(line):
            continue
        code = blank_strings_and_comments(line)
        for name, pattern, replacement in OPERATORS:
            for m in re.finditer(pattern, code):
                found.append((number, m.start(), m.end(), m.expand(replacement), name))
    return lines, found


def load_equivalent():
    """tools/mutation_equivalent.txt: `file | code of the line | operator | why` per line."""
    path = os.path.join(ROOT, "tools", "mutation_equivalent.txt")
    known = {}
    if os.path.exists(path):
        for raw in open(path, encoding="utf-8"):
            if raw.strip() and not raw.startswith("#"):
                parts = [p.strip() for p in raw.split(" | ")]
                if len(parts) == 4:
                    known[(parts[0], parts[1], parts[2])] = parts[3]
    return known


SURVIVORS_PAGE = os.path.join(ROOT, "docs", "mutation-survivors.md")


def survivors_page():
    """docs/mutation-survivors.md: every listed mutant by folder, as a reader of the guide sees
    them; written from tools/mutation_equivalent.txt, which stays the one place to edit."""
    by_folder = {}
    for (f, line, operator), why in load_equivalent().items():
        by_folder.setdefault(f.split("/")[0], []).append((f, line, operator, why))
    out = [
        "# The mutants the suite lets through, and why",
        "",
        "[Mutation testing](testing.md#mutation-testing) changes the library's code one small "
        "step at a time and asks whether a test fails. A mutant no test can fail is listed here, "
        "with why: **equivalent** when it cannot change what the program does, **accepted** when "
        "it can but a test would cost more than it shows. `tools/mutation.py` neither samples "
        "nor counts them.",
        "",
        "This page is written by `tools/mutation.py --survivors-page` from "
        "`tools/mutation_equivalent.txt`: edit that file, then run the command "
        "(`tools/check_docs.py` fails while the two disagree).",
    ]
    order = {name: i for i, name in enumerate(FOLDERS)}
    for folder in sorted(by_folder, key=lambda name: (order.get(name, len(order)), name)):
        entries = sorted(by_folder[folder])
        accepted = sum(why.startswith("accepted") for (_, _, _, why) in entries)
        out += ["", f"## {folder}/", "",
                f"{len(entries)} listed: {len(entries) - accepted} equivalent, {accepted} accepted."]
        for (f, line, operator, why) in entries:
            kind = "accepted" if why.startswith("accepted") else "equivalent"
            why = re.sub(r"^accepted:\s*", "", why)
            what = "every mutant" if operator == "*" else f"`{operator}`"
            fence = "``" if "`" in line else "`"
            out += ["", f"- **{kind}**, `{f}`, {what} in {fence} {line} {fence}:",
                    f"  {why.rstrip('.')}."]
    return "\n".join(out) + "\n"


def is_equivalent(known, f, original, mutated, operator):
    """Listed by the line it mutates, or, where a line has two sites of one operator, by the
    line the mutant makes (which names the site); operator `*` lists every mutant of the line."""
    return any((f, line, op) in known for line in (original, mutated) for op in (operator, "*"))


def run(cmd, cwd, timeout=None, env=None):
    try:
        # A mutant can make a test print bytes that are not UTF-8 (a tokenizer cutting a character
        # in two): they are shown replaced, not allowed to stop the run.
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, errors="replace",
                           timeout=timeout, env=env)
        return p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired as e:
        return None, (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) \
            else (e.stdout or "")


class Workspace:
    """A copy of the tracked files and a build of it, so that mutants never touch the repo."""

    def __init__(self, out):
        self.out = out
        self.src = os.path.join(out, "src")
        self.build = os.path.join(out, "build")

    def sync(self):
        files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT,
                               capture_output=True, text=True, check=True).stdout.split("\n")
        for rel in filter(None, files):
            src, dst = os.path.join(ROOT, rel), os.path.join(self.src, rel)
            if not os.path.isfile(src):
                continue
            if os.path.exists(dst) and open(src, "rb").read() == open(dst, "rb").read():
                continue  # unchanged: keep its time stamp, so the build stays incremental
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            # A fresh time stamp: a copy left mutated by an interrupted run must be rebuilt,
            # although the repository's file is older than the mutant's object file.
            shutil.copyfile(src, dst)
            shutil.copymode(src, dst)
        # The tests read ../shared/data relative to the repository.
        shared = os.path.join(self.out, "shared")
        real = os.path.abspath(os.path.join(ROOT, "..", "shared"))
        if not os.path.exists(shared) and os.path.exists(real):
            os.symlink(real, shared)
        # The tests against PyTorch and transformers find the test environment at build/venv of
        # the sources they were built from; without it they skip, and a mutant only they catch
        # would survive.
        venv = os.path.join(self.src, "build", "venv")
        real_venv = os.path.join(ROOT, "build", "venv")
        if not os.path.lexists(venv) and os.path.exists(real_venv):
            os.makedirs(os.path.dirname(venv), exist_ok=True)
            os.symlink(os.path.realpath(real_venv), venv)

    def configure(self):
        # -O1: mutants compile several times faster than at -O3, and behave the same.
        # _GLIBCXX_ASSERTIONS: std::vector and std::string check their indices, so a mutant that
        # reads one element past the end fails here, as it would under the sanitizer build,
        # instead of reading whatever lies there.
        # RelWithDebInfo with its flags replaced: under Release, anatomy_set_flags adds -O3
        # after these, and the last -O wins.
        code, log = run(["cmake", "-S", self.src, "-B", self.build,
                         "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
                         "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -D_GLIBCXX_ASSERTIONS",
                         "-DANATOMY_BUILD_TUTORIALS=ON",
                         "-DANATOMY_WERROR=OFF", "-DANATOMY_WARNINGS=OFF"], ROOT)
        if code != 0:
            sys.exit("mutation: cmake failed\n" + log)

    def compile(self, timeout):
        # The kill library is what kill_during_writes_leaves_nothing_half_written preloads;
        # tutorial 03 writes two of the pages browser_attention_pages opens.
        return run(["cmake", "--build", self.build, "-j2", "--target", "anatomy_tests",
                    "anatomy", "anatomy_kill_at_call", "03_multi_head_attention"], ROOT, timeout)

    def test(self, folder, timeout):
        """The folder's own test files first (tests/<folder>/), which kill most of its mutants
        in seconds; then, if they pass, every other test file. Each part has the timeout."""
        own = f"*tests/{folder}/*"
        code, log = self.run_tests(folder, timeout, f"--source-file={own}")
        if code != 0:
            return code, log
        code, log = self.run_tests(folder, timeout, f"--source-file-exclude={own}")
        for check in CHECKS.get(folder, []):
            if code != 0:
                break
            code, log = self.run_check(check, timeout)
        return code, log

    def run_check(self, name, timeout):
        """One of ctest's tests, by name. A check that skips (no test environment) stops the
        mutation run: a mutant it did not look at must count neither as caught nor as surviving."""
        code, log = run(["ctest", "--test-dir", self.build, "-R", f"^{name}$",
                         "--output-on-failure", "--no-tests=error"], self.build, timeout,
                        self.env())
        if code == 0 and re.search(r"\bSkipped\b|Not Run", log):
            sys.exit(f"mutation: {name} skipped (make test installs what it needs: build/venv, "
                     "Chromium)\n" + log[-2000:])
        return code, log

    def run_tests(self, folder, timeout, which):
        binary = os.path.join(self.build, "tests", "anatomy_tests")
        cmd = [binary, "--abort-after=1", "--no-intro", "--minimal", which]
        if folder not in END_TO_END:
            cmd.append("--test-suite-exclude=end-to-end")
        # A temporary folder of its own: what a test killed by a mutant leaves behind stays in
        # the mutation run's folder, not in the system's.
        return run(cmd, self.build, timeout, self.env())

    def env(self):
        tmp = os.path.join(self.out, "tmp")
        os.makedirs(tmp, exist_ok=True)
        return dict(os.environ, OMP_NUM_THREADS="2", TMPDIR=tmp)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=20, help="mutants per folder (default 20)")
    ap.add_argument("--seed", type=int, default=1, help="which mutants are sampled")
    ap.add_argument("--folders", default=",".join(FOLDERS),
                    help=f"comma-separated (default: {','.join(FOLDERS)})")
    ap.add_argument("--files", default="", help="comma-separated source files instead of folders")
    ap.add_argument("--headers", action="store_true", help="mutate .hpp files too (slow builds)")
    ap.add_argument("--timeout", type=float, default=0,
                    help="seconds per test run (default: 3x the unmutated run, at least 60)")
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "mutation"))
    ap.add_argument("--list", action="store_true", help="print the candidate sites and stop")
    ap.add_argument("--recheck", default="",
                    help="a report.json: run its survivors again (after writing tests for them)")
    ap.add_argument("--survivors-page", action="store_true",
                    help="rewrite docs/mutation-survivors.md from tools/mutation_equivalent.txt")
    a = ap.parse_args()
    if a.survivors_page:
        with open(SURVIVORS_PAGE, "w", encoding="utf-8") as page:
            page.write(survivors_page())
        print(f"wrote {os.path.relpath(SURVIVORS_PAGE)}")
        return 0
    a.out = os.path.abspath(a.out)  # the tests run with the build folder as working directory
    if a.recheck:
        return recheck(a)

    if a.files:
        groups = {}
        for f in a.files.split(","):
            groups.setdefault(f.split("/")[0], []).append(f)
    else:
        groups = {}
        for folder in a.folders.split(","):
            if folder not in FOLDERS:
                sys.exit(f"mutation: unknown folder '{folder}' ({', '.join(FOLDERS)})")
            exts = (".cpp", ".hpp") if a.headers else (".cpp",)
            groups[folder] = sorted(
                f"{folder}/{n}" for n in os.listdir(os.path.join(ROOT, folder))
                if n.endswith(exts) and n != "main.cpp")
    equivalent = load_equivalent()
    rng = random.Random(a.seed)
    plan = []  # (folder, file, line, start, end, replacement, operator)
    for folder, files in groups.items():
        candidates = []
        for f in files:
            if not os.path.exists(os.path.join(ROOT, f)):
                sys.exit(f"mutation: no such file {f}")
            lines, found = sites(f)
            for (number, start, end, repl, name) in found:
                line = lines[number - 1]
                if is_equivalent(equivalent, f, line.strip(),
                                 (line[:start] + repl + line[end:]).strip(), name):
                    continue
                candidates.append((folder, f, number, start, end, repl, name))
        if a.list:
            for (_, f, number, start, end, repl, name) in candidates:
                line = open(os.path.join(ROOT, f), encoding="utf-8").read().split("\n")[number - 1]
                print(f"{f}:{number}  {name}:  {(line[:start] + repl + line[end:]).strip()}")
            continue
        plan += rng.sample(candidates, min(a.count, len(candidates)))
        print(f"{folder}: {len(candidates)} candidate mutants in {len(files)} files, "
              f"{min(a.count, len(candidates))} sampled", flush=True)
    if a.list:
        return 0

    ws, baseline = prepare(a, {p[0] for p in plan})
    results = []
    started = time.time()
    for i, (folder, f, number, start, end, repl, name) in enumerate(plan, 1):
        # From the workspace's copy, synced when the plan was made: the repository's file may
        # have been edited since (lines moved), and the plan's line numbers are the copy's.
        line = open(os.path.join(ws.src, f), encoding="utf-8").read().split("\n")[number - 1]
        results.append(try_mutant(ws, a, baseline, folder, f, number, line,
                                  line[:start] + repl + line[end:], name))
        print(f"[{i}/{len(plan)}] {results[-1]['status']:9} {f}:{number}  {name}: "
              f"{results[-1]['mutated'][:90]}  ({time.time() - started:.0f} s)", flush=True)
    ws.compile(None)  # leave the copy built unmutated

    report(a, results, baseline)
    return 0


def prepare(a, folders):
    """The workspace, built unmutated, and how long its unit / end-to-end tests take."""
    ws = Workspace(a.out)
    ws.sync()
    ws.configure()
    print("building the unmutated copy ...", flush=True)
    code, log = ws.compile(None)
    if code != 0:
        sys.exit("mutation: the unmutated copy does not build\n" + log[-3000:])
    baseline = {}
    for folder in sorted(folders):
        if kind(folder) in baseline:
            continue
        t0 = time.time()
        code, log = ws.test(folder, None)
        baseline[kind(folder)] = time.time() - t0
        if code != 0:
            sys.exit(f"mutation: the unmutated tests fail ({kind(folder)}); fix them first\n"
                     + log[-3000:])
        print(f"unmutated {kind(folder)} tests pass in {baseline[kind(folder)]:.0f} s",
              flush=True)
    return ws, baseline


def try_mutant(ws, a, baseline, folder, f, number, line, mutated_line, name):
    """Builds and tests the copy with line `number` of f replaced; restores it after."""
    path = os.path.join(ws.src, f)
    original = open(path, encoding="utf-8").read()
    lines = original.split("\n")
    lines[number - 1] = mutated_line
    with open(path, "w", encoding="utf-8") as out:
        out.write("\n".join(lines))
    timeout = a.timeout or max(60.0, 3 * baseline[kind(folder)])
    try:
        code, log = ws.compile(900)
        if code != 0:
            status = "stillborn"
        else:
            code, log = ws.test(folder, timeout)
            status = "timeout" if code is None else "survived" if code == 0 else "killed"
    finally:
        with open(path, "w", encoding="utf-8") as out:
            out.write(original)
    caught = ""
    if status == "killed":
        # The failing case: the TEST CASE header before the first ERROR (a skipped test's
        # MESSAGE prints a header of its own first).
        failure = re.search(r"TEST CASE:\s+([^\n]*)\n(?:(?!TEST CASE:).)*?ERROR", log, re.S)
        # Or the ctest check that failed.
        failure = failure or re.search(r"Test +#\d+: (\S+)", log)
        caught = failure.group(1).strip() if failure else ""
    return {"folder": folder, "file": f, "line": number, "operator": name,
            "original": line.strip(), "mutated": mutated_line.strip(), "status": status,
            "caught_by": caught}


def recheck(a):
    """Runs the survivors of an earlier report again, found by their code (lines move)."""
    earlier = json.load(open(a.recheck, encoding="utf-8"))
    survivors = [r for r in earlier["results"] if r["status"] == "survived"]
    equivalent = load_equivalent()
    todo = []
    for r in survivors:
        if is_equivalent(equivalent, r["file"], r["original"], r["mutated"], r["operator"]):
            print(f"equivalent (listed)  {r['file']}:{r['line']}  {r['operator']}")
            continue
        lines = open(os.path.join(ROOT, r["file"]), encoding="utf-8").read().split("\n")
        at = [i for i, l in enumerate(lines, 1) if l.strip() == r["original"]]
        if not at:
            print(f"gone (the line changed)  {r['file']}:{r['line']}  {r['original'][:80]}")
            continue
        number = min(at, key=lambda i: abs(i - r["line"]))
        line = lines[number - 1]
        todo.append((r["folder"], r["file"], number, line,
                     line[:len(line) - len(line.lstrip())] + r["mutated"], r["operator"]))
    ws, baseline = prepare(a, {t[0] for t in todo})
    results = []
    for i, t in enumerate(todo, 1):
        results.append(try_mutant(ws, a, baseline, *t))
        r = results[-1]
        print(f"[{i}/{len(todo)}] {r['status']:9} {r['file']}:{r['line']}  {r['operator']}: "
              f"{r['mutated'][:80]}  {r['caught_by']}", flush=True)
    ws.compile(None)
    left = [r for r in results if r["status"] == "survived"]
    print(f"\n{len(results) - len(left)} of {len(results)} killed now; still surviving: "
          f"{len(left)}")
    for r in left:
        print(f"- {r['file']}:{r['line']} {r['operator']}: {r['mutated']}")
    return 0


def score(rs):
    counted = [r for r in rs if r["status"] in ("killed", "survived", "timeout")]
    killed = sum(r["status"] in ("killed", "timeout") for r in counted)
    return killed, len(counted), (100.0 * killed / len(counted) if counted else float("nan"))


def report(a, results, baseline):
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "report.json"), "w") as f:
        json.dump({"seed": a.seed, "count": a.count, "results": results}, f, indent=1)
    md = [f"# Mutation testing (seed {a.seed}, {a.count} per folder)", "",
          "| folder | killed | survived | timed out | stillborn | score |",
          "|---|---|---|---|---|---|"]
    for folder in dict.fromkeys(r["folder"] for r in results):
        rs = [r for r in results if r["folder"] == folder]
        killed, counted, pct = score(rs)
        md.append(f"| {folder} | {sum(r['status'] == 'killed' for r in rs)} | "
                  f"{sum(r['status'] == 'survived' for r in rs)} | "
                  f"{sum(r['status'] == 'timeout' for r in rs)} | "
                  f"{sum(r['status'] == 'stillborn' for r in rs)} | {pct:.0f}% |")
    md += ["", "## Per file", "", "| file | killed | counted | score |", "|---|---|---|---|"]
    for f in sorted({r["file"] for r in results}):
        killed, counted, pct = score([r for r in results if r["file"] == f])
        if counted:
            md.append(f"| {f} | {killed} | {counted} | {pct:.0f}% |")
    survivors = [r for r in results if r["status"] == "survived"]
    md += ["", f"## Survivors ({len(survivors)})", ""]
    for r in survivors:
        md.append(f"- `{r['file']}:{r['line']}` {r['operator']}: `{r['original']}` -> "
                  f"`{r['mutated']}`")
    timeouts = [r for r in results if r["status"] == "timeout"]
    if timeouts:
        md += ["", "## Timed out (counted as killed)", ""]
        for r in timeouts:
            md.append(f"- `{r['file']}:{r['line']}` {r['operator']}: `{r['mutated']}`")
    text = "\n".join(md) + "\n"
    with open(os.path.join(a.out, "report.md"), "w") as f:
        f.write(text)
    print("\n" + text)
    print(f"written: {os.path.join(a.out, 'report.md')} and report.json")


if __name__ == "__main__":
    sys.exit(main())
