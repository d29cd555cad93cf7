// Small models and configs shared by the model tests.
#pragma once

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include "helpers.hpp"
#include "models/models.hpp"

namespace anatomy::testing {

using namespace anatomy::models;

inline std::string bert_config_path() {
  return std::string(ANATOMY_TEST_DIR) + "/../models/configs/bert-base-uncased.json";
}

inline TransformerConfig small(bool fused = true) {
  auto c = TransformerConfig::from_json(R"({
    "vocab_size": 30, "hidden_size": 16, "num_attention_heads": 4, "num_hidden_layers": 2,
    "intermediate_size": 32, "max_position_embeddings": 24, "target_vocab_size": 20})",
                                        "small");
  c.attention_type = fused ? "fused" : "book";
  return c;
}

// For the sampling tests that set its output weights: small() with a final layer norm, in eval
// mode, initialized from seed 8.
inline std::unique_ptr<TransformerForCausalLM> eval_lm() {
  auto c = small();
  c.final_layer_norm = true;
  manual_seed(8);
  auto lm = std::make_unique<TransformerForCausalLM>(c);
  lm->eval();
  return lm;
}

// For the beam search tests: small() with 6 target tokens (few enough to score every output),
// in eval mode, initialized from `seed`.
inline std::unique_ptr<Seq2SeqTransformer> eval_s2s(uint64_t seed) {
  auto c = small();
  c.target_vocab_size = 6;
  manual_seed(seed);
  auto s2s = std::make_unique<Seq2SeqTransformer>(c);
  s2s->eval();
  return s2s;
}

// For the beam search tests: sharper next-token distributions (the output layer's weights
// scaled) and the end token's bias shifted, then log P(next | [BOS] + prefix) by the full
// forward pass, no cache.
inline void sharpen(Seq2SeqTransformer& s2s, float scale, int64_t eos, float eos_shift) {
  NoGradGuard no_grad;
  float* w = s2s.generator->weight.data_ptr<float>();
  for (int64_t i = 0; i < s2s.generator->weight.numel(); ++i) w[i] *= scale;
  s2s.generator->bias.data_ptr<float>()[eos] += eos_shift;
}

inline std::vector<float> next_log_probs(Seq2SeqTransformer& s2s, const Tensor& src, int64_t bos,
                                         const std::vector<int64_t>& prefix) {
  std::vector<int64_t> in{bos};
  in.insert(in.end(), prefix.begin(), prefix.end());
  const Tensor logits = s2s.forward(src, from_vector(in, {1, static_cast<int64_t>(in.size())}));
  return log_softmax(logits.select(0, 0), -1)
      .select(0, static_cast<int64_t>(prefix.size()))
      .to_vector();
}

}  // namespace anatomy::testing
