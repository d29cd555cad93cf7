#!/usr/bin/python3
"""The PyTorch side of W1, W2 and W4 (see models_benchmark.cpp). W1 and W2 use torch's own fused
modules (nn.Transformer, nn.TransformerEncoder), PyTorch's fastest way to build these models;
the embeddings are the book's. W4 is shakespeare_reference.py's model and step.
Usage: models_benchmark.py THREADS [W1|W2|W4]"""
import pathlib
import statistics
import sys
import time

import openblas_core  # noqa: F401  (before torch: OpenBLAS's kernels for this CPU)
import torch
from torch import nn

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests" / "parity"))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import book_transformer as bt  # noqa: E402
import shakespeare_reference as shakespeare  # noqa: E402


def median_ms(warmup, runs, f):
    for _ in range(warmup):
        f()
    ms = []
    for _ in range(runs):
        t0 = time.perf_counter()
        f()
        ms.append((time.perf_counter() - t0) * 1000)
    return statistics.median(ms)


class TorchSeq2Seq(nn.Module):
    """W1 with torch's own fused nn.Transformer (pre-LN, GELU, batch_first), the fastest way
    PyTorch offers to build this model."""

    def __init__(self, vocab, d, heads, ffn, layers, max_len):
        super().__init__()
        self.src_tok = nn.Embedding(vocab, d)
        self.tgt_tok = nn.Embedding(vocab, d)
        self.src_pos = nn.Embedding(max_len, d)
        self.tgt_pos = nn.Embedding(max_len, d)
        self.transformer = nn.Transformer(d, heads, layers, layers, ffn, dropout=0.1, activation="gelu",
                                          batch_first=True, norm_first=True)
        self.generator = nn.Linear(d, vocab)

    def forward(self, src, tgt):
        pos_s = torch.arange(src.size(1)).unsqueeze(0)
        pos_t = torch.arange(tgt.size(1)).unsqueeze(0)
        mask = self.transformer.generate_square_subsequent_mask(tgt.size(1))
        h = self.transformer(self.src_tok(src) + self.src_pos(pos_s), self.tgt_tok(tgt) + self.tgt_pos(pos_t),
                             tgt_mask=mask)
        return self.generator(h)


def main():
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    only = sys.argv[2] if len(sys.argv) > 2 else ""  # W1, W2 or W4: that workload alone
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    if only in ("", "W1"):
        w1()
    if only in ("", "W4"):
        w4()
    if only in ("", "W2"):
        w2()


def w1():
    model = TorchSeq2Seq(1000, 128, 4, 512, 2, 64).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    src, tgt_in, tgt_out = (torch.randint(1, 1000, (32, 24)) for _ in range(3))

    def step():
        logits = model(src, tgt_in)
        loss = nn.functional.cross_entropy(logits.reshape(-1, 1000), tgt_out.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()

    print(f"W1 seq2seq training step (ms): {median_ms(3, 20, step):.2f}")


def w4():
    model = shakespeare.GPT(65, 128, 4, 4, 64, False).train()
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}], lr=1e-3, betas=(0.9, 0.99))
    x, y = torch.randint(0, 65, (12, 64)), torch.randint(0, 65, (12, 64))

    def step():
        loss = nn.functional.cross_entropy(model(x).view(-1, 65), y.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    print(f"W4 Tiny Shakespeare training step (ms): {median_ms(3, 30, step):.2f}")


def w2():
    cfg = bt.make_config(vocab_size=30522, hidden_size=768, num_attention_heads=12, num_hidden_layers=12,
                         intermediate_size=3072, max_position_embeddings=512)
    bert = nn.TransformerEncoder(nn.TransformerEncoderLayer(768, 12, 3072, activation="gelu", batch_first=True,
                                                            norm_first=True), 12).eval()
    emb = bt.Embeddings(cfg).eval()
    ids = torch.randint(1, 30522, (1, 128))

    def infer():
        with torch.inference_mode():
            bert(emb(ids))

    print(f"W2 BERT-base encoder inference (ms): {median_ms(2, 10, infer):.2f}")


if __name__ == "__main__":
    main()
