#!/usr/bin/env python3
"""PyTorch reference for the learning-rate schedules (tests/nn/test_optim.cpp): torch's LambdaLR over
a real optimizer, stepped as a training loop steps it, with
  noam     the Transformer paper's formula, d_model^-0.5 * min(s^-0.5, s * warmup^-1.5) (step 0
           counts as 1), for the paper's setting and for the one `anatomy train` uses for a
           corpus (d_model 128, warmup 400, scaled so that its peak is 1e-3);
  linear   Hugging Face's get_linear_schedule_with_warmup;
  cosine   Hugging Face's get_cosine_schedule_with_warmup (min_lr 0), and nanoGPT's decay to a
           floor (min_lr 1e-4).
Every step's learning rate, in tests/parity/golden/schedules.safetensors.

Run with the test environment's PyTorch 2.13:  make golden
"""
import math
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from golden_io import write_safetensors  # noqa: E402


def record(base_lr, fn, steps):
    w = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([w], lr=base_lr)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, fn)
    lrs = [opt.param_groups[0]["lr"]]
    for _ in range(steps):
        opt.step()
        sched.step()
        lrs.append(opt.param_groups[0]["lr"])
    return torch.tensor(lrs, dtype=torch.float64)


def noam(d_model, warmup, factor):
    return lambda s: factor * d_model ** -0.5 * min(max(s, 1) ** -0.5, max(s, 1) * warmup ** -1.5)


def warmup_decay(warmup, total, cosine, floor):
    def fn(s):
        if s < warmup:
            return s / warmup
        progress = min(1.0, (s - warmup) / max(1, total - warmup))
        shape = 0.5 * (1 + math.cos(math.pi * progress)) if cosine else 1 - progress
        return floor + (1 - floor) * shape
    return fn


out = {
    # The paper: d_model 512, 4000 warmup steps, factor 1; 20000 steps.
    "noam_paper": record(1.0, noam(512, 4000, 1.0), 20000),
    # anatomy train --corpus: peak 1e-3 at step 400 for d_model 128.
    "noam_corpus": record(1.0, noam(128, 400, 1e-3 * math.sqrt(128 * 400)), 3000),
    "linear": record(1e-3, warmup_decay(100, 1100, False, 0.0), 1500),
    "cosine": record(1e-3, warmup_decay(50, 1000, True, 0.0), 1200),
    "cosine_floor": record(1e-3, warmup_decay(100, 2000, True, 0.1), 2200),
}
# float32 holds 7 digits: enough for a relative tolerance of 1e-6 at every magnitude here.
write_safetensors(str(pathlib.Path(__file__).parent / "golden" / "schedules.safetensors"),
                  {k: v.float() for k, v in out.items()})
print("wrote golden/schedules.safetensors:", {k: len(v) for k, v in out.items()})
