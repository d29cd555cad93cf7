// anatomy tokenize: the BERT tokenizer over a vocab.txt, or a run's own tokenizer, one line per
// text.
#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "tokenizers/bert_tokenizer.hpp"

namespace anatomy::cli {

std::vector<std::string> read_lines(std::istream& in);

Runner add_tokenize_command(CLI::App& app) {
  struct Options {
    std::string vocab, tokenizer, format = "text";
    bool cased = false;
    std::vector<std::string> texts;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "tokenize", "Tokenize texts (arguments or standard input) with BERT's or a run's tokenizer");
  auto* vocab = cmd->add_option("--vocab", o->vocab, "a BERT vocab.txt, e.g. bert-base-uncased's");
  cmd->add_option("--tokenizer", o->tokenizer,
                  "a tokenizer a run saved, e.g. runs/x/source_tokenizer (no extension)")
      ->excludes(vocab);
  cmd->add_option("--format", o->format, "text (tokens, a tab, ids) | json")
      ->check(CLI::IsMember({"text", "json"}));
  cmd->add_flag("--cased", o->cased, "keep case and accents (cased vocabularies)");
  cmd->add_option("texts", o->texts, "texts to tokenize");
  return [o] {
    if (o->vocab.empty() && o->tokenizer.empty())
      throw Error("tokenize: give --vocab FILE (BERT) or --tokenizer PATH (a run's)");
    const std::unique_ptr<text::Tokenizer> tok =
        o->tokenizer.empty() ? std::make_unique<text::BertTokenizer>(
                                   text::BertTokenizer::from_vocab_file(o->vocab, !o->cased))
                             : text::load_tokenizer(o->tokenizer);
    auto texts = o->texts.empty() ? read_lines(std::cin) : o->texts;
    for (const auto& t : texts) {
      const auto tokens = tok->tokenize(t);
      const auto ids = tok->encode(t);
      if (o->format == "json")
        fmt::print("{}\n", nlohmann::json{{"tokens", tokens}, {"ids", ids}}.dump());
      else
        fmt::print("{}\t{}\n", fmt::join(tokens, " "), fmt::join(ids, " "));
    }
    return 0;
  };
}

}  // namespace anatomy::cli
