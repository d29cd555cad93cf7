#!/usr/bin/env python3
"""PyTorch reference values for the nn layer (tests/nn/test_nn_parity.cpp, tests/nn/test_optim.cpp).

Run with the test environment's PyTorch 2.13:  make golden
Writes tests/parity/golden/nn.safetensors:
  module cases  <case>.param.<name> (the module's state_dict, loaded by name into ours),
                <case>.in0, .out, .grad_out, .grad0, <case>.pgrad.<name>
  optimizers    opt.<case>.p<i> initial parameters, opt.<case>.g<step>.<i> the gradient fed at
                each of 10 steps, opt.<case>.final.<i> the parameters after them
  clipping      clip.g<i>, clip.clipped<i>, clip.norm
"""
import pathlib
import sys

import torch
from torch import nn

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from golden_io import write_safetensors, randomize_norms  # noqa: E402

torch.manual_seed(0)
out = {}


def module_case(name, module, x, train=False, loss_target=None):
    module.train(train)
    randomize_norms(module)
    for k, v in module.state_dict().items():
        out[f"{name}.param.{k}"] = v
    if x.is_floating_point():
        x = x.clone().requires_grad_()
    y = module(x) if loss_target is None else module(x, loss_target)
    out[f"{name}.in0"] = x
    if loss_target is not None:
        out[f"{name}.in1"] = loss_target
    out[f"{name}.out"] = y
    r = torch.randn(y.shape)
    (y * r).sum().backward()
    out[f"{name}.grad_out"] = r
    if x.grad is not None:
        out[f"{name}.grad0"] = x.grad
    for k, p in module.named_parameters():
        out[f"{name}.pgrad.{k}"] = p.grad


module_case("linear", nn.Linear(768, 64), torch.randn(1, 5, 768))
module_case("linear_no_bias", nn.Linear(8, 4, bias=False), torch.randn(2, 3, 8))
module_case("embedding", nn.Embedding(50, 16, padding_idx=0), torch.tensor([[0, 3, 7, 0, 49]]))
module_case("layer_norm", nn.LayerNorm(768, eps=1e-12), torch.randn(1, 5, 768))
module_case("gelu", nn.GELU(), torch.randn(2, 7))
module_case("relu", nn.ReLU(), torch.randn(2, 7))
module_case("softmax", nn.Softmax(dim=-1), torch.randn(1, 5, 5))
module_case("dropout_eval", nn.Dropout(0.1), torch.randn(2, 7))
module_case("sequential", nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 8), nn.Dropout(0.1)),
            torch.randn(3, 16))
module_case("cross_entropy_loss", nn.CrossEntropyLoss(ignore_index=0, label_smoothing=0.1),
            torch.randn(6, 9), loss_target=torch.tensor([0, 3, 8, 1, 0, 2]))
module_case("mse_loss", nn.MSELoss(), torch.randn(3, 4), loss_target=torch.randn(3, 4))

OPTIMIZERS = {
    "sgd": lambda p: torch.optim.SGD(p, lr=0.1),
    "sgd_momentum_wd": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=0.01),
    "sgd_nesterov": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.8, nesterov=True),
    "sgd_dampening": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.5, dampening=0.3),
    "adam": lambda p: torch.optim.Adam(p, lr=0.01),
    "adam_l2": lambda p: torch.optim.Adam(p, lr=0.01, betas=(0.8, 0.99), weight_decay=0.1),
    "adamw": lambda p: torch.optim.AdamW(p, lr=0.01, weight_decay=0.1),
}
for name, make in OPTIMIZERS.items():
    params = [torch.randn(4, 5, requires_grad=True), torch.randn(5, requires_grad=True)]
    for i, p in enumerate(params):
        out[f"opt.{name}.p{i}"] = p.detach().clone()
    opt = make(params)
    for step in range(10):
        for i, p in enumerate(params):
            g = torch.randn(p.shape)
            out[f"opt.{name}.g{step}.{i}"] = g
            p.grad = g.clone()
        opt.step()
    for i, p in enumerate(params):
        out[f"opt.{name}.final.{i}"] = p.detach().clone()

clip_params = [torch.randn(3, 4, requires_grad=True), torch.randn(7, requires_grad=True)]
for i, p in enumerate(clip_params):
    p.grad = torch.randn(p.shape) * 3
    out[f"clip.g{i}"] = p.grad.clone()
norm = torch.nn.utils.clip_grad_norm_(clip_params, max_norm=1.0)
out["clip.norm"] = norm.reshape(())
for i, p in enumerate(clip_params):
    out[f"clip.clipped{i}"] = p.grad.clone()

if __name__ == "__main__":
    path = pathlib.Path(__file__).parent / "golden" / "nn.safetensors"
    write_safetensors(path, out)
    print(f"wrote {len(out)} tensors to {path} (torch {torch.__version__})")
