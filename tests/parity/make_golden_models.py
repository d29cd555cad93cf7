#!/usr/bin/env python3
"""PyTorch reference values for the chapter's components and models (tests/models/test_models_parity.cpp).

Run with the test environment's PyTorch 2.13:  make golden
Writes tests/parity/golden/models.safetensors with, per case: <case>.param.<name> (the book-style
module's state_dict), <case>.in<i>, <case>.out, <case>.grad_out, <case>.grad<i> for float
inputs, <case>.pgrad.<name> for every parameter. All modules run in eval mode (no dropout).
"""
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import book_transformer as bt  # noqa: E402
from golden_io import write_safetensors, randomize_norms  # noqa: E402

torch.manual_seed(0)
out = {}


def case(name, module, inputs, call=None):
    module.eval()
    randomize_norms(module)
    for k, v in module.state_dict().items():
        out[f"{name}.param.{k}"] = v
    inputs = [x.clone().requires_grad_() if x.is_floating_point() and not getattr(x, "is_mask", False) else x
              for x in inputs]
    y = call(module, *inputs) if call else module(*inputs)
    for i, x in enumerate(inputs):
        out[f"{name}.in{i}"] = x
    out[f"{name}.out"] = y
    r = torch.randn(y.shape)
    (y * r).sum().backward()
    out[f"{name}.grad_out"] = r
    for i, x in enumerate(inputs):
        if x.is_floating_point() and x.grad is not None:
            out[f"{name}.grad{i}"] = x.grad
    for k, p in module.named_parameters():
        if p.grad is not None:
            out[f"{name}.pgrad.{k}"] = p.grad


def mask(t):
    t = t.float()
    t.is_mask = True
    return t


cfg = bt.make_config()
H = torch.randn
pad_mask = mask(torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]]).unsqueeze(1))  # [2, 1, 5]

case("attention_head", bt.AttentionHead(32, 8), [H(1, 5, 32)])
case("mha_self", bt.MultiHeadAttention(cfg), [H(2, 5, 32), pad_mask],
     lambda m, x, msk: m(x, x, msk))
case("mha_cross", bt.MultiHeadAttention(cfg), [H(2, 4, 32), H(2, 6, 32),
                                                mask(torch.tensor([[1] * 6, [1, 1, 1, 1, 0, 0]]).unsqueeze(1))],
     lambda m, q, kv, msk: m(q, kv, msk))
case("feed_forward", bt.FeedForward(cfg), [H(2, 5, 32)])
case("embeddings", bt.Embeddings(cfg), [torch.randint(1, 50, (2, 5))])
case("embeddings_sinusoidal", bt.Embeddings(bt.make_config(position_embedding_type="sinusoidal")),
     [torch.randint(1, 50, (2, 5))])
case("encoder_layer_pre", bt.TransformerEncoderLayer(cfg), [H(2, 5, 32), pad_mask])
case("encoder_layer_post", bt.TransformerEncoderLayer(bt.make_config(pre_layer_norm=False)),
     [H(2, 5, 32), pad_mask])
ids = torch.randint(1, 50, (2, 5))
ids[1, 3:] = 0
attn = (ids != 0).long()
case("encoder", bt.TransformerEncoder(cfg), [ids, attn])
case("encoder_final_norm", bt.TransformerEncoder(bt.make_config(final_layer_norm=True)), [ids, attn])
case("classifier", bt.TransformerForSequenceClassification(cfg), [ids, attn])
causal = mask(torch.tril(torch.ones(4, 4)))
mem_mask = mask(torch.tensor([[1] * 6, [1, 1, 1, 1, 1, 0]]).unsqueeze(1))
case("decoder_layer_pre", bt.TransformerDecoderLayer(cfg), [H(2, 4, 32), H(2, 6, 32), causal, mem_mask])
case("decoder_layer_post", bt.TransformerDecoderLayer(bt.make_config(pre_layer_norm=False)),
     [H(2, 4, 32), H(2, 6, 32), causal, mem_mask])
case("causal_lm", bt.TransformerForCausalLM(bt.make_config(tie_word_embeddings=True, final_layer_norm=True)),
     [torch.randint(0, 50, (2, 6))])
src = torch.randint(1, 50, (2, 6))
src[0, 4:] = 0
case("seq2seq", bt.Seq2SeqTransformer(bt.make_config(target_vocab_size=40)), [src, torch.randint(1, 40, (2, 5))])
case("seq2seq_post_sinusoidal",
     bt.Seq2SeqTransformer(bt.make_config(target_vocab_size=40, pre_layer_norm=False,
                                          position_embedding_type="sinusoidal")),
     [src, torch.randint(1, 40, (2, 5))])
# GPT's layout (nanoGPT): no LayerNorm after the embeddings, no biases in Linear and LayerNorm.
case("causal_lm_gpt",
     bt.TransformerForCausalLM(bt.make_config(tie_word_embeddings=True, final_layer_norm=True,
                                              embedding_layer_norm=False, bias=False)),
     [torch.randint(0, 50, (2, 6))])

# The variants anatomy builds in, each inside the encoder layer (bidirectional, padded), the
# decoder layer (causal self-attention, cross-attention without positions) and a whole model.
variants = {
    "rms_norm": dict(norm_type="rms_norm", layer_norm_eps=1e-6),
    "swiglu": dict(ffn_type="swiglu"),
    "relative_key": dict(position_embedding_type="relative_key"),
    "relative_key_query": dict(position_embedding_type="relative_key_query"),
    "alibi": dict(position_embedding_type="alibi"),
    "rotary": dict(position_embedding_type="rotary"),
    "alibi_3_heads": dict(position_embedding_type="alibi", num_attention_heads=3, hidden_size=24),
}
for name, kw in variants.items():
    vc = bt.make_config(**kw)
    e = vc.hidden_size
    if "position_embedding_type" in kw:
        case(f"{name}.mha_self", bt.MultiHeadAttention(vc), [H(2, 5, e), pad_mask],
             lambda m, x, msk: m(x, x, msk))
    if name == "alibi_3_heads":  # the slopes of a head count that is not a power of 2
        continue
    case(f"{name}.encoder_layer", bt.TransformerEncoderLayer(vc), [H(2, 5, e), pad_mask])
    case(f"{name}.decoder_layer", bt.TransformerDecoderLayer(vc), [H(2, 4, e), H(2, 6, e), causal, mem_mask])
    case(f"{name}.causal_lm", bt.TransformerForCausalLM(bt.make_config(final_layer_norm=True, **kw)),
         [torch.randint(0, 50, (2, 6))])
    if name == "relative_key_query":
        case(f"{name}.seq2seq", bt.Seq2SeqTransformer(bt.make_config(target_vocab_size=40, **kw)),
             [src, torch.randint(1, 40, (2, 5))])

if __name__ == "__main__":
    path = pathlib.Path(__file__).parent / "golden" / "models.safetensors"
    write_safetensors(path, out)
    print(f"wrote {len(out)} tensors to {path} (torch {torch.__version__})")
