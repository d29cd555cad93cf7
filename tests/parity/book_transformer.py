"""The chapter's Transformer in PyTorch, written the book's way (NLP with Transformers, ch. 3),
extended as anatomy extends it: masks and cross-attention in the attention modules, pre- or
post-layer norm, sinusoidal positions, and the decoder the book leaves as homework. Parameter
names are the book's, so state_dicts load by name into anatomy's models."""
from math import log, sqrt
from types import SimpleNamespace

import torch
import torch.nn.functional as F
from torch import nn


def make_config(**kw):
    c = dict(vocab_size=50, hidden_size=32, num_attention_heads=4, num_hidden_layers=2,
             intermediate_size=64, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
             max_position_embeddings=16, layer_norm_eps=1e-12, num_labels=3, pad_token_id=0,
             position_embedding_type="absolute", pre_layer_norm=True, final_layer_norm=False,
             tie_word_embeddings=False, target_vocab_size=0, share_embeddings=False,
             embedding_layer_norm=True, bias=True)
    c.update(kw)
    return SimpleNamespace(**c)


def scaled_dot_product_attention(query, key, value, mask=None):
    dim_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / sqrt(dim_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    weights = F.softmax(scores, dim=-1)
    return torch.matmul(weights, value), weights


def layer_norm(config):
    """nn.LayerNorm, without its bias when config.bias is off (torch 1.13 has no bias=False)."""
    norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
    if not config.bias:
        del norm.bias
        norm.register_parameter("bias", None)
    return norm


class AttentionHead(nn.Module):
    def __init__(self, embed_dim, head_dim, bias=True):
        super().__init__()
        self.q = nn.Linear(embed_dim, head_dim, bias=bias)
        self.k = nn.Linear(embed_dim, head_dim, bias=bias)
        self.v = nn.Linear(embed_dim, head_dim, bias=bias)

    def forward(self, query_states, key_value_states=None, mask=None):
        kv = query_states if key_value_states is None else key_value_states
        out, self.last_attention = scaled_dot_product_attention(self.q(query_states), self.k(kv), self.v(kv), mask)
        return out


class MultiHeadAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        embed_dim = config.hidden_size
        num_heads = config.num_attention_heads
        head_dim = embed_dim // num_heads
        self.heads = nn.ModuleList([AttentionHead(embed_dim, head_dim, config.bias) for _ in range(num_heads)])
        self.output_linear = nn.Linear(embed_dim, embed_dim, bias=config.bias)

    def forward(self, query_states, key_value_states=None, mask=None):
        x = torch.cat([h(query_states, key_value_states, mask) for h in self.heads], dim=-1)
        self.last_attention = torch.stack([h.last_attention for h in self.heads], 1)  # [B, H, Tq, Tk]
        return self.output_linear(x)


class FeedForward(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.linear_1 = nn.Linear(config.hidden_size, config.intermediate_size, bias=config.bias)
        self.linear_2 = nn.Linear(config.intermediate_size, config.hidden_size, bias=config.bias)
        self.gelu = nn.GELU()
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, x):
        return self.dropout(self.linear_2(self.gelu(self.linear_1(x))))


class TransformerEncoderLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.pre = config.pre_layer_norm
        self.layer_norm_1 = layer_norm(config)
        self.layer_norm_2 = layer_norm(config)
        self.attention = MultiHeadAttention(config)
        self.feed_forward = FeedForward(config)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, x, mask=None):
        if self.pre:  # the book's layer
            hidden_state = self.layer_norm_1(x)
            x = x + self.dropout(self.attention(hidden_state, hidden_state, mask))
            return x + self.feed_forward(self.layer_norm_2(x))
        x = self.layer_norm_1(x + self.dropout(self.attention(x, x, mask)))
        return self.layer_norm_2(x + self.feed_forward(x))


def sinusoidal_positions(max_len, d):
    pe = torch.zeros(max_len, d)
    position = torch.arange(0, max_len, dtype=torch.float64).unsqueeze(1)
    div_term = torch.pow(10000.0, torch.arange(0, d, 2, dtype=torch.float64) / d)
    pe[:, 0::2] = torch.sin(position / div_term).float()
    pe[:, 1::2] = torch.cos(position / div_term).float()
    return pe


class Embeddings(nn.Module):
    def __init__(self, config, vocab_size=None):
        super().__init__()
        self.token_embeddings = nn.Embedding(vocab_size or config.vocab_size, config.hidden_size)
        self.sinusoidal = config.position_embedding_type == "sinusoidal"
        if self.sinusoidal:
            self.register_buffer("pe", sinusoidal_positions(config.max_position_embeddings, config.hidden_size),
                                 persistent=False)
        else:
            self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        # GPT's layout has no LayerNorm after the embeddings
        self.layer_norm = layer_norm(config) if config.embedding_layer_norm else nn.Identity()
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids):
        seq_length = input_ids.size(1)
        position_ids = torch.arange(seq_length, dtype=torch.long).unsqueeze(0)
        token_embeddings = self.token_embeddings(input_ids)
        if self.sinusoidal:
            position_embeddings = self.pe[:seq_length].unsqueeze(0)
        else:
            position_embeddings = self.position_embeddings(position_ids)
        return self.dropout(self.layer_norm(token_embeddings + position_embeddings))


class TransformerEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embeddings = Embeddings(config)
        self.layers = nn.ModuleList([TransformerEncoderLayer(config) for _ in range(config.num_hidden_layers)])
        if config.final_layer_norm:
            self.layer_norm = layer_norm(config)

    def forward(self, x, attention_mask=None):
        mask = None if attention_mask is None else attention_mask.float().unsqueeze(1)  # [B, 1, T]
        x = self.embeddings(x)
        for layer in self.layers:
            x = layer(x, mask)
        return self.layer_norm(x) if hasattr(self, "layer_norm") else x


class TransformerForSequenceClassification(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.encoder = TransformerEncoder(config)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)

    def forward(self, x, attention_mask=None):
        x = self.encoder(x, attention_mask)[:, 0, :]  # select hidden state of [CLS] token
        return self.classifier(self.dropout(x))


# --- the decoder: the book's homework, in the book's style ---

class TransformerDecoderLayer(nn.Module):
    def __init__(self, config, cross_attention=True):
        super().__init__()
        self.pre = config.pre_layer_norm
        self.layer_norm_1 = layer_norm(config)
        self.self_attention = MultiHeadAttention(config)
        self.layer_norm_2 = layer_norm(config)
        self.cross = cross_attention
        if cross_attention:
            self.cross_attention = MultiHeadAttention(config)
            self.layer_norm_3 = layer_norm(config)
        self.feed_forward = FeedForward(config)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, x, memory=None, self_mask=None, memory_mask=None):
        ff_norm = self.layer_norm_3 if self.cross else self.layer_norm_2
        if self.pre:
            h = self.layer_norm_1(x)
            x = x + self.dropout(self.self_attention(h, h, self_mask))
            if self.cross:
                h = self.layer_norm_2(x)
                x = x + self.dropout(self.cross_attention(h, memory, memory_mask))
            return x + self.feed_forward(ff_norm(x))
        x = self.layer_norm_1(x + self.dropout(self.self_attention(x, x, self_mask)))
        if self.cross:
            x = self.layer_norm_2(x + self.dropout(self.cross_attention(x, memory, memory_mask)))
        return ff_norm(x + self.feed_forward(x))


class TransformerDecoder(nn.Module):
    def __init__(self, config, vocab_size, cross_attention=True):
        super().__init__()
        self.embeddings = Embeddings(config, vocab_size)
        self.layers = nn.ModuleList([TransformerDecoderLayer(config, cross_attention)
                                     for _ in range(config.num_hidden_layers)])
        if config.final_layer_norm:
            self.layer_norm = layer_norm(config)

    def forward(self, input_ids, memory=None, memory_mask=None):
        seq_len = input_ids.size(1)
        mask = torch.tril(torch.ones(seq_len, seq_len))  # the causal mask
        x = self.embeddings(input_ids)
        for layer in self.layers:
            x = layer(x, memory, mask, memory_mask)
        return self.layer_norm(x) if hasattr(self, "layer_norm") else x


class TransformerForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.decoder = TransformerDecoder(config, config.vocab_size, cross_attention=False)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.decoder.embeddings.token_embeddings.weight

    def forward(self, input_ids):
        return self.lm_head(self.decoder(input_ids))


class Seq2SeqTransformer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.pad = config.pad_token_id
        self.encoder = TransformerEncoder(config)
        self.decoder = TransformerDecoder(config, config.target_vocab_size or config.vocab_size,
                                          cross_attention=True)
        self.generator = nn.Linear(config.hidden_size, config.target_vocab_size or config.vocab_size)

    def forward(self, source_ids, target_ids):
        source_mask = (source_ids != self.pad).long()
        memory = self.encoder(source_ids, source_mask)
        return self.generator(self.decoder(target_ids, memory, source_mask.float().unsqueeze(1)))
