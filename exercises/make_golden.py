#!/usr/bin/env python3
"""PyTorch reference values of the exercises' checkers: exercises/golden.safetensors.

Run with the test environment's PyTorch 2.13:  make golden
Each exercise <name> gets <name>.<key> tensors: its fixed inputs, the module weights (book names,
as tests/parity/book_transformer.py writes them), the outputs and the gradients of
sum(output * grad_out)."""
import pathlib
import sys

import torch
import torch.nn.functional as F

here = pathlib.Path(__file__).parent
sys.path.insert(0, str(here.parent / "tests" / "parity"))
import book_transformer as bt  # noqa: E402
from golden_io import write_safetensors  # noqa: E402

torch.manual_seed(0)
out = {}


def put(name, **tensors):
    for k, v in tensors.items():
        out[f"{name}.{k}"] = v.detach().clone() if isinstance(v, torch.Tensor) else v


def backward(name, y, inputs, module=None):
    """Gradients of sum(y * grad_out) for the named float inputs and the module's parameters."""
    r = torch.randn(y.shape)
    (y * r).sum().backward()
    put(name, out=y, grad_out=r)
    for key, x in inputs.items():
        put(name, **{f"grad_{key}": x.grad})
    if module is not None:
        for k, p in module.named_parameters():
            put(name, **{f"pgrad.{k}": p.grad})
        for k, v in module.state_dict().items():
            put(name, **{f"param.{k}": v})


# 01 tanh: an elementwise op and its backward
x = (torch.randn(3, 4) * 1.5).requires_grad_()
put("01_tanh", x=x)
backward("01_tanh", torch.tanh(x), {"x": x})

# 02 softmax over the last dimension, forward and backward
x = (torch.randn(2, 3, 5) * 2).requires_grad_()
put("02_softmax", x=x)
backward("02_softmax", F.softmax(x, dim=-1), {"x": x})

# 03 layer norm over the last dimension (eps 1e-5), forward and backward
x = (torch.randn(2, 3, 6) * 2 + 1).requires_grad_()
w = (torch.rand(6) + 0.5).requires_grad_()
b = torch.randn(6).requires_grad_()
put("03_layer_norm", x=x, weight=w, bias=b)
backward("03_layer_norm", F.layer_norm(x, (6,), w, b, 1e-5), {"x": x, "weight": w, "bias": b})

# 04 scaled dot-product attention with a mask (0 = hidden); q, k, v all different, d_k = 64
q, k, v = (torch.randn(2, 4, 64).requires_grad_() for _ in range(3))
mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]]).float().unsqueeze(1)  # [2, 1, 4]: batch 1 pads 2
put("04_attention", q=q, k=k, v=v, mask=mask)
o, wts = bt.scaled_dot_product_attention(q, k, v, mask)
put("04_attention", weights=wts)
backward("04_attention", o, {"q": q, "k": k, "v": v})

# 05 multi-head attention from heads (E 32, 4 heads), cross-attention shapes
cfg = bt.make_config()
mha = bt.MultiHeadAttention(cfg).eval()
q_states, kv_states = torch.randn(2, 3, 32).requires_grad_(), torch.randn(2, 5, 32).requires_grad_()
put("05_multi_head", query=q_states, key_value=kv_states)
backward("05_multi_head", mha(q_states, kv_states), {"query": q_states, "key_value": kv_states}, mha)

# 06 the book's pre-LN encoder layer, with a padding mask
layer = bt.TransformerEncoderLayer(cfg).eval()
with torch.no_grad():  # gains and shifts that are not 1 and 0: a layer that ignores them fails
    for norm in (layer.layer_norm_1, layer.layer_norm_2):
        norm.weight.uniform_(0.5, 1.5)
        norm.bias.normal_(0, 0.5)
x = torch.randn(2, 5, 32).requires_grad_()
pad = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]]).float().unsqueeze(1)
put("06_encoder_layer", x=x, mask=pad)
backward("06_encoder_layer", layer(x, pad), {"x": x}, layer)

# 07 a pre-LN decoder layer: causal self-attention, then cross-attention over the encoder output
dec = bt.TransformerDecoderLayer(cfg).eval()
with torch.no_grad():
    for norm in (dec.layer_norm_1, dec.layer_norm_2, dec.layer_norm_3):
        norm.weight.uniform_(0.5, 1.5)
        norm.bias.normal_(0, 0.5)
x, memory = torch.randn(2, 4, 32).requires_grad_(), torch.randn(2, 6, 32).requires_grad_()
causal = torch.tril(torch.ones(4, 4))
memory_mask = torch.tensor([[1] * 6, [1, 1, 1, 1, 1, 0]]).float().unsqueeze(1)
put("07_decoder_layer", x=x, memory=memory, causal=causal, memory_mask=memory_mask)
backward("07_decoder_layer", dec(x, memory, causal, memory_mask), {"x": x, "memory": memory}, dec)

# 08 RMSNorm (LLaMA's: eps inside the square root); small inputs and eps 0.1 so eps matters
x = (torch.randn(2, 3, 8) * 0.3).requires_grad_()
w = (torch.rand(8) + 0.5).requires_grad_()
norm = torch.nn.RMSNorm(8, eps=0.1)
with torch.no_grad():
    norm.weight.copy_(w)
put("08_rms_norm", x=x, weight=w)
y = norm(x)
backward("08_rms_norm", y, {"x": x}, norm)

if __name__ == "__main__":
    write_safetensors(here / "golden.safetensors", out)
    print(f"wrote {len(out)} tensors to {here / 'golden.safetensors'} (torch {torch.__version__})")
