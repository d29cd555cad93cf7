// anatomy translate: translate texts with a trained model (greedy, or beam search with --beam).
#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "cli/commands.hpp"
#include "io/input_file.hpp"
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

namespace {

// A sentence the model mostly cannot read (a cased input to a lower-cased vocabulary, another
// language) translates to nonsense: say so on stderr, so the output stays clean.
void warn_unknown(const training::Translator& tr, const std::string& text) {
  const auto ids = tr.source->encode(text);
  const int64_t unk = tr.source->vocab().id("[UNK]");
  const auto unknown = std::count(ids.begin(), ids.end(), unk);
  if (!ids.empty() && unknown * 2 > static_cast<int64_t>(ids.size()))
    fmt::print(stderr,
               "warning: {} of the {} tokens of \"{}\" are unknown to this model's vocabulary "
               "(another casing or language than it was trained on?)\n",
               unknown, ids.size(), text.size() > 40 ? text.substr(0, 40) + "..." : text);
}

}  // namespace

void SearchOptions::add_to(CLI::App& cmd) {
  cmd.add_option("--beam", beam,
                 "beam size; 1: greedy (default: the run's, chosen on validation for a corpus; 1 "
                 "for a task)")
      ->check(in_range(1, 1000));
  cmd.add_option("--length-penalty", length_penalty,
                 "beam search length normalization exponent (default: the run's, chosen on "
                 "validation for a corpus; else 0.6)")
      ->check(in_range(0, 10));
}

int64_t SearchOptions::beam_for(const training::Translator& tr) const {
  return beam > 0 ? beam : tr.default_beam;
}

float SearchOptions::length_penalty_for(const training::Translator& tr) const {
  return length_penalty >= 0 ? length_penalty : tr.default_length_penalty;
}

Runner add_translate_command(CLI::App& app) {
  struct Options {
    std::string checkpoint, file;
    int64_t max_length = 0;
    SearchOptions search;
    std::vector<std::string> texts;
  };
  auto o = std::make_shared<Options>();
  auto* cmd =
      app.add_subcommand("translate", "Translate texts (arguments, --file, or standard input)");
  cmd->add_option("--checkpoint", o->checkpoint, "a run folder from anatomy train")->required();
  o->search.add_to(*cmd);
  cmd->add_option("--max-length", o->max_length,
                  "longest output in tokens (default: 2 x input + 10)")
      ->check(in_range(1, 1e5));
  cmd->add_option("--file", o->file, "translate each line of this file");
  cmd->add_option("texts", o->texts, "texts to translate");
  return [o] {
    training::Translator tr = training::Translator::load(o->checkpoint);
    const int64_t beam = o->search.beam_for(tr);
    const float penalty = o->search.length_penalty_for(tr);
    std::vector<std::string> texts = o->texts;
    if (!o->file.empty()) {
      std::ifstream f = open_input("translate", o->file);
      texts = read_lines(f);
    } else if (texts.empty() && isatty(fileno(stdin))) {
      // At a terminal: one sentence at a time, as it is typed.
      fmt::print(stderr, "Type a sentence and press Enter (Ctrl-D to end).\n> ");
      for (std::string line; std::getline(std::cin, line); fmt::print(stderr, "> ")) {
        warn_unknown(tr, line);
        fmt::print("{}\n", tr.translate({line}, beam, penalty, o->max_length)[0]);
      }
      return 0;
    } else if (texts.empty()) {
      texts = read_lines(std::cin);
    }
    for (const auto& t : texts) warn_unknown(tr, t);
    for (const auto& line : tr.translate(texts, beam, penalty, o->max_length))
      fmt::print("{}\n", line);
    return 0;
  };
}

}  // namespace anatomy::cli
