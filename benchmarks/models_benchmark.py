#!/usr/bin/env python3
"""The PyTorch side of W1, W2 and W4 (see models_benchmark.cpp). W1 and W2 use torch's own fused
modules (nn.Transformer, nn.TransformerEncoder), PyTorch's fastest way to build these models;
the embeddings are the book's (export/pytorch/model.py, the one PyTorch copy of the model). W4
is shakespeare_reference.py's model and step.

    PYTHONPATH=export/pytorch models_benchmark.py THREADS [W1|W2|W4] [--compile] [--flops]

--compile runs each model through torch.compile (Inductor's CPU backend), its optimizer step too;
the compiling happens in the warm-up, outside the timed runs. A workload that torch.compile
cannot compile prints `WORKLOAD compile failed: REASON` instead of a time. --flops prints, instead
of times, the floating-point operations of one step of each workload as PyTorch's FlopCounterMode
counts them (matrix products and attention, forward and backward): the same model on both sides,
so the benchmarks divide it by either side's time.
Runs with the test environment's PyTorch 2.13 (build/venv/bin/python, made by cmake/test-venv.sh).
"""
import argparse
import statistics
import sys
import time

import torch
from torch import nn

import shakespeare_reference as shakespeare

try:  # the one PyTorch model, export/pytorch/model.py: the scripts that run this put it on PYTHONPATH
    import model as book
except ModuleNotFoundError as e:
    if e.name != "model":
        raise
    sys.exit("models_benchmark.py: no module 'model' on PYTHONPATH; run it with "
             "PYTHONPATH=export/pytorch (bench_models.sh and bench_shakespeare.sh set it)")


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
    parser = argparse.ArgumentParser()
    parser.add_argument("threads", type=int, nargs="?", default=2)
    parser.add_argument("only", nargs="?", default="", choices=["", "W1", "W2", "W4"])
    parser.add_argument("--compile", action="store_true")
    parser.add_argument("--flops", action="store_true")
    args = parser.parse_intermixed_args()
    torch.set_num_threads(args.threads)
    for name, workload in (("W1", w1), ("W4", w4), ("W2", w2)):
        if args.only in ("", name):
            torch.manual_seed(0)
            try:
                workload(args.compile, args.flops)
            except Exception as e:  # noqa: BLE001  (any failure of the compiler: say which)
                if not args.compile:
                    raise
                reason = str(e).strip().splitlines()[0][:160] if str(e).strip() else type(e).__name__
                print(f"{name} compile failed: {reason}")
            sys.stdout.flush()


def measure(name, warmup, runs, f, count_flops):
    """Prints the workload's median time, or with count_flops its flops per call of f."""
    if count_flops:
        from torch.utils.flop_counter import FlopCounterMode

        f()  # the first call of a compiled or lazily built model is no typical step
        with FlopCounterMode(display=False) as counter:
            f()
        print(f"{name} flops: {counter.get_total_flops()}")
    else:
        print(f"{name} (ms): {median_ms(warmup, runs, f):.2f}")


def compiled(f, on):
    return torch.compile(f) if on else f


def w1(compile_it, count_flops):
    model = TorchSeq2Seq(1000, 128, 4, 512, 2, 64).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    src, tgt_in, tgt_out = (torch.randint(1, 1000, (32, 24)) for _ in range(3))

    def forward_loss():
        logits = model(src, tgt_in)
        return nn.functional.cross_entropy(logits.reshape(-1, 1000), tgt_out.reshape(-1))

    loss_of, opt_step = compiled(forward_loss, compile_it), compiled(opt.step, compile_it)

    def step():
        loss = loss_of()
        opt.zero_grad()
        loss.backward()
        opt_step()

    measure("W1 seq2seq training step", 3, 20, step, count_flops)


def w4(compile_it, count_flops):
    model = shakespeare.GPT(65, 128, 4, 4, 64, False).train()
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}], lr=1e-3, betas=(0.9, 0.99))
    x, y = torch.randint(0, 65, (12, 64)), torch.randint(0, 65, (12, 64))

    def forward_loss():
        return nn.functional.cross_entropy(model(x).view(-1, 65), y.view(-1))

    loss_of, opt_step = compiled(forward_loss, compile_it), compiled(opt.step, compile_it)

    def step():
        loss = loss_of()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt_step()

    measure("W4 Tiny Shakespeare training step", 3, 30, step, count_flops)


def w2(compile_it, count_flops):
    cfg = book.make_config(vocab_size=30522, hidden_size=768, num_attention_heads=12, num_hidden_layers=12,
                         intermediate_size=3072, max_position_embeddings=512)
    bert = nn.TransformerEncoder(nn.TransformerEncoderLayer(768, 12, 3072, activation="gelu", batch_first=True,
                                                            norm_first=True), 12).eval()
    emb = book.Embeddings(cfg).eval()
    ids = torch.randint(1, 30522, (1, 128))
    encode = compiled(lambda: bert(emb(ids)), compile_it)

    def infer():
        with torch.inference_mode():
            encode()

    if count_flops:
        # The fused fast path of an encoder in inference is one op that FlopCounterMode does not
        # look into; the composed ops it stands for do the same products.
        torch.backends.mha.set_fastpath_enabled(False)
    measure("W2 BERT-base encoder inference", 2, 10, infer, count_flops)


if __name__ == "__main__":
    main()
