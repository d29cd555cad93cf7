#include "inference/text_generator.hpp"

#include <fmt/format.h>

#include "checkpoints/checkpoints.hpp"
#include "run_folders/run_dir.hpp"

namespace anatomy::training {

TextGenerator TextGenerator::load(const std::string& dir) {
  RunDir run{dir};
  run.read_run("lm");
  TextGenerator g;
  g.tokenizer = text::load_tokenizer(run.file("tokenizer"));
  {
    nn::init::SkipInitGuard skip;  // every parameter is loaded below
    g.model = std::make_shared<models::TransformerForCausalLM>(run.read_config());
  }
  checkpoints::load_weights(*g.model, run.weights(), run.read_config());
  g.model->eval();
  return g;
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
