// anatomy translate: translate texts with a trained model (greedy, or beam search with --beam).
#include <fmt/format.h>

#include <fstream>
#include <iostream>

#include "cli/commands.hpp"
#include "training/training.hpp"

namespace anatomy::cli {

std::vector<std::string> read_lines(std::istream& in) {
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
  }
  return lines;
}

Runner add_translate_command(CLI::App& app) {
  struct Options {
    std::string checkpoint, file;
    int64_t beam = 1, max_length = 0;
    float length_penalty = 0.6f;
    std::vector<std::string> texts;
  };
  auto o = std::make_shared<Options>();
  auto* cmd =
      app.add_subcommand("translate", "Translate texts (arguments, --file, or standard input)");
  cmd->add_option("--checkpoint", o->checkpoint, "a run folder from anatomy train")->required();
  cmd->add_option("--beam", o->beam, "beam size (1: greedy)")->check(CLI::PositiveNumber);
  cmd->add_option("--length-penalty", o->length_penalty,
                  "beam search length normalization exponent");
  cmd->add_option("--max-length", o->max_length,
                  "longest output in tokens (default: 2 x input + 10)");
  cmd->add_option("--file", o->file, "translate each line of this file");
  cmd->add_option("texts", o->texts, "texts to translate");
  return [o] {
    training::Translator tr = training::Translator::load(o->checkpoint);
    std::vector<std::string> texts = o->texts;
    if (!o->file.empty()) {
      std::ifstream f(o->file);
      if (!f) throw Error(fmt::format("translate: cannot open {}", o->file));
      texts = read_lines(f);
    } else if (texts.empty()) {
      texts = read_lines(std::cin);
    }
    for (const auto& line : tr.translate(texts, o->beam, o->length_penalty, o->max_length))
      fmt::print("{}\n", line);
    return 0;
  };
}

}  // namespace anatomy::cli
