#include "inference/text_generator.hpp"

#include <fmt/format.h>

namespace anatomy::training {

TextGenerator TextGenerator::load(const std::string& dir) {
  return {load_pipeline<models::TransformerForCausalLM>(dir, "lm")};
}

std::string TextGenerator::generate(const std::string& prompt, int64_t max_new_tokens,
                                    const generation::SamplingOptions& options) const {
  const auto ids = tokenizer->encode(prompt);
  if (ids.empty()) throw Error("generate: the prompt is empty");
  NoGradGuard no_grad;
  model->eval();
  const auto out = generation::generate(*model, ids, max_new_tokens, options);
  return prompt + tokenizer->decode(out.tokens);
}

}  // namespace anatomy::training
