"""A reference BERT in PyTorch, written from the public BertModel architecture (Devlin et al.,
2019; Hugging Face's modeling_bert.py) with the same module names, so that its state_dict has the
names and shapes of a Hugging Face checkpoint. It is the oracle for loading such checkpoints into
the book's TransformerEncoder (tests/cli/test_cli.cpp); `transformers` is not needed.

Each layer is post-LN: LayerNorm(x + sublayer(x)). GELU is the exact (erf) one, LayerNorm's eps
the config's (1e-12 in bert-base-uncased)."""
import math

import torch
from torch import nn


class BertEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.word_embeddings = nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.position_embeddings = nn.Embedding(c["max_position_embeddings"], c["hidden_size"])
        self.token_type_embeddings = nn.Embedding(c["type_vocab_size"], c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])
        self.dropout = nn.Dropout(c["hidden_dropout_prob"])

    def forward(self, input_ids, token_type_ids):
        positions = torch.arange(input_ids.size(1)).unsqueeze(0)
        x = (self.word_embeddings(input_ids) + self.position_embeddings(positions)
             + self.token_type_embeddings(token_type_ids))
        return self.dropout(self.LayerNorm(x))


class BertSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.heads = c["num_attention_heads"]
        self.head_size = c["hidden_size"] // self.heads
        self.query = nn.Linear(c["hidden_size"], c["hidden_size"])
        self.key = nn.Linear(c["hidden_size"], c["hidden_size"])
        self.value = nn.Linear(c["hidden_size"], c["hidden_size"])
        self.dropout = nn.Dropout(c["attention_probs_dropout_prob"])

    def split(self, x):  # [B, T, E] -> [B, H, T, D]
        return x.view(x.size(0), x.size(1), self.heads, self.head_size).transpose(1, 2)

    def forward(self, x):
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_size)
        self.probs = scores.softmax(-1)
        out = self.dropout(self.probs) @ v
        return out.transpose(1, 2).reshape(x.shape)


class BertSelfOutput(nn.Module):
    """dense (in_size -> hidden), dropout, then LayerNorm of the residual sum: post-LN. The same
    module after attention (BertSelfOutput) and after the feed-forward (BertOutput)."""

    def __init__(self, c, in_size=None):
        super().__init__()
        self.dense = nn.Linear(in_size or c["hidden_size"], c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])
        self.dropout = nn.Dropout(c["hidden_dropout_prob"])

    def forward(self, h, x):
        return self.LayerNorm(self.dropout(self.dense(h)) + x)


class BertAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self = BertSelfAttention(c)
        self.output = BertSelfOutput(c)

    def forward(self, x):
        return self.output(self.self(x), x)


class BertIntermediate(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["intermediate_size"])

    def forward(self, x):
        return nn.functional.gelu(self.dense(x))  # exact: "gelu" in the config


def BertOutput(c):
    return BertSelfOutput(c, c["intermediate_size"])


class BertLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = BertAttention(c)
        self.intermediate = BertIntermediate(c)
        self.output = BertOutput(c)

    def forward(self, x):
        a = self.attention(x)
        return self.output(self.intermediate(a), a)


class BertEncoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(c) for _ in range(c["num_hidden_layers"])])

    def forward(self, x):
        for layer in self.layer:
            x = layer(x)
        return x


class BertPooler(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["hidden_size"])

    def forward(self, hidden):
        return torch.tanh(self.dense(hidden[:, 0]))


class BertModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embeddings = BertEmbeddings(c)
        self.encoder = BertEncoder(c)
        self.pooler = BertPooler(c)

    def forward(self, input_ids, token_type_ids):
        hidden = self.encoder(self.embeddings(input_ids, token_type_ids))
        attentions = [layer.attention.self.probs for layer in self.encoder.layer]
        return hidden, self.pooler(hidden), attentions


class BertOnlyMLMHead(nn.Module):
    """BertForMaskedLM's head (cls.predictions.*): the part of bert-base-uncased's checkpoint
    that is not the encoder."""

    def __init__(self, c):
        super().__init__()
        self.predictions = nn.Module()
        self.predictions.transform = nn.Module()
        self.predictions.transform.dense = nn.Linear(c["hidden_size"], c["hidden_size"])
        self.predictions.transform.LayerNorm = nn.LayerNorm(c["hidden_size"])
        self.predictions.bias = nn.Parameter(torch.zeros(c["vocab_size"]))


class BertForMaskedLM(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.bert = BertModel(c)
        self.cls = BertOnlyMLMHead(c)
