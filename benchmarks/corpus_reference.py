#!/usr/bin/env python3
"""The PyTorch reference for corpus translation (docs/training.md): torch's own
nn.Transformer, trained on exactly the data an `anatomy train --corpus` run used, the same way,
for the same time budget, so that test BLEU can be compared side by side.

From the anatomy run folder it takes:
  split/{train,valid,test}.tsv   the pairs as the run split them (by source sentence)
  source_tokenizer, target_tokenizer
                                 the same subwords: text is tokenized by `anatomy tokenize`
  config.json                    the model's size: hidden, heads, layers, feed-forward, dropout,
                                 positions (learned), pre-LN with a final LayerNorm, tied output,
                                 one token table for both sides when the run shares them
  run.json "recipe"              tokens per batch, label smoothing, clipping, AdamW and the
                                 run's schedule (noam, or a linear or cosine decay planned for
                                 the budget) with its warmup and peak
The loop is a plain PyTorch one: batches of similar length up to max_tokens, cross-entropy with
label smoothing, AdamW, clipping; after each epoch the validation loss and greedy BLEU, keeping
the best state by validation BLEU; it stops when the next epoch would not fit the budget (the
same rule as anatomy's Trainer). The test set is then translated greedily (batched, the decoder
rerun over the prefix at each step, as nn.Transformer is used) and scored by `anatomy bleu`
(sacreBLEU's 13a scores).

    anatomy train --corpus ../shared/data/tatoeba/eng-deu.tsv --out runs/ende --time-budget 900
    build/venv/bin/python benchmarks/corpus_reference.py --run runs/ende --time-budget 900

The test environment's PyTorch 2.13 (cmake/test-venv.sh makes build/venv) is the test oracle and
this reference, never a runtime dependency.
"""
import argparse
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

PAD, UNK, BOS, EOS = 0, 1, 2, 3
SPACE = "\u2581"


def read_tsv(path):
    pairs = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            src, tgt = line.rstrip("\n").split("\t")[:2]
            pairs.append((src, tgt))
    return pairs


def tokenize(anatomy, tokenizer, texts):
    """Token ids of each text, by the run's own tokenizer (`anatomy tokenize --tokenizer`)."""
    out = subprocess.run([anatomy, "tokenize", "--tokenizer", tokenizer, "--format", "json"],
                         input="\n".join(texts) + "\n", capture_output=True, text=True,
                         check=True)
    ids = [json.loads(line)["ids"] for line in out.stdout.splitlines()]
    assert len(ids) == len(texts), (len(ids), len(texts))
    return [row if row else [UNK] for row in ids]


def read_vocab(path):
    """vocab.txt as Vocabulary::save writes it: one token a line, \\\\ \\n \\r escaped."""
    tokens = []
    with open(path, encoding="utf-8", newline="\n") as f:
        for line in f.read().split("\n")[:-1]:
            tokens.append(line.replace("\\\\", "\0").replace("\\n", "\n").replace("\\r", "\r")
                          .replace("\0", "\\"))
    return tokens


def decode(ids, vocab):
    """Tokenizer::decode: specials dropped, "▁" marks a space, the leading one dropped."""
    text = "".join(vocab[i] for i in ids if vocab[i] not in ("[PAD]", "[BOS]", "[EOS]"))
    return text.replace(SPACE, " ").lstrip(" ")


def make_batches(src, tgt, max_tokens, rng, shuffle=True):
    """anatomy's make_batches: shuffle, sort by length (stable), fill up to max_tokens with
    padding counted, shuffle the batches."""
    order = list(range(len(src)))
    if shuffle:
        rng.shuffle(order)
    length = lambda r: max(len(src[r]), len(tgt[r]) + 1)
    order.sort(key=length)
    batches, rows, longest = [], [], 0
    for r in order:
        n = max(longest, length(r))
        if rows and n * (len(rows) + 1) > max_tokens:
            batches.append(rows)
            rows, longest = [], 0
        rows.append(r)
        longest = max(longest, length(r))
    if rows:
        batches.append(rows)
    if shuffle:
        rng.shuffle(batches)
    return batches


def pad(rows):
    n = max(len(r) for r in rows)
    return torch.tensor([r + [PAD] * (n - len(r)) for r in rows], dtype=torch.long)


class Translator(nn.Module):
    def __init__(self, c):
        super().__init__()
        d = c["hidden_size"]
        self.d = d
        self.src_emb = nn.Embedding(c["vocab_size"], d)
        # One table for source, target and output when the run shares its vocabulary.
        shared = c.get("share_embeddings", False)
        self.tgt_emb = self.src_emb if shared else nn.Embedding(c["target_vocab_size"], d)
        self.src_pos = nn.Embedding(c["max_position_embeddings"], d)
        self.tgt_pos = nn.Embedding(c["max_position_embeddings"], d)
        self.src_ln, self.tgt_ln = nn.LayerNorm(d), nn.LayerNorm(d)
        self.drop = nn.Dropout(c["hidden_dropout_prob"])
        layers = c["num_hidden_layers"]
        self.transformer = nn.Transformer(
            d, c["num_attention_heads"], layers, c["num_decoder_layers"] or layers,
            c["intermediate_size"], c["hidden_dropout_prob"], activation="gelu",
            batch_first=True, norm_first=True)
        self.out_bias = nn.Parameter(torch.zeros(c["target_vocab_size"]))
        for e in (self.src_emb, self.tgt_emb, self.src_pos, self.tgt_pos):
            nn.init.normal_(e.weight, std=0.02)

    def embed(self, ids, emb, pos, ln):
        positions = torch.arange(ids.size(1)).unsqueeze(0)
        return self.drop(ln(emb(ids) + pos(positions)))

    def encode(self, src):
        return self.transformer.encoder(self.embed(src, self.src_emb, self.src_pos, self.src_ln),
                                        src_key_padding_mask=src == PAD)

    def decode(self, tgt_in, memory, src):
        t = tgt_in.size(1)
        causal = torch.triu(torch.full((t, t), float("-inf")), diagonal=1)
        h = self.transformer.decoder(
            self.embed(tgt_in, self.tgt_emb, self.tgt_pos, self.tgt_ln), memory, tgt_mask=causal,
            tgt_key_padding_mask=tgt_in == PAD, memory_key_padding_mask=src == PAD)
        return F.linear(h, self.tgt_emb.weight, self.out_bias)  # tied output projection

    def forward(self, src, tgt_in):
        return self.decode(tgt_in, self.encode(src), src)


@torch.no_grad()
def greedy(model, sources, max_positions):
    model.eval()
    out = [None] * len(sources)
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    for start in range(0, len(order), 64):
        idx = order[start:start + 64]
        src = pad([sources[i] for i in idx])
        limit = min(max(2 * len(sources[i]) + 10 for i in idx), max_positions - 1)
        memory = model.encode(src)
        ys = torch.full((len(idx), 1), BOS, dtype=torch.long)
        done = torch.zeros(len(idx), dtype=torch.bool)
        for _ in range(limit):
            nxt = model.decode(ys, memory, src)[:, -1].argmax(-1)
            nxt = torch.where(done, torch.full_like(nxt, PAD), nxt)
            ys = torch.cat([ys, nxt.unsqueeze(1)], 1)
            done |= nxt == EOS
            if done.all():
                break
        for k, i in enumerate(idx):
            row = ys[k, 1:].tolist()
            out[i] = row[:row.index(EOS)] if EOS in row else row
    return out


def bleu(anatomy, hyps, refs):
    with tempfile.TemporaryDirectory() as tmp:
        h, r = os.path.join(tmp, "hyp.txt"), os.path.join(tmp, "ref.txt")
        for path, lines in ((h, hyps), (r, refs)):
            with open(path, "w", encoding="utf-8") as f:
                f.write("".join(line + "\n" for line in lines))
        text = subprocess.run([anatomy, "bleu", h, r], capture_output=True, text=True,
                              check=True).stdout.strip()
        score = json.loads(subprocess.run([anatomy, "bleu", "--format", "json", h, r],
                                          capture_output=True, text=True,
                                          check=True).stdout)["score"]
    return score, text


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", required=True, help="an anatomy train --corpus run folder")
    ap.add_argument("--time-budget", type=float, default=900, help="seconds of training")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads (default 1: PyTorch's fastest at these sizes here)")
    ap.add_argument("--anatomy", default="build/release/cli/anatomy",
                    help="the anatomy program (for tokenize and bleu)")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    # One torch thread is PyTorch's default here: at these sizes a second thread costs more in
    # hand-offs than it gains (W1 of docs/performance.md times both).
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    rng = random.Random(a.seed)
    run = lambda name: os.path.join(a.run, name)
    config = json.load(open(run("config.json")))
    run_json = json.load(open(run("run.json")))
    recipe = run_json["recipe"]
    split = {s: read_tsv(run(f"split/{s}.tsv")) for s in ("train", "valid", "test")}
    ids = {}
    for s, pairs in split.items():
        ids[s] = (tokenize(a.anatomy, run("source_tokenizer"), [p[0] for p in pairs]),
                  tokenize(a.anatomy, run("target_tokenizer"), [p[1] for p in pairs]))
    max_pos = config["max_position_embeddings"]
    keep = [i for i, (s, t) in enumerate(zip(*ids["train"])) if max(len(s), len(t) + 1) <= max_pos]
    train_src = [ids["train"][0][i] for i in keep]
    train_tgt = [ids["train"][1][i] for i in keep]
    vocab = read_vocab(run("target_tokenizer.vocab.txt"))
    print(f"{len(train_src)} training pairs, {len(split['valid'])} valid, {len(split['test'])} "
          f"test; torch {torch.__version__}, {torch.get_num_threads()} threads", flush=True)

    model = Translator(config)
    opt_cfg, sched = recipe["optimizer"], recipe["schedule"]
    opt = torch.optim.AdamW(model.parameters(), lr=1.0, betas=(opt_cfg["beta1"], opt_cfg["beta2"]),
                            eps=opt_cfg["eps"], weight_decay=opt_cfg["weight_decay"])
    d_model, warmup = sched["d_model"], sched["warmup"]
    # The run's schedule: the paper's (noam), or a warmup then a linear or cosine decay to zero at
    # the planned end, which a budget-long run re-plans from its pace after every epoch, as
    # anatomy's Trainer does.
    plan = {"total": max(sched["total_steps"], warmup)}
    if sched["name"] == "noam":
        factor = sched["factor"]
        lr_at = lambda s: factor * d_model ** -0.5 * min(max(s, 1) ** -0.5,
                                                         max(s, 1) * warmup ** -1.5)
    elif sched["name"] in ("linear", "cosine"):
        peak = opt_cfg["lr"]

        def lr_at(s):
            if s < warmup:
                return peak * s / warmup
            left = max(0.0, 1 - (s - warmup) / max(1, plan["total"] - warmup))
            return peak * (left if sched["name"] == "linear"
                           else 0.5 * (1 + math.cos(math.pi * (1 - left))))
    else:
        sys.exit(f"corpus_reference: unknown schedule {sched['name']!r}")
    schedule = torch.optim.lr_scheduler.LambdaLR(opt, lr_at)
    until_budget = run_json.get("epochs", 0) == 0
    print(f"model: {sum(p.numel() for p in model.parameters())} parameters", flush=True)

    def validate():
        model.eval()
        loss, tokens = 0.0, 0
        with torch.no_grad():
            src, tgt = ids["valid"]
            for rows in make_batches(src, tgt, recipe["max_tokens"], rng, shuffle=False):
                s = pad([src[r] for r in rows])
                t_in = pad([[BOS] + tgt[r] for r in rows])
                t_out = pad([tgt[r] + [EOS] for r in rows])
                logits = model(s, t_in)
                loss += F.cross_entropy(logits.flatten(0, 1), t_out.flatten(), ignore_index=PAD,
                                        reduction="sum").item()
                tokens += (t_out != PAD).sum().item()
        hyps = [decode(h, vocab) for h in greedy(model, src, max_pos)]
        score, _ = bleu(a.anatomy, hyps, [p[1] for p in split["valid"]])
        return loss / tokens, score

    started = time.time()
    last_eval, best, best_state, epoch, step = 0.0, -1.0, None, 0, 0
    stop = False
    while not stop:
        epoch += 1
        model.train()
        total, tokens, steps = 0.0, 0, 0
        for rows in make_batches(train_src, train_tgt, recipe["max_tokens"], rng):
            if time.time() - started + last_eval > a.time_budget:
                stop = True
                break
            s = pad([train_src[r] for r in rows])
            t_in = pad([[BOS] + train_tgt[r] for r in rows])
            t_out = pad([train_tgt[r] + [EOS] for r in rows])
            logits = model(s, t_in)
            loss = F.cross_entropy(logits.flatten(0, 1), t_out.flatten(), ignore_index=PAD,
                                   label_smoothing=recipe["label_smoothing"])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            if recipe["clip"] > 0:
                nn.utils.clip_grad_norm_(model.parameters(), recipe["clip"])
            opt.step()
            if until_budget and step >= 10:  # the steps the rest of the budget buys at this pace
                spent = time.time() - started
                left = max(0.0, a.time_budget - spent - last_eval)
                plan["total"] = max(warmup, step + int(left * step / spent))
            schedule.step()
            step, steps = step + 1, steps + 1
            n = (t_out != PAD).sum().item()
            total, tokens = total + loss.item() * n, tokens + n
        if steps == 0:  # stopped before this epoch's first step: nothing new to evaluate
            break
        t0 = time.time()
        valid_loss, score = validate()
        last_eval = time.time() - t0
        better = score > best
        if better:
            best, best_state = score, {k: v.clone() for k, v in model.state_dict().items()}
        print(f"epoch {epoch}{' (partial)' if stop else ''}  train loss "
              f"{total / max(tokens, 1):.4f}  valid loss {valid_loss:.4f}  BLEU {score:.2f}  "
              f"(step {step}, {time.time() - started:.0f} s){'  best' if better else ''}",
              flush=True)
    print(f"trained {time.time() - started:.0f} s ({step} steps)", flush=True)
    model.load_state_dict(best_state)
    t0 = time.time()
    hyps = [decode(h, vocab) for h in greedy(model, ids["test"][0], max_pos)]
    _, text = bleu(a.anatomy, hyps, [p[1] for p in split["test"]])
    print(f"test ({len(hyps)} pairs, greedy, best by validation BLEU): {text}  "
          f"({time.time() - t0:.0f} s to translate)", flush=True)


if __name__ == "__main__":
    sys.exit(main())
