"""Shared by the golden-file generators: a minimal safetensors writer (no extra package) and
the case runner. Each case is (inputs, fn): float inputs that are not masks require grad; the
runner stores the inputs, fn's output, a random upstream gradient and every input's gradient."""
import json
import struct

import torch


def write_safetensors(path, tensors, metadata=None):
    """The safetensors layout (Debian 12 has no python3-safetensors): u64 header length, JSON
    header, raw little-endian data. Like Hugging Face's writer, it records format=pt."""
    header, blobs, offset = {"__metadata__": dict(metadata or {"format": "pt"})}, [], 0
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous()
        dtype = {torch.float32: "F32", torch.int64: "I64"}[t.dtype]
        data = t.numpy().tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def randomize_norms(module):
    """Norms start as gain 1, shift 0: a model that ignored its loaded norm weights would pass
    with them. Random ones make every norm's weights count."""
    with torch.no_grad():
        for m in module.modules():
            if "Norm" in type(m).__name__:
                if getattr(m, "weight", None) is not None:
                    m.weight.copy_(1 + 0.3 * torch.randn_like(m.weight))
                if getattr(m, "bias", None) is not None:
                    m.bias.copy_(0.3 * torch.randn_like(m.bias))


# Input makers. Shapes are tuples; every maker draws from torch's seeded generator.
def randn(*s): return ("randn", s)
def positive(*s): return ("positive", s)     # uniform in [0.5, 2): for log, sqrt, division
def mask(*s): return ("mask", s)             # 0/1 float tensor, no gradient
def ids(high, *s): return ("ids", (high,) + s)
def fixed(t): return ("fixed", t)            # a given tensor (targets with ignore_index, ...)


def make(spec):
    kind, s = spec
    if kind == "randn":
        return torch.randn(*s, requires_grad=True)
    if kind == "positive":
        return (torch.rand(*s) * 1.5 + 0.5).requires_grad_()
    if kind == "mask":
        return (torch.rand(*s) > 0.5).float()
    if kind == "ids":
        return torch.randint(0, s[0], s[1:])
    if kind == "fixed":
        return s
    raise ValueError(kind)


def run_cases(cases, seed=0):
    torch.manual_seed(seed)
    out = {}
    for name, (specs, fn) in cases.items():
        inputs = [make(s) for s in specs]
        y = fn(*inputs)
        for i, x in enumerate(inputs):
            out[f"{name}.in{i}"] = x
        out[f"{name}.out"] = y
        if y.requires_grad:
            r = torch.randn(y.shape)
            (y * r).sum().backward()
            out[f"{name}.grad_out"] = r
            for i, x in enumerate(inputs):
                if x.grad is not None:
                    out[f"{name}.grad{i}"] = x.grad
    return out
