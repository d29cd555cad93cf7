#!/usr/bin/env python3
"""Checks the front page and the guide (README.md, docs/*.md, kernels/README.md).

- every relative link and image resolves to a file in the tree (and an #anchor to a heading);
- README.md is at most 300 lines;
- every subcommand `anatomy --help` lists, and every option of its own --help, is shown in
  docs/cli.md (`$A <name>` or `anatomy <name>`, and the option's name);
- no page narrates how it was made: no numbered work periods, no dated entries;
- each exercise statement lists the calls it needs, and each call it names exists;
- docs/mutation-survivors.md is what `tools/mutation.py --survivors-page` writes from
  tools/mutation_equivalent.txt today.

Usage: check_docs.py SOURCE_DIR [ANATOMY_PROGRAM]. Exits non-zero and lists every problem.
"""
import re
import subprocess
import sys
from pathlib import Path

root = Path(sys.argv[1]).resolve()
program = sys.argv[2] if len(sys.argv) > 2 else None
pages = [root / "README.md", root / "kernels" / "README.md"] + sorted((root / "docs").glob("*.md"))
problems = []


def anchors(page: Path) -> set:
    """GitHub's anchors: a heading lower-cased, punctuation dropped, spaces as hyphens."""
    out = set()
    for line in page.read_text(encoding="utf-8").splitlines():
        m = re.match(r"#+\s+(.*)", line)
        if m:
            text = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower())
            out.add(text.replace(" ", "-"))
    return out


link = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
journal = [
    (re.compile(r"\b[Ss]ession \d+"), "a numbered work period"),
    (re.compile(r"\b20\d\d-\d\d-\d\d\b"), "a dated entry"),
    (re.compile(r"[Tt]ried, not kept"), "a log of what was tried"),
]
for page in pages:
    text = page.read_text(encoding="utf-8")
    # Fenced code is what a program prints or a user types, not prose or links.
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    for target in link.findall(prose):
        if re.match(r"[a-z]+:", target):
            continue  # http:, https:, mailto:
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            problems.append(f"{page.relative_to(root)}: the link '{target}' points at nothing")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            problems.append(f"{page.relative_to(root)}: no heading '#{anchor}' in {path or page.name}")
    # Quoted examples ("March 3, 2021" -> "2021-03-03") are data, not dates of the project.
    unquoted = re.sub(r'"[^"\n]*"|`[^`\n]*`', "", prose)
    # What `make bench` writes between its markers is a measurement stamped with its date, and
    # rewritten whole by the next run: the one place a date belongs.
    generated = re.compile(r"<!-- make bench: begin -->.*?<!-- make bench: end -->", re.S)
    for pattern, what in journal:
        checked = generated.sub("", unquoted) if what == "a dated entry" else unquoted
        for m in pattern.finditer(checked):
            problems.append(f"{page.relative_to(root)}: '{m.group(0)}' is {what}; that belongs in a commit message")

# Each exercise statement ends with the calls it needs; every call named there exists in the
# library's headers or the exercise's own, so the list cannot point a student at nothing.
headers = " ".join(
    f.read_text(encoding="utf-8")
    for folder in ("autograd", "nn", "models", "exercises")
    for f in (root / folder).rglob("*.hpp"))
known = set(re.findall(r"\b(\w+)\s*[(<{]", headers)) | {"sqrt", "float"}
for statement in sorted((root / "exercises").glob("*/README.md")):
    text = statement.read_text(encoding="utf-8")
    where = statement.relative_to(root)
    if "## The calls you need" not in text:
        problems.append(f"{where}: no '## The calls you need' section")
        continue
    section = text.split("## The calls you need", 1)[1]
    for code in re.findall(r"`([^`]+)`", section):
        for name in re.findall(r"(\w+)\s*[(<]", code):
            if name not in known:
                problems.append(f"{where}: `{code}` names '{name}', which no header declares")

# The survivors' page is written from tools/mutation_equivalent.txt; a listing edited without
# rewriting it would leave the guide telling another story than the tool.
sys.path.insert(0, str(root / "tools"))
import mutation  # noqa: E402  (tools/mutation.py, found through the path above)

survivors = root / "docs" / "mutation-survivors.md"
if not survivors.exists() or survivors.read_text(encoding="utf-8") != mutation.survivors_page():
    problems.append("docs/mutation-survivors.md: not what tools/mutation.py --survivors-page "
                    "writes from tools/mutation_equivalent.txt; run that command")

readme_lines = (root / "README.md").read_text(encoding="utf-8").count("\n")
if readme_lines > 300:
    problems.append(f"README.md: {readme_lines} lines, more than 300 (the guide lives in docs/)")

if program:
    help_text = subprocess.run([program, "--help"], capture_output=True, text=True).stdout
    section = help_text.split("Subcommands:", 1)[-1]
    commands = re.findall(r"^\s{2}(\w+)\s", section, flags=re.M)
    if not commands:
        problems.append(f"{program} --help lists no subcommands")
    cli = (root / "docs" / "cli.md").read_text(encoding="utf-8")
    for name in commands:
        if not re.search(rf"(\$A|anatomy) {name}\b", cli):
            problems.append(f"docs/cli.md: the subcommand '{name}' of `anatomy --help` is not shown")
        sub = subprocess.run([program, name, "--help"], capture_output=True, text=True).stdout
        for option in re.findall(r"^\s+(?:-\w,)?(--[a-z][\w-]*)", sub, flags=re.M):
            if option != "--help" and not re.search(rf"{re.escape(option)}\b", cli):
                problems.append(f"docs/cli.md: '{name} {option}' (anatomy {name} --help) is not shown")

for p in problems:
    print(p)
print(f"{len(problems)} problem(s) in {len(pages)} pages")
sys.exit(1 if problems else 0)
