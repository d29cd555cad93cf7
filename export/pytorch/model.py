"""The chapter's Transformer in PyTorch, written the book's way (NLP with Transformers, ch. 3) and
extended as anatomy extends it: masks and cross-attention in the attention modules, pre- or
post-layer norm, learned or sinusoidal positions, bias-free layers, tied embeddings, and the
decoder the book leaves as homework; and the variants anatomy builds in, chosen by the config as
anatomy chooses them: RMSNorm (norm_type), SwiGLU (ffn_type), relative positions (Hugging Face
BertSelfAttention's relative_key / relative_key_query), ALiBi and rotary embeddings
(position_embedding_type). Parameter names are anatomy's (the book's, per-head attention; Hugging
Face's or LLaMA's for the variants), so a state_dict moves between the two by name.

This one file is the PyTorch model everywhere: `anatomy export` writes it into the package it
exports (config.json beside it says which options the run uses), the parity tests build their
golden values with it (tests/parity/), and the benchmarks time its embeddings (benchmarks/).
"""
import json
import math
from types import SimpleNamespace

import torch
import torch.nn.functional as F
from torch import nn

# anatomy's TransformerConfig defaults (models/config.hpp), for keys a config leaves out.
DEFAULTS = dict(vocab_size=30522, hidden_size=768, num_attention_heads=12, num_hidden_layers=12,
                intermediate_size=3072, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
                max_position_embeddings=512, layer_norm_eps=1e-12, num_labels=3, hidden_act="gelu",
                pad_token_id=0, type_vocab_size=0, position_embedding_type="absolute",
                rope_theta=10000.0, tie_word_embeddings=False,
                initializer_range=0.02, norm_type="layer_norm", ffn_type="feed_forward",
                attention_type="fused", pre_layer_norm=True, final_layer_norm=False,
                embedding_layer_norm=True, num_decoder_layers=0, target_vocab_size=0,
                share_embeddings=False, bias=True)


# The values of the config's choices this module builds, field by field.
CHOICES = dict(norm_type=("layer_norm", "rms_norm"), ffn_type=("feed_forward", "swiglu"),
               position_embedding_type=("absolute", "sinusoidal", "relative_key",
                                        "relative_key_query", "alibi", "rotary"),
               hidden_act=("gelu", "gelu_new", "relu"))


def make_config(where="config", **fields):
    """A config: anatomy's defaults with the given fields replaced. `where` names the config in
    the error a choice this module does not build raises."""
    c = SimpleNamespace(**{**DEFAULTS, **fields})
    for key, choices in CHOICES.items():
        if getattr(c, key) not in choices:
            raise ValueError(f"{where}: {key} '{getattr(c, key)}' has no PyTorch twin here "
                             f"(the choices: {', '.join(choices)})")
    return c


def load_config(path):
    """The config.json beside this file in an exported run."""
    with open(path) as f:
        return make_config(path, **json.load(f))


def scaled_dot_product_attention(query, key, value, mask=None, dropout=None):
    dim_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(dim_k)
    return attend(scores, value, mask, dropout)


def attend(scores, value, mask=None, dropout=None):
    """The weights (the softmax of the scores, masked) and the weighted sum of the values."""
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    weights = F.softmax(scores, dim=-1)
    if mask is not None:  # a query whose every key is masked attends to nothing
        weights = weights.nan_to_num(0.0)
    if dropout is not None:
        weights = dropout(weights)
    return torch.matmul(weights, value), weights


def layer_norm(config):
    """The config's norm: nn.LayerNorm (without its bias when config.bias is off; torch 1.13 has
    no bias=False), or nn.RMSNorm, whose eps sits inside the square root as in LLaMA's
    LlamaRMSNorm."""
    if config.norm_type == "rms_norm":
        return nn.RMSNorm(config.hidden_size, eps=config.layer_norm_eps)
    norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
    if not config.bias:
        del norm.bias
        norm.register_parameter("bias", None)
    return norm


class AttentionHead(nn.Module):
    def __init__(self, embed_dim, head_dim, dropout_p=0.0, bias=True):
        super().__init__()
        self.q = nn.Linear(embed_dim, head_dim, bias=bias)
        self.k = nn.Linear(embed_dim, head_dim, bias=bias)
        self.v = nn.Linear(embed_dim, head_dim, bias=bias)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, query_states, key_value_states=None, mask=None):
        kv = query_states if key_value_states is None else key_value_states
        out, self.last_attention = scaled_dot_product_attention(
            self.q(query_states), self.k(kv), self.v(kv), mask, self.dropout)
        return out


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary(x, theta, start=0):
    """GPT-NeoX / LLaMA's rotary embedding of x [B, T, D] at positions start, start + 1, ..."""
    d = x.size(-1)
    inv_freq = 1.0 / (theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    t = torch.arange(start, start + x.size(-2), dtype=torch.float64)
    emb = torch.cat((torch.outer(t, inv_freq),) * 2, dim=-1)
    return x * emb.cos().float() + rotate_half(x) * emb.sin().float()


def alibi_slopes(n):
    """The ALiBi paper's head slopes (Press et al., 2022, their reference code)."""
    def power_of_2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start ** i for i in range(n)]
    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_2(closest) + alibi_slopes(2 * closest)[0::2][: n - closest]


class MultiHeadAttention(nn.Module):
    def __init__(self, config, self_attention=True):
        super().__init__()
        embed_dim = config.hidden_size
        num_heads = config.num_attention_heads
        head_dim = embed_dim // num_heads
        self.heads = nn.ModuleList([
            AttentionHead(embed_dim, head_dim, config.attention_probs_dropout_prob, config.bias)
            for _ in range(num_heads)])
        self.output_linear = nn.Linear(embed_dim, embed_dim, bias=config.bias)
        # Position schemes inside attention act in self-attention only.
        self.scheme = config.position_embedding_type if self_attention else "absolute"
        self.max_positions = config.max_position_embeddings
        self.theta = config.rope_theta
        if self.scheme.startswith("relative_key"):  # Hugging Face's name and size
            self.distance_embedding = nn.Embedding(2 * config.max_position_embeddings - 1, head_dim)
        if self.scheme == "alibi":
            self.slopes = alibi_slopes(num_heads)

    def forward(self, query_states, key_value_states=None, mask=None):
        if self.scheme not in ("relative_key", "relative_key_query", "alibi", "rotary"):
            x = torch.cat([h(query_states, key_value_states, mask) for h in self.heads], dim=-1)
            self.last_attention = torch.stack([h.last_attention for h in self.heads], 1)  # [B, H, Tq, Tk]
            return self.output_linear(x)
        kv = query_states if key_value_states is None else key_value_states
        outs, weights = [], []
        for h, head in enumerate(self.heads):
            q, k, v = head.q(query_states), head.k(kv), head.v(kv)
            out, w = attend(self.position_scores(h, q, k), v, mask, head.dropout)
            outs.append(out)
            weights.append(w)
        self.last_attention = torch.stack(weights, 1)
        return self.output_linear(torch.cat(outs, dim=-1))

    def position_scores(self, h, q, k):
        """Head h's scaled scores with the position scheme's part in them."""
        if self.scheme == "rotary":
            q, k = apply_rotary(q, self.theta), apply_rotary(k, self.theta)
        scores = torch.matmul(q, k.transpose(-2, -1))
        tq, tk = q.size(1), k.size(1)
        distance = torch.arange(tq).view(-1, 1) - torch.arange(tk).view(1, -1)
        if self.scheme.startswith("relative_key"):  # as BertSelfAttention, before the scaling
            r = self.distance_embedding(distance + self.max_positions - 1)  # [Tq, Tk, D]
            scores = scores + torch.einsum("bld,lrd->blr", q, r)
            if self.scheme == "relative_key_query":
                scores = scores + torch.einsum("brd,lrd->blr", k, r)
        scores = scores / math.sqrt(q.size(-1))
        if self.scheme == "alibi":
            scores = scores - self.slopes[h] * distance.abs().float()
        return scores


class FeedForward(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.linear_1 = nn.Linear(config.hidden_size, config.intermediate_size, bias=config.bias)
        self.linear_2 = nn.Linear(config.intermediate_size, config.hidden_size, bias=config.bias)
        self.gelu = {"gelu": nn.GELU(), "gelu_new": nn.GELU(approximate="tanh"),
                     "relu": nn.ReLU()}[config.hidden_act]
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, x):
        return self.dropout(self.linear_2(self.gelu(self.linear_1(x))))


class SwiGLUFeedForward(nn.Module):
    """LLaMA's LlamaMLP: down_proj(silu(gate_proj(x)) * up_proj(x)), then the layer's dropout."""

    def __init__(self, config):
        super().__init__()
        e, i = config.hidden_size, config.intermediate_size
        self.gate_proj = nn.Linear(e, i, bias=config.bias)
        self.up_proj = nn.Linear(e, i, bias=config.bias)
        self.down_proj = nn.Linear(i, e, bias=config.bias)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, x):
        return self.dropout(self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x)))


def feed_forward(config):
    """The config's feed-forward: the book's, or LLaMA's SwiGLU."""
    return SwiGLUFeedForward(config) if config.ffn_type == "swiglu" else FeedForward(config)


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
        # Schemes inside attention (relative, ALiBi, rotary) add nothing here.
        self.absolute = config.position_embedding_type == "absolute"
        if self.sinusoidal:
            self.register_buffer("pe", sinusoidal_positions(config.max_position_embeddings,
                                                            config.hidden_size), persistent=False)
        elif self.absolute:
            self.position_embeddings = nn.Embedding(config.max_position_embeddings,
                                                    config.hidden_size)
        # BERT's sentence A/B table, when the config has token types
        if config.type_vocab_size > 0:
            self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        # GPT's layout has no norm after the embeddings
        self.layer_norm = layer_norm(config) if config.embedding_layer_norm else nn.Identity()
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids, token_type_ids=None):
        seq_length = input_ids.size(1)
        x = self.token_embeddings(input_ids)
        if self.sinusoidal:
            x = x + self.pe[:seq_length].unsqueeze(0)
        elif self.absolute:
            position_ids = torch.arange(seq_length, dtype=torch.long,
                                        device=input_ids.device).unsqueeze(0)
            x = x + self.position_embeddings(position_ids)
        if hasattr(self, "token_type_embeddings"):  # all sentence A when not given, as BERT
            if token_type_ids is None:
                token_type_ids = torch.zeros_like(input_ids)
            x = x + self.token_type_embeddings(token_type_ids)
        return self.dropout(self.layer_norm(x))


class TransformerEncoderLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.pre = config.pre_layer_norm
        self.layer_norm_1 = layer_norm(config)
        self.layer_norm_2 = layer_norm(config)
        self.attention = MultiHeadAttention(config)
        self.feed_forward = feed_forward(config)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, x, mask=None):
        if self.pre:  # the book's layer
            hidden_state = self.layer_norm_1(x)
            x = x + self.dropout(self.attention(hidden_state, hidden_state, mask))
            return x + self.feed_forward(self.layer_norm_2(x))
        x = self.layer_norm_1(x + self.dropout(self.attention(x, x, mask)))
        return self.layer_norm_2(x + self.feed_forward(x))


class TransformerEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embeddings = Embeddings(config)
        self.layers = nn.ModuleList([TransformerEncoderLayer(config)
                                     for _ in range(config.num_hidden_layers)])
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
        x = self.encoder(x, attention_mask)[:, 0, :]  # the hidden state of the first token
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
            self.cross_attention = MultiHeadAttention(config, self_attention=False)
            self.layer_norm_3 = layer_norm(config)
        self.feed_forward = feed_forward(config)
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
        layers = config.num_decoder_layers or config.num_hidden_layers
        self.layers = nn.ModuleList([TransformerDecoderLayer(config, cross_attention)
                                     for _ in range(layers)])
        if config.final_layer_norm:
            self.layer_norm = layer_norm(config)

    def forward(self, input_ids, memory=None, memory_mask=None):
        seq_len = input_ids.size(1)
        mask = torch.tril(torch.ones(seq_len, seq_len, device=input_ids.device))  # causal
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

    def forward(self, input_ids):  # [B, T] -> [B, T, V]
        return self.lm_head(self.decoder(input_ids))


class Seq2SeqTransformer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.pad = config.pad_token_id
        target_vocab = config.target_vocab_size or config.vocab_size
        self.encoder = TransformerEncoder(config)
        self.decoder = TransformerDecoder(config, target_vocab, cross_attention=True)
        self.generator = nn.Linear(config.hidden_size, target_vocab)
        if config.share_embeddings:
            self.decoder.embeddings.token_embeddings.weight = \
                self.encoder.embeddings.token_embeddings.weight
        if config.tie_word_embeddings:
            self.generator.weight = self.decoder.embeddings.token_embeddings.weight

    def encode(self, source_ids):
        source_mask = (source_ids != self.pad).long()
        return self.encoder(source_ids, source_mask), source_mask.float().unsqueeze(1)

    def forward(self, source_ids, target_ids):  # [B, S], [B, T] -> [B, T, V]
        memory, mask = self.encode(source_ids)
        return self.generator(self.decoder(target_ids, memory, mask))


@torch.no_grad()
def greedy_decode(model, source_ids, bos, eos, max_length):
    """Greedy translation of each row of source_ids [B, S]: token lists without BOS and EOS."""
    memory, mask = model.encode(source_ids)
    B = source_ids.size(0)
    ys = torch.full((B, 1), bos, dtype=torch.long)
    done = torch.zeros(B, dtype=torch.bool)
    out = [[] for _ in range(B)]
    for _ in range(max_length):
        logits = model.generator(model.decoder(ys, memory, mask))[:, -1]
        next_ids = logits.argmax(-1)
        for b in range(B):
            if not done[b]:
                if next_ids[b].item() == eos:
                    done[b] = True
                else:
                    out[b].append(next_ids[b].item())
        if done.all():
            break
        ys = torch.cat([ys, torch.where(done, torch.full_like(next_ids, eos), next_ids)[:, None]], 1)
    return out


def build(config, kind):
    """The model a run of this kind trains: "translation" or "lm"."""
    if kind == "translation":
        return Seq2SeqTransformer(config)
    if kind == "lm":
        return TransformerForCausalLM(config)
    raise ValueError(f"no PyTorch model for runs of kind '{kind}'")
