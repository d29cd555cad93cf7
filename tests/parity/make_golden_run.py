#!/usr/bin/env python3
"""Reference files for `anatomy run` (tests/cli/test_cli.cpp): for each model kind, a Hugging Face
style config.json, the book-style PyTorch model's weights (state_dict, per-head attention
layout) and what the model outputs for fixed ids, under tests/parity/golden/run/<kind>/.

Run with the test environment's PyTorch 2.13:  make golden
"""
import json
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import book_transformer as bt  # noqa: E402
from golden_io import write_safetensors  # noqa: E402

torch.manual_seed(1)
root = pathlib.Path(__file__).parent / "golden" / "run"
HF_CONFIG = dict(vocab_size=50, hidden_size=32, num_attention_heads=4, num_hidden_layers=2,
                 intermediate_size=64, max_position_embeddings=16, layer_norm_eps=1e-12,
                 num_labels=3, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
                 hidden_act="gelu", model_type="bert", architectures=["Book"], initializer_range=0.02)
ids = torch.tensor([[7, 3, 12, 41, 5]])
dec_ids = torch.tensor([[1, 9, 4]])


def attentions(layers, attr):
    return {f"{i}": getattr(layer, attr).last_attention for i, layer in enumerate(layers)}


def export(kind, config_extra, model, outputs):
    d = root / kind
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.json").write_text(json.dumps({**HF_CONFIG, **config_extra}, indent=2) + "\n")
    write_safetensors(d / "weights.safetensors", dict(model.state_dict()))
    write_safetensors(d / "expected.safetensors", outputs)


with torch.no_grad():
    cfg = bt.make_config()
    enc = bt.TransformerEncoder(cfg).eval()
    h = enc(ids)
    export("encoder", {}, enc, {"last_hidden_state": h,
                                **{f"attentions.{k}": v for k, v in attentions(enc.layers, "attention").items()}})

    clf = bt.TransformerForSequenceClassification(cfg).eval()
    logits = clf(ids)
    export("classifier", {}, clf, {"logits": logits, "last_hidden_state": clf.encoder(ids),
                                   **{f"attentions.{k}": v for k, v in attentions(clf.encoder.layers, "attention").items()}})

    lm_cfg = bt.make_config(tie_word_embeddings=True, final_layer_norm=True)
    lm = bt.TransformerForCausalLM(lm_cfg).eval()
    logits = lm(ids)
    export("causal-lm", {"tie_word_embeddings": True, "final_layer_norm": True}, lm,
           {"logits": logits, "last_hidden_state": lm.decoder(ids),
            **{f"attentions.{k}": v for k, v in attentions(lm.decoder.layers, "self_attention").items()}})

    s2s_cfg = bt.make_config(target_vocab_size=40)
    s2s = bt.Seq2SeqTransformer(s2s_cfg).eval()
    logits = s2s(ids, dec_ids)
    export("seq2seq", {"target_vocab_size": 40}, s2s,
           {"logits": logits,
            **{f"attentions.{k}": v for k, v in attentions(s2s.encoder.layers, "attention").items()},
            **{f"decoder_attentions.{k}": v for k, v in attentions(s2s.decoder.layers, "self_attention").items()},
            **{f"cross_attentions.{k}": v for k, v in attentions(s2s.decoder.layers, "cross_attention").items()}})

    # The chapter's third way: relative positions, as Hugging Face's BertSelfAttention computes
    # them, with its parameter name (layers.<i>.attention.distance_embedding.weight).
    for scheme in ("relative_key", "relative_key_query"):
        rel = bt.TransformerEncoder(bt.make_config(position_embedding_type=scheme)).eval()
        export(f"encoder-{scheme}", {"position_embedding_type": scheme}, rel,
               {"last_hidden_state": rel(ids),
                **{f"attentions.{k}": v for k, v in attentions(rel.layers, "attention").items()}})

print(f"wrote run references under {root}")
