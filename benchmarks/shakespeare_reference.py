#!/usr/bin/env python3
"""nanoGPT's shakespeare_char CPU recipe in PyTorch, as the side-by-side reference for the
Tiny Shakespeare learning target (docs/training.md).

It trains the same model the same way `anatomy train --task lm` does (4 layers, 4 heads, hidden
128, block 64, batch 12, 2000 iterations, no dropout, AdamW lr 1e-3 -> cosine to 1e-4 after 100
warmup steps, betas (0.9, 0.99), weight decay 0.1 on matrices, clip 1.0, tied embeddings, GPT-2
init) and estimates the validation loss on the last 10% of the text the same way: 50 fixed batches
of random windows every iters / 8 steps on the way (as `anatomy train` reports its progress, so
that both sides do the same work), and 200 at the end. --compile runs the model through
torch.compile, as nanoGPT's --compile does. Run it with the test environment's PyTorch (a test
oracle, never a runtime dependency; cmake/test-venv.sh makes it):

    build/venv/bin/python benchmarks/shakespeare_reference.py ../shared/data/tinyshakespeare/input.txt
"""
import argparse
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class LayerNorm(nn.Module):
    """LayerNorm with an optional bias, written out as nanoGPT's model.py writes it."""

    def __init__(self, n, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.bias = nn.Parameter(torch.zeros(n)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class Block(nn.Module):
    def __init__(self, d, heads, bias):
        super().__init__()
        self.heads = heads
        self.ln_1, self.ln_2 = LayerNorm(d, bias), LayerNorm(d, bias)
        self.qkv = nn.Linear(d, 3 * d, bias=bias)
        self.proj = nn.Linear(d, d, bias=bias)
        self.fc = nn.Linear(d, 4 * d, bias=bias)
        self.fc_proj = nn.Linear(4 * d, d, bias=bias)

    def attention(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        att = att.masked_fill(~causal, float("-inf")).softmax(dim=-1)
        return self.proj((att @ v).transpose(1, 2).reshape(B, T, C))

    def forward(self, x):
        x = x + self.attention(self.ln_1(x))
        return x + self.fc_proj(F.gelu(self.fc(self.ln_2(x))))


class GPT(nn.Module):
    def __init__(self, vocab, d, heads, layers, block, bias):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(block, d)
        self.blocks = nn.ModuleList(Block(d, heads, bias) for _ in range(layers))
        self.ln_f = LayerNorm(d, bias)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.wte.weight
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif p.dim() == 1:
                nn.init.ones_(p)
            elif name.endswith("proj.weight"):
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * layers))
            else:
                nn.init.normal_(p, 0.0, 0.02)

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.size(1)))
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln_f(x))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("text")
    ap.add_argument("--iters", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1337)
    ap.add_argument("--bias", type=int, default=0, help="1: biases in Linear and LayerNorm")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--compile", action="store_true", help="torch.compile the model")
    ap.add_argument("--lr", type=float, default=1e-3, help="peak learning rate (min_lr is lr / 10)")
    ap.add_argument("--eval-every", type=int, default=0,
                    help="steps between the 50-batch estimates (default max(iters / 8, 50), "
                    "anatomy train's; a negative number: none)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    text = open(args.text, encoding="utf-8").read()
    chars = sorted(set(text))
    index = {c: i for i, c in enumerate(chars)}
    ids = torch.tensor([index[c] for c in text])
    n = int(len(ids) * 0.9)
    train, val = ids[:n], ids[n:]
    B, T = 12, 64
    model = GPT(len(chars), 128, 4, 4, T, bool(args.bias))
    forward = torch.compile(model) if args.compile else model
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}], lr=args.lr,
                            betas=(0.9, 0.99))

    def batch(data, g=None):
        i = torch.randint(len(data) - T, (B,), generator=g)
        return (torch.stack([data[j:j + T] for j in i]),
                torch.stack([data[j + 1:j + T + 1] for j in i]))

    def lr_at(it, warmup=100, peak=args.lr, low=args.lr / 10):
        if it < warmup:
            return peak * it / warmup
        progress = min(1.0, (it - warmup) / (args.iters - warmup))
        return low + 0.5 * (1.0 + math.cos(math.pi * progress)) * (peak - low)

    def estimate(batches):
        model.eval()
        g = torch.Generator().manual_seed(1234)  # the same windows every time, as ours
        with torch.no_grad():
            losses = [F.cross_entropy(forward(x).view(-1, len(chars)), y.view(-1)).item()
                      for x, y in (batch(val, g) for _ in range(batches))]
        model.train()
        return sum(losses) / len(losses)

    eval_every = args.eval_every or max(args.iters // 8, 50)
    start = time.time()
    for it in range(args.iters):
        for group in opt.param_groups:
            group["lr"] = lr_at(it)
        x, y = batch(train)
        loss = F.cross_entropy(forward(x).view(-1, len(chars)), y.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step = it + 1
        if eval_every > 0 and step % eval_every == 0 and step < args.iters:
            print(f"step {step}/{args.iters}  valid loss {estimate(50):.4f}", flush=True)
    loss = estimate(200)
    print(f"pytorch {torch.__version__} threads={args.threads} compile={args.compile} "
          f"bias={args.bias} seed={args.seed} lr={args.lr}: "
          f"validation loss {loss:.4f} after {args.iters} iterations, "
          f"{time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
