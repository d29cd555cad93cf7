// The subcommands of the `anatomy` program. Each adds itself to the CLI11 app and returns the
// function that runs it once the arguments are parsed.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

#include "autograd/tensor.hpp"

namespace anatomy::training {
struct Translator;
}

namespace anatomy::cli {

using Runner = std::function<int()>;

Runner add_run_command(CLI::App& app);
Runner add_train_command(CLI::App& app);
Runner add_config_command(CLI::App& app);
Runner add_export_command(CLI::App& app);
Runner add_average_command(CLI::App& app);
Runner add_translate_command(CLI::App& app);
Runner add_evaluate_command(CLI::App& app);
Runner add_bleu_command(CLI::App& app);
Runner add_tokenize_command(CLI::App& app);
Runner add_generate_command(CLI::App& app);
Runner add_attention_command(CLI::App& app);

// A numeric option's range, checked when the option is given: a value outside it, NaN or
// infinity is refused with the range, never replaced by a default.
CLI::Validator in_range(double min, double max);

// --beam and --length-penalty, the same in every command that translates (translate, evaluate,
// attention). Left out, each is the run's own: training::Translator's default_beam and
// default_length_penalty.
struct SearchOptions {
  int64_t beam = 0;           // 0: the run's
  float length_penalty = -1;  // below 0: the run's

  void add_to(CLI::App& cmd);
  int64_t beam_for(const training::Translator& tr) const;
  float length_penalty_for(const training::Translator& tr) const;
};

// "1,2,3" -> {1, 2, 3}; throws anatomy::Error naming the flag on anything else.
std::vector<int64_t> parse_ids(const std::string& flag, const std::string& text);

}  // namespace anatomy::cli
