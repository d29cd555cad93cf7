#!/usr/bin/env python3
"""Reference values for scaled_dot_product_attention with an additive float bias, with the
semantics of PyTorch's F.scaled_dot_product_attention float attn_mask (added to the scaled
scores), computed by that function itself, alone and together with the book's 0/1 mask (which
enters as -inf).
Output, and the gradients of a weighted sum of it for query, key, value and the bias, in
golden/attention_bias.safetensors (tests/models/test_models.cpp).

Run with the test environment's PyTorch 2.13:  make golden
"""
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from golden_io import write_safetensors  # noqa: E402

torch.manual_seed(5)
B, H, Tq, Tk, D = 2, 3, 4, 5, 8
out = {}
q = torch.randn(B, H, Tq, D, requires_grad=True)
k = torch.randn(B, H, Tk, D, requires_grad=True)
v = torch.randn(B, H, Tk, D, requires_grad=True)
bias = torch.randn(1, H, Tq, Tk, requires_grad=True)   # broadcast over the batch
mask = torch.ones(B, 1, 1, Tk)
mask[1, :, :, 3:] = 0                                   # the second row's last keys are padding
weights = torch.randn(B, H, Tq, D)                      # loss = sum(out * weights)
for name in ("q", "k", "v", "bias", "mask", "weights"):
    out[name] = locals()[name].detach().clone()

cases = {
    "bias": bias,
    # the book's mask enters as -inf where it is 0
    "bias_mask": bias + torch.zeros(mask.shape).masked_fill(mask == 0, float("-inf")),
}
for name, attn in cases.items():
    for t in (q, k, v, bias):
        t.grad = None
    y = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=attn)
    (y * weights).sum().backward()
    out[f"{name}.out"] = y.detach()
    for t, n in ((q, "q"), (k, "k"), (v, "v"), (bias, "bias")):
        out[f"{name}.grad_{n}"] = t.grad.detach().clone()

path = pathlib.Path(__file__).parent / "golden" / "attention_bias.safetensors"
write_safetensors(path, out)
print("wrote", path)
