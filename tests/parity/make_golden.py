#!/usr/bin/env python3
"""Regenerates the PyTorch reference values for the parity tests (tests/autograd/test_parity.cpp).

Run with the test environment's PyTorch 2.13:  make golden  (or build/venv/bin/python tests/parity/make_golden.py)
Writes tests/parity/golden/autograd.safetensors. Each case below has a twin, one line, in the
C++ table of tests/autograd/test_parity.cpp; the names must match.
"""
import math
import pathlib
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from golden_io import fixed, ids, mask, positive, randn, run_cases, write_safetensors  # noqa: E402

X = (1, 5, 768)   # the chapter's embeddings: batch 1, 5 tokens, hidden 768
S = (1, 5, 5)     # the chapter's attention scores
causal = torch.tril(torch.ones(5, 5))

CASES = {
    # elementwise, with broadcasting
    "add": ([randn(*X), randn(*X)], lambda a, b: a + b),
    "add_bias": ([randn(*X), randn(768)], lambda a, b: a + b),
    "sub_broadcast": ([randn(*S), randn(5, 1)], lambda a, b: a - b),
    "mul": ([randn(*X), randn(*X)], lambda a, b: a * b),
    "mul_broadcast": ([randn(*S), randn(1, 1, 5)], lambda a, b: a * b),
    "div": ([randn(*X), positive(*X)], lambda a, b: a / b),
    "div_scalar": ([randn(*S)], lambda a: a / math.sqrt(768)),
    "rdiv": ([positive(2, 3)], lambda a: 2.0 / a),
    "rsub": ([randn(2, 3)], lambda a: 1.0 - a),
    "add_scalar": ([randn(2, 3)], lambda a: a + 0.75),
    "mul_scalar": ([randn(2, 3)], lambda a: a * -1.5),
    "sub_scalar": ([randn(2, 3)], lambda a: a - 2.5),
    # comparisons: 0/1 masks without gradient (PyTorch's bool, as float)
    "eq": ([fixed(torch.tensor([1., 2., 3., 2.])), fixed(torch.tensor([1., 3., 3., 1.]))], lambda a, b: (a == b).float()),
    "ne": ([fixed(torch.tensor([1., 2., 3., 2.])), fixed(torch.tensor([1., 3., 3., 1.]))], lambda a, b: (a != b).float()),
    "lt": ([fixed(torch.tensor([1., 2., 3., 2.])), fixed(torch.tensor([1., 3., 3., 1.]))], lambda a, b: (a < b).float()),
    "le": ([fixed(torch.tensor([1., 2., 3., 2.])), fixed(torch.tensor([1., 3., 3., 1.]))], lambda a, b: (a <= b).float()),
    "gt": ([fixed(torch.tensor([1., 2., 3., 2.])), fixed(torch.tensor([1., 3., 3., 1.]))], lambda a, b: (a > b).float()),
    "ge": ([fixed(torch.tensor([1., 2., 3., 2.])), fixed(torch.tensor([1., 3., 3., 1.]))], lambda a, b: (a >= b).float()),
    "gt_broadcast_scalar": ([fixed(torch.tensor([[0.5, -1.0, 2.0], [0.0, 0.7, -0.2]]))], lambda a: (a > 0.5).float()),
    "neg": ([randn(2, 3, 4)], lambda a: -a),
    "pow_scalar": ([positive(2, 3, 4)], lambda a: a ** 3),
    "pow_square": ([randn(*X)], lambda a: a ** 2),
    "pow_half": ([positive(2, 3)], lambda a: a ** 0.5),
    "pow_tensor": ([positive(2, 3), randn(2, 3)], lambda a, b: a ** b),
    "exp": ([randn(*X)], torch.exp),
    "log": ([positive(*X)], torch.log),
    "sqrt": ([positive(2, 3, 4)], torch.sqrt),
    "rsqrt": ([positive(2, 3, 4)], torch.rsqrt),
    "tanh": ([randn(*X)], torch.tanh),
    "sigmoid": ([randn(*X)], torch.sigmoid),
    "relu": ([randn(*X)], torch.relu),
    "gelu": ([randn(*X)], F.gelu),
    "gelu_tanh": ([randn(*X)], lambda a: F.gelu(a, approximate="tanh")),
    "abs": ([randn(2, 3, 4)], torch.abs),
    "clamp": ([randn(2, 3, 4)], lambda a: a.clamp(-0.5, 0.5)),
    "maximum": ([randn(2, 3, 4), randn(3, 4)], torch.maximum),
    "minimum": ([randn(2, 3, 4), randn(3, 4)], torch.minimum),
    "where": ([mask(2, 3, 4), randn(2, 3, 4), randn(4)], lambda c, a, b: torch.where(c > 0, a, b)),
    "masked_fill": ([randn(*S)], lambda a: a.masked_fill(causal == 0, -1e9)),
    "tril": ([randn(*S)], torch.tril),
    "triu": ([randn(*S)], lambda a: torch.triu(a, 1)),
    # reductions
    "sum_all": ([randn(*X)], lambda a: a.sum()),
    "sum_dim": ([randn(*X)], lambda a: a.sum(-1)),
    "sum_dims_keepdim": ([randn(2, 3, 4)], lambda a: a.sum((0, 2), keepdim=True)),
    "mean_dim": ([randn(*X)], lambda a: a.mean(-1, keepdim=True)),
    "mean_all": ([randn(2, 3, 4)], lambda a: a.mean()),
    "var_dim": ([randn(*X)], lambda a: a.var(-1)),
    "var_biased": ([randn(2, 3, 4)], lambda a: a.var(1, unbiased=False)),
    "max_dim": ([randn(3, 4)], lambda a: a.max(1).values),
    "min_dim_keepdim": ([randn(3, 4)], lambda a: a.min(0, keepdim=True).values),
    "amax": ([randn(2, 3, 4)], lambda a: a.amax((1, 2))),
    "max_all": ([randn(2, 3, 4)], lambda a: a.max()),
    "amin": ([randn(2, 3, 4)], lambda a: a.amin((0, 2))),
    "min_all": ([randn(2, 3, 4)], lambda a: a.min()),
    "argmax_dim": ([randn(3, 5)], lambda a: a.detach().argmax(1)),
    "argmin_dim": ([randn(3, 5)], lambda a: a.detach().argmin(1)),
    "argmin_all": ([randn(3, 5)], lambda a: a.detach().argmin()),
    "logsumexp": ([randn(*S)], lambda a: a.logsumexp(-1)),
    # linear algebra
    "matmul_2d": ([randn(5, 768), randn(768, 64)], torch.matmul),
    "matmul_3d_2d": ([randn(*X), randn(768, 64)], torch.matmul),
    "matmul_qk": ([randn(1, 5, 64), randn(1, 5, 64)], lambda q, k: q @ k.transpose(1, 2)),
    "bmm": ([randn(*S), randn(1, 5, 64)], torch.bmm),
    "mm": ([randn(5, 7), randn(7, 3)], torch.mm),
    "matmul_broadcast": ([randn(2, 1, 5, 8), randn(3, 8, 4)], torch.matmul),
    "matmul_vec_mat": ([randn(768), randn(768, 64)], torch.matmul),
    "matmul_mat_vec": ([randn(5, 768), randn(768)], torch.matmul),
    "dot": ([randn(8), randn(8)], torch.matmul),
    "linear": ([randn(*X), randn(64, 768), randn(64)], F.linear),
    "linear_no_bias": ([randn(2, 3, 8), randn(4, 8)], F.linear),
    "linear_transposed_input": ([randn(8, 3), randn(4, 8), randn(4)], lambda x, w, b: F.linear(x.t(), w, b)),
    # views
    "transpose": ([randn(*X)], lambda a: a.transpose(1, 2)),
    "permute": ([randn(2, 3, 4)], lambda a: a.permute(2, 0, 1)),
    "split_heads": ([randn(*X)], lambda a: a.view(1, 5, 12, 64).transpose(1, 2)),
    "reshape_noncontiguous": ([randn(2, 3, 4)], lambda a: a.transpose(0, 2).reshape(4, 6)),
    "flatten": ([randn(2, 3, 4)], lambda a: a.flatten(1)),
    "squeeze_unsqueeze": ([randn(2, 1, 4)], lambda a: a.squeeze(1).unsqueeze(0)),
    "expand": ([randn(3, 1)], lambda a: a.expand(2, 3, 4)),
    "select_first_token": ([randn(*X)], lambda a: a[:, 0, :]),
    "slice_step": ([randn(*X)], lambda a: a[:, 1:4:2]),
    "narrow": ([randn(4, 6)], lambda a: a.narrow(1, 2, 3)),
    "split": ([randn(2, 6)], lambda a: a.split(4, 1)[1]),
    "split_sizes": ([randn(2, 9)], lambda a: torch.cat([p * (i + 1) for i, p in enumerate(a.split([2, 3, 4], 1))], 1)),
    "chunk": ([randn(2, 6)], lambda a: torch.chunk(a, 3, 1)[2]),
    # indexing
    "index_select": ([randn(5, 4), fixed(torch.tensor([4, 0, 4, 2]))], lambda a, i: a.index_select(0, i)),
    "gather": ([randn(3, 5), fixed(torch.tensor([[0, 4], [1, 1], [3, 2]]))], lambda a, i: a.gather(1, i)),
    "cat": ([randn(2, 3), randn(2, 5)], lambda a, b: torch.cat([a, b], 1)),
    "stack": ([randn(2, 3), randn(2, 3)], lambda a, b: torch.stack([a, b], 1)),
    # torch.nn.functional
    "softmax": ([randn(*S)], lambda a: F.softmax(a, dim=-1)),
    "softmax_dim1": ([randn(2, 3, 4)], lambda a: F.softmax(a, dim=1)),
    "log_softmax": ([randn(*X)], lambda a: F.log_softmax(a, dim=-1)),
    "layer_norm": ([randn(*X), randn(768), randn(768)], lambda x, w, b: F.layer_norm(x, (768,), w, b, 1e-12)),
    "layer_norm_2d_no_affine": ([randn(2, 3, 4)], lambda x: F.layer_norm(x, (3, 4))),
    "dropout_eval": ([randn(*X)], lambda a: F.dropout(a, 0.1, training=False)),
    "embedding": ([ids(50, 1, 5), randn(50, 32)], lambda i, w: F.embedding(i, w)),
    "embedding_padding": ([fixed(torch.tensor([[0, 3, 0, 7]])), randn(10, 6)], lambda i, w: F.embedding(i, w, padding_idx=0)),
    "cross_entropy": ([randn(4, 10), ids(10, 4)], F.cross_entropy),
    "cross_entropy_ignore": ([randn(4, 10), fixed(torch.tensor([3, -100, 9, 0]))], F.cross_entropy),
    "cross_entropy_smoothing": ([randn(4, 10), fixed(torch.tensor([3, 1, -100, 0]))], lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1)),
    "cross_entropy_sum": ([randn(4, 10), ids(10, 4)], lambda x, t: F.cross_entropy(x, t, reduction="sum")),
    "cross_entropy_none": ([randn(4, 10), ids(10, 4)], lambda x, t: F.cross_entropy(x, t, reduction="none")),
    "cross_entropy_3d": ([randn(2, 7, 3, 4), ids(7, 2, 3, 4)], F.cross_entropy),
    "mse_loss": ([randn(3, 4), randn(3, 4)], F.mse_loss),
    "mse_loss_sum": ([randn(3, 4), randn(3, 4)], lambda a, b: F.mse_loss(a, b, reduction="sum")),
    "mse_loss_none": ([randn(3, 4), randn(3, 4)], lambda a, b: F.mse_loss(a, b, reduction="none")),
    # the chapter's scaled dot-product attention with the causal mask, composed from the ops
    "causal_attention": (
        [randn(1, 5, 64), randn(1, 5, 64), randn(1, 5, 64)],
        lambda q, k, v: F.softmax((q @ k.transpose(1, 2) / math.sqrt(64)).masked_fill(causal == 0, float("-inf")), -1) @ v),
    # a gain but no shift: nn.LayerNorm(bias=False), nanoGPT's layers
    "layer_norm_no_bias": ([randn(2, 5, 16), randn(16)], lambda x, w: F.layer_norm(x, (16,), w, None, 1e-5)),
    # the fused linear + GELU (ours: linear_gelu) is F.gelu(F.linear(...)): a sentence's rows; more
    # rows than one M block and K over one K slice (the activation goes on the last slice's sums);
    # the tanh form without a bias
    "linear_gelu": ([randn(2, 5, 24), randn(40, 24), randn(40)], lambda x, w, b: F.gelu(F.linear(x, w, b))),
    "linear_gelu_long": ([randn(2, 70, 300), randn(50, 300), randn(50)], lambda x, w, b: F.gelu(F.linear(x, w, b))),
    "linear_gelu_tanh_no_bias": ([randn(7, 24), randn(40, 24)], lambda x, w: F.gelu(F.linear(x, w), approximate="tanh")),
}

if __name__ == "__main__":
    out = pathlib.Path(__file__).parent / "golden" / "autograd.safetensors"
    write_safetensors(out, run_cases(CASES))
    print(f"wrote {len(CASES)} cases to {out} (torch {torch.__version__})")
