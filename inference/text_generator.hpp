// TextGenerator: a trained language model with its tokenizer, loaded from a run folder
// (anatomy train --task lm --out DIR), ready to continue a prompt: what `anatomy generate`,
// `attention` and the tutorials use.
#pragma once

#include <memory>
#include <string>

#include "generation/generation.hpp"
#include "inference/pipeline.hpp"

namespace anatomy::training {

struct TextGenerator : Pipeline<models::TransformerForCausalLM> {
  static TextGenerator load(const std::string& dir);
  // The prompt followed by up to max_new_tokens sampled tokens (from the global generator).
  std::string generate(const std::string& prompt, int64_t max_new_tokens,
                       const generation::SamplingOptions& options = {}) const;
};

}  // namespace anatomy::training
