#!/usr/bin/env python3
"""Every #include runs down the layers: a folder includes only its own floor and the floors below.

The floors are the picture in docs/architecture.md, top floor first; folders named on one line
share a floor (data/ tokenizers/ viz/). So the picture and the code say the same, or this fails
with each include that runs back up.

    tools/check_layers.py [ROOT]
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent)
INCLUDE = re.compile(r'\s*#\s*include\s+"([a-z_]+)/')


def floors(architecture):
    """{folder: floor}, 0 the lowest, from the first ``` block of docs/architecture.md."""
    block = architecture.split("```")[1]
    rows = []
    for line in block.splitlines():
        names = []
        for word in line.split():
            if not re.fullmatch(r"[a-z_]+/", word):
                break  # the description starts
            names.append(word[:-1])
        if names:
            rows.append(names)
    rows.reverse()
    return {name: floor for floor, names in enumerate(rows) for name in names}


def main():
    level = floors((ROOT / "docs" / "architecture.md").read_text())
    if len(level) < 2:
        sys.exit("check_layers: docs/architecture.md has no picture of the layers")
    wrong = []
    for folder, floor in level.items():
        if not (ROOT / folder).is_dir():
            wrong.append(f"docs/architecture.md names {folder}/, which does not exist")
            continue
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix not in (".cpp", ".hpp"):
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                m = INCLUDE.match(line)
                if m and level.get(m.group(1), -1) > floor:
                    wrong.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()} "
                                 f"({m.group(1)}/ is above {folder}/)")
    print("\n".join(wrong))
    print(f"{len(wrong)} include(s) run back up ({len(level)} folders on "
          f"{len(set(level.values()))} floors)")
    sys.exit(1 if wrong else 0)


if __name__ == "__main__":
    main()
