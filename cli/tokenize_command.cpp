// anatomy tokenize: the BERT tokenizer over a vocab.txt, one line per text.
#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "tokenizers/bert_tokenizer.hpp"

namespace anatomy::cli {

std::vector<std::string> read_lines(std::istream& in);

Runner add_tokenize_command(CLI::App& app) {
  struct Options {
    std::string vocab, format = "text";
    bool cased = false;
    std::vector<std::string> texts;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("tokenize", "BERT-tokenize texts (arguments or standard input)");
  cmd->add_option("--vocab", o->vocab, "a BERT vocab.txt, e.g. bert-base-uncased's")->required();
  cmd->add_option("--format", o->format, "text (tokens, a tab, ids) | json")
      ->check(CLI::IsMember({"text", "json"}));
  cmd->add_flag("--cased", o->cased, "keep case and accents (cased vocabularies)");
  cmd->add_option("texts", o->texts, "texts to tokenize");
  return [o] {
    const auto tok = text::BertTokenizer::from_vocab_file(o->vocab, !o->cased);
    auto texts = o->texts.empty() ? read_lines(std::cin) : o->texts;
    for (const auto& t : texts) {
      const auto tokens = tok.tokenize(t);
      const auto ids = tok.encode(t);
      if (o->format == "json")
        fmt::print("{}\n", nlohmann::json{{"tokens", tokens}, {"ids", ids}}.dump());
      else
        fmt::print("{}\t{}\n", fmt::join(tokens, " "), fmt::join(ids, " "));
    }
    return 0;
  };
}

}  // namespace anatomy::cli
