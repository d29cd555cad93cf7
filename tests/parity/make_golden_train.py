#!/usr/bin/env python3
"""PyTorch reference for a whole training loop (tests/training/test_training_parity.cpp): a GPT-layout
character LM (no LayerNorm after the embeddings, no biases, tied embeddings, final LayerNorm)
trained for 40 steps the way `anatomy train --task lm` trains: AdamW with betas (0.9, 0.99) and
weight decay 0.1 on matrices only, linear warmup then cosine decay to lr / 10, gradients clipped
to norm 1.0. Records the initial weights, the batches, every step's loss, gradient norm and
learning rate, and the final weights, in tests/parity/golden/train.safetensors.

Run with the test environment's PyTorch 2.13:  make golden
"""
import math
import pathlib
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import book_transformer as bt  # noqa: E402
from golden_io import write_safetensors  # noqa: E402

STEPS, WARMUP, PEAK_LR, B, T, VOCAB, LAYERS = 40, 5, 3e-3, 4, 8, 20, 2

torch.manual_seed(3)
config = bt.make_config(vocab_size=VOCAB, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                        layer_norm_eps=1e-5, tie_word_embeddings=True, final_layer_norm=True,
                        embedding_layer_norm=False, bias=False)
model = bt.TransformerForCausalLM(config)
for name, p in model.named_parameters():  # GPT-2's init, as models::init_weights does it
    if p.dim() == 1:
        torch.nn.init.ones_(p)
    elif name.endswith("output_linear.weight") or name.endswith("linear_2.weight"):
        torch.nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * LAYERS))
    else:
        torch.nn.init.normal_(p, 0.0, 0.02)
out = {f"init.{k}": v.clone() for k, v in model.state_dict().items()}

decay = [p for p in model.parameters() if p.dim() >= 2]
no_decay = [p for p in model.parameters() if p.dim() < 2]
opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                         {"params": no_decay, "weight_decay": 0.0}], lr=PEAK_LR, betas=(0.9, 0.99))


def lr_at(step):
    if step < WARMUP:
        return PEAK_LR * step / WARMUP
    progress = (step - WARMUP) / (STEPS - WARMUP)
    return PEAK_LR / 10 + 0.5 * (1 + math.cos(math.pi * progress)) * (PEAK_LR - PEAK_LR / 10)


# A learnable stream: each next character is the previous one plus 1 or plus 3 (mod VOCAB).
stream = [0]
for _ in range(2000):
    stream.append((stream[-1] + (1 if torch.rand(()) < 0.7 else 3)) % VOCAB)
stream = torch.tensor(stream)
losses, norms, lrs, xs = [], [], [], []
model.train()
for step in range(STEPS):
    for g in opt.param_groups:
        g["lr"] = lr_at(step)
    starts = torch.randint(len(stream) - T - 1, (B,))
    x = torch.stack([stream[i:i + T] for i in starts])
    y = torch.stack([stream[i + 1:i + T + 1] for i in starts])
    loss = F.cross_entropy(model(x).view(-1, VOCAB), y.view(-1))
    opt.zero_grad()
    loss.backward()
    norms.append(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0).item())
    opt.step()
    losses.append(loss.item())
    lrs.append(lr_at(step))
    xs.append(torch.cat([x, y[:, -1:]], 1))

out["batches"] = torch.stack(xs)  # [STEPS, B, T + 1]: inputs are [:, :, :T], targets [:, :, 1:]
out["losses"] = torch.tensor(losses)
out["grad_norms"] = torch.tensor(norms)
out["lrs"] = torch.tensor(lrs)
out.update({f"final.{k}": v.clone() for k, v in model.state_dict().items()})

if __name__ == "__main__":
    path = pathlib.Path(__file__).parent / "golden" / "train.safetensors"
    write_safetensors(path, out)
    print(f"wrote {len(out)} tensors to {path}: loss {losses[0]:.4f} -> {losses[-1]:.4f} "
          f"(torch {torch.__version__})")
