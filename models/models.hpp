// Everything of the models layer in one include.
//
// Shapes, here and in every file of models/, are written with these letters:
//   B  batch             T  positions (Tq queries, Tk keys; S source positions in a decoder)
//   E  hidden_size       H  num_attention_heads       D  head size, E / H
//   V  vocabulary size
// e.g. attention weights are [B, H, Tq, Tk] and the logits of a language model [B, T, V].
#pragma once

#include "models/add_and_norm.hpp"
#include "models/alibi.hpp"
#include "models/attention.hpp"
#include "models/attention_head.hpp"
#include "models/attention_positions.hpp"
#include "models/config.hpp"
#include "models/embeddings.hpp"
#include "models/feed_forward.hpp"
#include "models/fused_multi_head_attention.hpp"
#include "models/init_weights.hpp"
#include "models/kv_cache.hpp"
#include "models/masks.hpp"
#include "models/multi_head_attention.hpp"
#include "models/pooler.hpp"
#include "models/registry.hpp"
#include "models/relative_positions.hpp"
#include "models/rotary_positions.hpp"
#include "models/scaled_dot_product_attention.hpp"
#include "models/seq2seq_transformer.hpp"
#include "models/sinusoidal_positional_embedding.hpp"
#include "models/swiglu_feed_forward.hpp"
#include "models/transformer_decoder.hpp"
#include "models/transformer_decoder_layer.hpp"
#include "models/transformer_encoder.hpp"
#include "models/transformer_encoder_layer.hpp"
#include "models/transformer_for_causal_lm.hpp"
#include "models/transformer_for_sequence_classification.hpp"
#include "nn/nn.hpp"
