// TransformerConfig: the book's config fields (as in bert-base-uncased's config.json) plus the
// few choices this project adds (pre/post layer norm, sinusoidal positions, decoder sizes).
#pragma once

#include <string>

namespace anatomy::models {

struct TransformerConfig {
  // --- the book's / Hugging Face's names ---
  int64_t vocab_size = 30522;
  int64_t hidden_size = 768;
  int64_t num_attention_heads = 12;
  int64_t num_hidden_layers = 12;
  int64_t intermediate_size = 3072;
  double hidden_dropout_prob = 0.1;
  double attention_probs_dropout_prob = 0.1;
  int64_t max_position_embeddings = 512;
  double layer_norm_eps = 1e-12;
  int64_t num_labels = 3;
  std::string hidden_act = "gelu";  // "gelu", "gelu_new" (tanh form) or "relu"
  int64_t pad_token_id = 0;
  std::string position_embedding_type = "absolute";  // learned, or "sinusoidal" (the paper's)
  bool tie_word_embeddings = false;
  double initializer_range = 0.02;  // std of init_weights (BERT's / GPT's initialization)

  // --- this project's choices ---
  bool pre_layer_norm = true;        // the book's placement; false = the paper's post-LN
  bool final_layer_norm = false;     // a LayerNorm after the last layer (helps pre-LN training)
  bool embedding_layer_norm = true;  // the book's LayerNorm after token + position (GPT has none)
  bool fused_attention = true;       // one QKV projection, heads as a batch dim (fast path)
  int64_t num_decoder_layers = 0;    // 0: same as num_hidden_layers
  int64_t target_vocab_size = 0;     // 0: share the source vocabulary
  bool share_embeddings = false;     // encoder and decoder use one token table
  bool bias = true;  // biases in Linear and LayerNorm layers; false = nanoGPT's bias-free layers

  int64_t head_dim() const { return hidden_size / num_attention_heads; }
  int64_t decoder_layers() const {
    return num_decoder_layers > 0 ? num_decoder_layers : num_hidden_layers;
  }
  int64_t target_vocab() const { return target_vocab_size > 0 ? target_vocab_size : vocab_size; }

  // Throws anatomy::Error naming the field, what it must be, and what it is.
  void validate() const;

  // Hugging Face style config.json. Known Hugging Face keys this project does not use (model_type,
  // architectures, initializer_range, ...) are ignored; any other key is an error, as is a value
  // of the wrong type or out of range.
  static TransformerConfig from_json(const std::string& json_text, const std::string& source);
  static TransformerConfig from_json_file(const std::string& path);
  std::string to_json() const;
};

}  // namespace anatomy::models
