#!/usr/bin/env python3
"""Small random BERT checkpoints in Hugging Face's layout, and what the reference BERT
(bert_reference.py) computes for the book's sentence pair, under tests/parity/golden/:
- bert/: a BertModel (names without a prefix, with the pooler), config.json, vocab.txt, and
  expected.safetensors (last_hidden_state, pooler_output, attentions.<layer>, and the ids);
- bert-for-masked-lm/: the same encoder as BertForMaskedLM stores it, as bert-base-uncased does
  (`bert.` prefix, plus the cls.predictions head that is not part of the encoder).

Run with the test environment's PyTorch 2.13:  make golden
"""
import json
import pathlib
import shutil
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import bert_reference as ref  # noqa: E402
from golden_io import randomize_norms, write_safetensors  # noqa: E402

torch.manual_seed(7)
root = pathlib.Path(__file__).parent / "golden"
SPECIAL = ["[PAD]", "[unused0]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = "time flies like an arrow fruit a banana the of and to in is it".split()
vocab = SPECIAL + WORDS + [f"##{c}" for c in "abcdefghijklmnopqrstuvwxyz"][:40 - len(SPECIAL) - len(WORDS)]
config = dict(architectures=["BertModel"], model_type="bert", vocab_size=len(vocab), hidden_size=32,
              num_attention_heads=4, num_hidden_layers=2, intermediate_size=64,
              max_position_embeddings=32, type_vocab_size=2, layer_norm_eps=1e-12,
              hidden_act="gelu", hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
              initializer_range=0.02, pad_token_id=0, position_embedding_type="absolute",
              transformers_version="4.40.0")

# The book's pair: [CLS] time flies like an arrow [SEP] fruit flies like a banana [SEP]
a, b = "time flies like an arrow".split(), "fruit flies like a banana".split()
tokens = ["[CLS]"] + a + ["[SEP]"] + b + ["[SEP]"]
input_ids = torch.tensor([[vocab.index(t) for t in tokens]])
token_type_ids = torch.tensor([[0] * (len(a) + 2) + [1] * (len(b) + 1)])

with torch.no_grad():
    mlm = ref.BertForMaskedLM(config).eval()
    randomize_norms(mlm)  # weights a loader that ignored them would not reproduce
    for p in mlm.parameters():
        if p.dim() == 1:
            p.add_(0.1 * torch.randn_like(p))  # biases too: nn.Linear's are small, not zero
    model = mlm.bert
    hidden, pooled, attentions = model(input_ids, token_type_ids)
    expected = {"last_hidden_state": hidden, "pooler_output": pooled,
                "input_ids": input_ids, "token_type_ids": token_type_ids,
                **{f"attentions.{i}": w for i, w in enumerate(attentions)}}

for name, arch, state in (("bert", "BertModel", model.state_dict()),
                          ("bert-for-masked-lm", "BertForMaskedLM", mlm.state_dict())):
    d = root / name
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    (d / "config.json").write_text(json.dumps({**config, "architectures": [arch]}, indent=2) + "\n")
    (d / "vocab.txt").write_text("\n".join(vocab) + "\n")
    write_safetensors(d / "model.safetensors", dict(state))
    write_safetensors(d / "expected.safetensors", expected)
    print(f"wrote {d}")
