// TransformerConfig: the book's config fields (as in bert-base-uncased's config.json), the names
// of the parts a layer is built from (norm, feed-forward, attention, positions: see
// registry.hpp), and the few choices this project adds (pre/post layer norm, decoder sizes).
//
// Each field is declared once, in ANATOMY_CONFIG_FIELDS below: its type, name, default, the check
// its value must pass, and what it means. The struct's members, from_json, to_json, set() and
// the per-field part of validate() are all generated from that one list, so adding a field is
// one line.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace anatomy::models {

// FIELD(type, name, default, check, help). Checks: any, positive, non_negative, probability,
// activation, and the part registries: norm, ffn, attention, position (registered names).
#define ANATOMY_CONFIG_FIELDS(FIELD)                                                            \
  /* --- the book's / Hugging Face's names --- */                                               \
  FIELD(int64_t, vocab_size, 30522, positive, "tokens in the (source) vocabulary")              \
  FIELD(int64_t, hidden_size, 768, positive, "E: the size of every hidden state")               \
  FIELD(int64_t, num_attention_heads, 12, positive, "H: heads per attention layer")             \
  FIELD(int64_t, num_hidden_layers, 12, positive, "encoder layers (decoder too, by default)")   \
  FIELD(int64_t, intermediate_size, 3072, positive, "the feed-forward layer's inner size")      \
  FIELD(double, hidden_dropout_prob, 0.1, probability, "dropout on embeddings and residuals")   \
  FIELD(double, attention_probs_dropout_prob, 0.1, probability, "dropout on attention weights") \
  FIELD(int64_t, max_position_embeddings, 512, positive, "the longest sequence")                \
  FIELD(double, layer_norm_eps, 1e-12, positive, "eps of every norm")                           \
  FIELD(int64_t, num_labels, 3, positive, "classes of the classification head")                 \
  FIELD(std::string, hidden_act, "gelu", activation, "gelu, gelu_new (tanh form) or relu")      \
  FIELD(int64_t, pad_token_id, 0, non_negative, "the padding token, masked in attention")       \
  FIELD(int64_t, type_vocab_size, 0, non_negative,                                              \
        "token types (BERT's sentence A/B: 2); 0: none")                                        \
  FIELD(std::string, position_embedding_type, "absolute", position,                             \
        "absolute (learned), sinusoidal, relative_key, relative_key_query, alibi, rotary, ...") \
  FIELD(double, rope_theta, 10000.0, positive, "rotary: the base of the rotation angles")       \
  FIELD(bool, tie_word_embeddings, false, any, "the output layer shares the token table")       \
  FIELD(bool, add_pooling_layer, false, any,                                                    \
        "BERT's pooler: tanh(Linear) of the first token's state (pooler_output)")               \
  FIELD(double, initializer_range, 0.02, positive, "std of init_weights' normal init")          \
  /* --- the parts a layer is built from, by registered name --- */                             \
  FIELD(std::string, norm_type, "layer_norm", norm, "layer_norm, rms_norm, ...")                \
  FIELD(std::string, ffn_type, "feed_forward", ffn, "feed_forward (GELU), swiglu, ...")         \
  FIELD(std::string, attention_type, "fused", attention,                                        \
        "book (a list of heads, the chapter's) or fused (one QKV projection, KV cache)")        \
  /* --- this project's choices --- */                                                          \
  FIELD(bool, pre_layer_norm, true, any, "the book's placement; false = the paper's post-LN")   \
  FIELD(bool, final_layer_norm, false, any, "a norm after the last layer")                      \
  FIELD(bool, embedding_layer_norm, true, any, "the book's norm after the embeddings")          \
  FIELD(int64_t, num_decoder_layers, 0, non_negative, "0: num_hidden_layers")                   \
  FIELD(int64_t, target_vocab_size, 0, non_negative, "0: share the source vocabulary")          \
  FIELD(bool, share_embeddings, false, any, "encoder and decoder use one token table")          \
  FIELD(bool, bias, true, any, "biases in Linear and norm layers; false = nanoGPT's")

struct TransformerConfig {
#define ANATOMY_CONFIG_MEMBER(type, name, default_value, check, help) type name = default_value;
  ANATOMY_CONFIG_FIELDS(ANATOMY_CONFIG_MEMBER)
#undef ANATOMY_CONFIG_MEMBER

  int64_t head_dim() const { return hidden_size / num_attention_heads; }  // D = E / H
  int64_t decoder_layers() const {
    return num_decoder_layers > 0 ? num_decoder_layers : num_hidden_layers;
  }
  int64_t target_vocab() const { return target_vocab_size > 0 ? target_vocab_size : vocab_size; }

  // Throws anatomy::Error naming the field, what it must be, and what it is; and when the
  // parameters' float32 bytes alone exceed memory_limit(), naming the sizes and the amount,
  // before anything is allocated.
  void validate() const;
  // About how many parameters a model of this config has (every table, layer and head; the
  // largest model this config can build, a seq2seq one when num_decoder_layers > 0), in double so
  // that absurd sizes do not overflow.
  double parameter_count() const;
  // About the bytes training takes: the weights, their gradients and AdamW's two moments (4
  // float32 copies), and the activations kept for the backward pass of `batch_tokens` tokens in
  // sequences of up to `sequence_length` (each layer's inputs, attention scores and feed-forward
  // hidden values; the logits of the output layer, their softmax and gradient).
  double training_bytes(int64_t batch_tokens, int64_t sequence_length) const;
  // About the bytes decoding `rows` hypotheses at once takes beyond the weights: the decoder's
  // cached keys and values for up to `output_length` tokens, the cross-attention's for
  // `source_length` tokens, and a step's logits.
  double decoding_bytes(int64_t rows, int64_t source_length, int64_t output_length) const;
  // Throws, naming the batch option and the amounts, when training_bytes exceeds memory_limit().
  void check_training_memory(int64_t batch_tokens, int64_t sequence_length,
                             const std::string& batch_option) const;

  // Hugging Face style config.json. Known Hugging Face keys this project does not use
  // (model_type, architectures, ...) are ignored; any other key is an error, as is a value of
  // the wrong type or out of range.
  static TransformerConfig from_json(const std::string& json_text, const std::string& source);
  static TransformerConfig from_json_file(const std::string& path);
  // Which model a config.json is written for: all fields (a preset, for reading), or only those
  // the named model reads, with the ones "0: as another field" given their value.
  enum class Model { All, Seq2Seq, CausalLM, Classifier };
  std::string to_json(Model model = Model::All) const;

  // Every architecture choice in one line, as a training log prints it: sizes, the norm and
  // where it sits, positions, feed-forward, attention, embeddings and dropout. `encoder` and
  // `decoder` say which stacks the model has (a translator both, a language model a decoder, a
  // classifier an encoder): their layer counts are shown.
  std::string architecture(bool encoder, bool decoder) const;

  // One field from text, as `anatomy train --set hidden_size=256` gives it ("name=value").
  void set(const std::string& assignment);
  // Every field's name, default and meaning, for --help and the guide.
  static std::vector<std::string> describe();

  // The bytes a model may take: this machine's physical memory (or the process's address-space
  // cap, ulimit -v, when smaller), or what set_memory_limit (the commands' --max-memory) says.
  static double memory_limit();
  static void set_memory_limit(double bytes);

  // Named presets: tiny, small, medium, base (translation sizes), bert-base (the book's), nanogpt
  // (nanoGPT's Shakespeare model: GPT layout, no biases, tied embeddings), gpt-small.
  static TransformerConfig preset(const std::string& name);
  static std::vector<std::string> preset_names();
};

}  // namespace anatomy::models
