#!/usr/bin/env python3
"""W3's PyTorch side (issue 12): greedy and beam-search translation with the same model as
`anatomy translate`, written as a PyTorch user would: a decoding loop with a KV cache, every
sentence of a batch (and every beam of it) one row of each step's batch, 256 rows a batch.

The model is the run exported by `anatomy export` (model.py's classes, the run's weights). The
loop reads the per-head weights once, stacked into one projection per attention (as
nn.MultiheadAttention keeps them), and runs each decoder step on the newest token only:
self-attention keys and values are appended to a cache, cross-attention's are computed once.
Beam search is Hugging Face's batched form: scores [B, beam, V] flattened, topk of 2·beam per
sentence, finished hypotheses kept aside, the cache reordered by the surviving beams. The rules
are anatomy's (generation/generation.cpp): a sentence stops once beam hypotheses have ended, or at
its length limit (2·source + 10); scores are divided by ((5 + length) / 6)^alpha, alpha being
--length-penalty (anatomy translate's option of that name).

    anatomy export --checkpoint RUN --to EXPORT
    decode_reference.py --export EXPORT --anatomy build/.../anatomy --input src.txt --beam 4 \\
        --output hyps.txt
It prints the decoding time (tokenizing and loading excluded) as `decode_seconds: S`, or with
--count-flops the floating-point operations the sentences need, as `flops: N`: FlopCounterMode's
count, each decoder step's share taken for the rows still open only (the rows of a sentence that
has ended, or of a beam not yet opened, idle along here, and anatomy drops them), so that the
count is of the same work for both programs and neither reaches more than it does.

--compile runs the encoder and the decoder's step through torch.compile with dynamic shapes (the
batch and the cache grow), and decodes the first batch once before the timed run, so that the
compiling is not timed. Where torch.compile fails it prints `compile failed: REASON` and no time.
Runs with the test environment's PyTorch 2.13 (build/venv/bin/python, made by cmake/test-venv.sh).
"""
import argparse
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

from corpus_reference import decode as detokenize, read_vocab, tokenize  # the same helpers

ROWS = 256  # rows of a decoding batch, as anatomy's Translator: 256 sentences, or 256 / beam


class OpenRowFlops:
    """With --count-flops: the decoder steps' flops, whole and in the share of their open rows.
    A step's products are row by row (each row's token, its cache, its source), so a step of n
    rows with m open costs m / n of its count for the open ones."""

    def __init__(self, counter):
        self.counter, self.steps, self.open = counter, 0, 0.0

    def step(self, run, rows, open_rows):
        before = self.counter.get_total_flops()
        out = run()
        flops = self.counter.get_total_flops() - before
        self.steps += flops
        self.open += flops * open_rows / rows
        return out


class CachedDecoder:
    """model.decoder and model.generator, one token at a time."""

    def __init__(self, model):
        dec = model.decoder
        self.model, self.dec = model, dec
        self.heads = len(dec.layers[0].self_attention.heads)

        def stack(att):
            cat = lambda name, what: torch.cat([getattr(getattr(h, name), what) for h in att.heads])
            return dict(wq=cat("q", "weight"), bq=cat("q", "bias"),
                        wkv=torch.cat([cat("k", "weight"), cat("v", "weight")]),
                        bkv=torch.cat([cat("k", "bias"), cat("v", "bias")]),
                        wo=att.output_linear.weight, bo=att.output_linear.bias)

        self.layers = [(layer, stack(layer.self_attention), stack(layer.cross_attention))
                       for layer in dec.layers]

    def split(self, x):  # [N, T, E] -> [N, H, T, D]
        N, T, E = x.shape
        return x.view(N, T, self.heads, E // self.heads).transpose(1, 2)

    def attend(self, w, h, cache, memory=None, mask=None):
        q = self.split(F.linear(h, w["wq"], w["bq"]))
        if memory is None:  # self-attention: append the new key and value
            k, v = F.linear(h, w["wkv"], w["bkv"]).chunk(2, dim=-1)
            k, v = self.split(k), self.split(v)
            if "k" in cache:
                k, v = torch.cat([cache["k"], k], 2), torch.cat([cache["v"], v], 2)
            cache["k"], cache["v"] = k, v
        elif "k" not in cache:  # cross-attention: the encoder's keys and values, once
            k, v = F.linear(memory, w["wkv"], w["bkv"]).chunk(2, dim=-1)
            cache["k"], cache["v"] = self.split(k), self.split(v)
        scores = q @ cache["k"].transpose(-2, -1) / math.sqrt(q.size(-1))
        if mask is not None:
            scores = scores.masked_fill(mask.unsqueeze(1) == 0, float("-inf"))
        out = torch.softmax(scores, -1) @ cache["v"]
        N, H, T, D = out.shape
        return F.linear(out.transpose(1, 2).reshape(N, T, H * D), w["wo"], w["bo"])

    def step(self, tokens, position, memory, mask, cache):
        """tokens [N] at `position` -> next-token logits [N, V]."""
        emb = self.dec.embeddings
        x = emb.token_embeddings(tokens[:, None])
        x = x + (emb.pe[position] if emb.sinusoidal else emb.position_embeddings.weight[position])
        x = emb.layer_norm(x)
        if not cache:
            cache.extend(({}, {}) for _ in self.layers)
        for (layer, self_w, cross_w), (self_c, cross_c) in zip(self.layers, cache):
            ff_norm = layer.layer_norm_3
            if layer.pre:
                h = layer.layer_norm_1(x)
                x = x + self.attend(self_w, h, self_c)
                h = layer.layer_norm_2(x)
                x = x + self.attend(cross_w, h, cross_c, memory, mask)
                x = x + layer.feed_forward(ff_norm(x))
            else:
                x = layer.layer_norm_1(x + self.attend(self_w, x, self_c))
                x = layer.layer_norm_2(x + self.attend(cross_w, x, cross_c, memory, mask))
                x = ff_norm(x + layer.feed_forward(x))
        if hasattr(self.dec, "layer_norm"):
            x = self.dec.layer_norm(x)
        return self.model.generator(x[:, -1])


def reorder(cache, rows):
    for pair in cache:
        for c in pair:
            c["k"], c["v"] = c["k"].index_select(0, rows), c["v"].index_select(0, rows)


def greedy(dec, memory, mask, limits, bos, eos, count=None):
    B = memory.size(0)
    cache, out = [], [[] for _ in range(B)]
    done = [False] * B
    tokens = torch.full((B,), bos, dtype=torch.long)
    for t in range(max(limits)):
        run = lambda: dec.step(tokens, t, memory, mask, cache)  # noqa: E731
        logits = count.step(run, B, done.count(False)) if count else run()
        nxt = logits.argmax(-1)
        ids = nxt.tolist()
        for b in range(B):
            if not done[b]:
                if ids[b] == eos:
                    done[b] = True
                else:
                    out[b].append(ids[b])
                    done[b] = len(out[b]) >= limits[b]
        if all(done):
            break
        tokens = torch.where(torch.tensor(done), torch.full_like(nxt, eos), nxt)
    return out


def beam_search(dec, memory, mask, limits, bos, eos, K, alpha=0.6, count=None):
    B = memory.size(0)
    memory = memory.repeat_interleave(K, 0)
    mask = mask.repeat_interleave(K, 0)
    scores = torch.full((B, K), float("-inf"))
    scores[:, 0] = 0.0  # one open beam to start with
    hyps = [[[] for _ in range(K)] for _ in range(B)]
    finished = [[] for _ in range(B)]  # (normalized score, tokens)
    done = [False] * B
    tokens = torch.full((B * K,), bos, dtype=torch.long)
    cache = []

    def norm(logp, length):
        return logp / ((5 + length) / 6) ** alpha

    for t in range(max(limits)):
        run = lambda: dec.step(tokens, t, memory, mask, cache)  # noqa: E731
        if count:  # open: the beams with a score, of the sentences still searching
            live = torch.tensor([not d for d in done])
            logits = count.step(run, B * K, int((scores > float("-inf"))[live].sum()))
        else:
            logits = run()
        logp = torch.log_softmax(logits, -1)
        V = logp.size(-1)
        cand = (scores.view(-1, 1) + logp).view(B, K * V)
        top_scores, top_idx = cand.topk(2 * K, dim=1)
        top_scores, top_idx = top_scores.tolist(), top_idx.tolist()
        rows, next_tokens, next_scores, next_hyps = [], [], [], []
        for b in range(B):
            keep = []
            if not done[b]:
                for score, idx in zip(top_scores[b], top_idx[b]):
                    if len(keep) == K:
                        break
                    beam, tok = divmod(idx, V)
                    if score == float("-inf"):
                        break
                    if tok == eos:
                        if len(finished[b]) < K:
                            toks = hyps[b][beam]
                            finished[b].append((norm(score, len(toks) + 1), toks))
                        continue
                    keep.append((score, beam, tok))
                if len(finished[b]) >= K:
                    done[b] = True
                elif not keep or t + 1 >= limits[b]:
                    finished[b] += [(norm(s, len(hyps[b][beam]) + 1), hyps[b][beam] + [tok])
                                    for s, beam, tok in keep]
                    done[b] = True
            if done[b]:  # rows of a finished sentence idle along
                keep = []
            keep += [(float("-inf"), 0, eos)] * (K - len(keep))
            for score, beam, tok in keep:
                rows.append(b * K + beam)
                next_tokens.append(tok)
                next_scores.append(score)
                next_hyps.append(hyps[b][beam] + [tok])
        if all(done):
            break
        hyps = [next_hyps[b * K:(b + 1) * K] for b in range(B)]
        scores = torch.tensor(next_scores).view(B, K)
        tokens = torch.tensor(next_tokens)
        rows = torch.tensor(rows)
        memory, mask = memory.index_select(0, rows), mask.index_select(0, rows)
        reorder(cache, rows)
    return [max(f, key=lambda x: x[0])[1] if f else [] for f in finished]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--export", required=True, help="a folder written by `anatomy export`")
    p.add_argument("--anatomy", required=True, help="the anatomy program (for its tokenizer)")
    p.add_argument("--input", required=True, help="one source sentence a line")
    p.add_argument("--beam", type=int, default=1)
    p.add_argument("--length-penalty", type=float, default=0.6,
                   help="GNMT's length normalization exponent (default 0.6)")
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    p.add_argument("--compile", action="store_true", help="torch.compile the encoder and the step")
    p.add_argument("--count-flops", action="store_true",
                   help="print the flops the sentences need as `flops: N` (open rows only) and "
                        "the whole batches' as `flops_all_rows: N`, and no time")
    p.add_argument("--output", help="the translations, one a line")
    a = p.parse_args()
    sys.path.insert(0, a.export)
    import model as book
    import safetensors_io
    if a.threads:
        torch.set_num_threads(a.threads)
    config = book.load_config(os.path.join(a.export, "config.json"))
    model = book.build(config, "translation")
    model.load_state_dict(safetensors_io.load(os.path.join(a.export, "model.safetensors"))[0])
    model.eval()
    vocab = read_vocab(os.path.join(a.export, "target_tokenizer.vocab.txt"))
    bos, eos = vocab.index("[BOS]"), vocab.index("[EOS]")
    with open(a.input, encoding="utf-8") as f:
        texts = f.read().splitlines()
    ids = tokenize(a.anatomy, os.path.join(a.export, "source_tokenizer"), texts)
    dec = CachedDecoder(model)
    encode = model.encode
    if a.compile:
        dec.step = torch.compile(dec.step, dynamic=True)
        encode = torch.compile(model.encode, dynamic=True)
    out = [None] * len(ids)
    order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))  # longest first, as anatomy's
    per_batch = max(1, ROWS // max(a.beam, 1))
    batches = [order[first:first + per_batch] for first in range(0, len(order), per_batch)]

    def translate(idx, count=None):
        width = max(len(ids[i]) for i in idx)
        src = torch.tensor([ids[i] + [config.pad_token_id] * (width - len(ids[i])) for i in idx])
        limits = [min(2 * len(ids[i]) + 10, config.max_position_embeddings - 1) for i in idx]
        memory, mask = encode(src)
        rows = greedy(dec, memory, mask, limits, bos, eos, count) if a.beam <= 1 else \
            beam_search(dec, memory, mask, limits, bos, eos, a.beam, a.length_penalty, count)
        for i, r in zip(idx, rows):
            out[i] = detokenize(r, vocab)

    with torch.no_grad():
        if a.compile:
            try:
                translate(batches[0])
            except Exception as e:  # noqa: BLE001  (any failure of the compiler: say which)
                reason = str(e).strip().splitlines()[0][:160] if str(e).strip() else type(e).__name__
                print(f"compile failed: {reason}")
                return
        if a.count_flops:
            from torch.utils.flop_counter import FlopCounterMode

            with FlopCounterMode(display=False) as counter:
                count = OpenRowFlops(counter)
                for idx in batches:
                    translate(idx, count)
            total = counter.get_total_flops()
            print(f"flops: {round(total - count.steps + count.open)}")
            print(f"flops_all_rows: {total}")
        else:
            start = time.perf_counter()
            for idx in batches:
                translate(idx)
            print(f"decode_seconds: {time.perf_counter() - start:.3f}")
    if a.output:
        with open(a.output, "w", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in out))


if __name__ == "__main__":
    main()
