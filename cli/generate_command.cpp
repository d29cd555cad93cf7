// anatomy generate: continue a prompt with a trained character language model.
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "training/training.hpp"

namespace anatomy::cli {

Runner add_generate_command(CLI::App& app) {
  struct Options {
    std::string checkpoint, prompt;
    float temperature = 0.8f, top_p = 1.0f;
    int64_t top_k = 0, max_new_tokens = 300;
    uint64_t seed = 0;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("generate", "Continue a prompt with a trained language model");
  cmd->add_option("--checkpoint", o->checkpoint, "a run folder from anatomy train --task lm")
      ->required();
  cmd->add_option("--temperature", o->temperature, "0: greedy; higher: more random")
      ->capture_default_str()
      ->check(in_range(0, 100));
  cmd->add_option("--top-k", o->top_k, "sample among the k most likely (0: all)")
      ->capture_default_str()
      ->check(in_range(0, 1e6));
  cmd->add_option("--top-p", o->top_p, "nucleus sampling: the smallest set with this mass")
      ->capture_default_str()
      ->check(in_range(1e-6, 1));
  cmd->add_option("--max-new-tokens", o->max_new_tokens, "how much to generate")
      ->capture_default_str()
      ->check(in_range(1, 1e6));
  cmd->add_option("--seed", o->seed, "random seed")->capture_default_str();
  cmd->add_option("prompt", o->prompt, "the text to continue")->required();
  return [o] {
    const auto generator = training::TextGenerator::load(o->checkpoint);
    manual_seed(o->seed);
    fmt::print("{}\n", generator.generate(
                           o->prompt, o->max_new_tokens,
                           {.temperature = o->temperature, .top_k = o->top_k, .top_p = o->top_p}));
    return 0;
  };
}

}  // namespace anatomy::cli
