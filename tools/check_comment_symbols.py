#!/usr/bin/env python3
"""Comments that name code should name code that exists. This reads every comment of the C++
sources and reports the names it cannot find: a file (`models/registry.hpp`, `engine.hpp`), a
call (`init_weights()`, `Module::apply`) or a snake_case / Class::member name in backticks or
followed by "()". Names that are not this project's (torch's, Hugging Face's) are written with a
dot (`torch.nn.Module.apply`, `F.scaled_dot_product_attention`) or listed in EXTERNAL below.

Usage: tools/check_comment_symbols.py [ROOT]   (exit 1 and a list when something is missing)
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent)
FOLDERS = ["platform", "autograd", "nn", "models", "tokenizers", "data", "viz", "run_folders", "inference",
           "training", "export", "cli", "tutorials",
           "tests", "benchmarks"]
# Names from other projects that comments mention without a dot.
EXTERNAL = {"get_linear_schedule_with_warmup", "get_cosine_schedule_with_warmup", "average_checkpoints",
            "doctest_discover_tests", "register_buffer", "scaled_dot_product_attention", "c_proj",
            "__metadata__", "output_attentions", "attn_mask", "self_attn", "feed_forward", "dtype",
            "tie_weights", "load_state_dict", "state_dict", "named_parameters", "reset_parameters"}

sources = [p for f in FOLDERS for p in (ROOT / f).rglob("*") if p.suffix in (".cpp", ".hpp")
           and "build" not in p.parts]
code_words = set()
files = {p.name for p in ROOT.rglob("*") if "build" not in p.parts and ".git" not in p.parts}
comment_re = re.compile(r"//(.*)$")
for p in sources:
    for line in p.read_text(errors="replace").splitlines():
        code = comment_re.sub("", line)
        code_words.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", code))

missing = []
for p in sources:
    for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1):
        m = comment_re.search(line)
        if not m or '"' in line[: m.start()]:  # skip "//" inside string literals
            continue
        text = m.group(1)
        names = set(re.findall(r"`([A-Za-z_][A-Za-z0-9_:]*)(?:\(\))?`", text))
        names |= set(re.findall(r"(?<![.\w])([A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*)\(\)", text))
        for f in re.findall(r"(?<![\w/.])([a-z_0-9]+\.(?:hpp|cpp))", text):
            if f not in files:
                missing.append(f"{p.relative_to(ROOT)}:{n}: file {f}")
        for name in names:
            parts = name.split("::")
            if name in EXTERNAL or all(part in code_words for part in parts):
                continue
            if "_" not in name and "::" not in name and not name[:1].isupper():
                continue  # a plain word in backticks (`resume`), not a symbol
            missing.append(f"{p.relative_to(ROOT)}:{n}: {name}")

for m in missing:
    print(m)
print(f"{len(missing)} comment(s) name code that does not exist ({len(sources)} files read)")
sys.exit(1 if missing else 0)
