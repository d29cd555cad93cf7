// anatomy tokenize: the BERT tokenizer over a vocab.txt, or a run's own tokenizer, one line per
// text; with --pair, BERT's sentence pairs ([CLS] a [SEP] b [SEP] and the token types).
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
    bool cased = false, pair = false;
    int64_t max_length = 0;
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
      ->capture_default_str()
      ->check(CLI::IsMember({"text", "json"}));
  cmd->add_flag("--cased", o->cased, "keep case and accents (cased vocabularies)");
  cmd->add_flag("--pair", o->pair,
                "sentence pairs, as BERT reads them: texts two at a time (or lines 'A<TAB>B'); "
                "prints tokens with [CLS]/[SEP], ids and token_type_ids");
  cmd->add_option("--max-length", o->max_length,
                  "truncate to this many tokens, [CLS] and [SEP] included (longest first, as "
                  "Hugging Face); 0: no limit")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  cmd->add_option("texts", o->texts, "texts to tokenize");
  return [o] {
    // The whole encoding: tokens, ids and token types (json: Hugging Face's field names).
    auto print_encoding = [&](const text::BertEncoding& e) {
      if (o->format == "json")
        fmt::print("{}\n", nlohmann::json{{"tokens", e.tokens},
                                          {"input_ids", e.input_ids},
                                          {"token_type_ids", e.token_type_ids},
                                          {"attention_mask", e.attention_mask},
                                          {"sentence_b_start", e.sentence_b_start}}
                               .dump());
      else
        fmt::print("{}\t{}\t{}\n", fmt::join(e.tokens, " "), fmt::join(e.input_ids, " "),
                   fmt::join(e.token_type_ids, " "));
    };
    if (o->vocab.empty() && o->tokenizer.empty())
      throw Error("tokenize: give --vocab FILE (BERT) or --tokenizer PATH (a run's)");
    if ((o->pair || o->max_length > 0) && o->vocab.empty())
      throw Error("tokenize: --pair and --max-length are BERT's: give --vocab FILE");
    if (o->pair) {
      const auto bert = text::BertTokenizer::from_vocab_file(o->vocab, !o->cased);
      std::vector<std::pair<std::string, std::string>> pairs;
      if (!o->texts.empty()) {
        if (o->texts.size() % 2 != 0)
          throw Error(fmt::format(
              "tokenize --pair: texts come two at a time (sentence A, sentence B), got {}",
              o->texts.size()));
        for (size_t i = 0; i < o->texts.size(); i += 2)
          pairs.push_back({o->texts[i], o->texts[i + 1]});
      } else {
        int64_t line = 0;
        for (const auto& l : read_lines(std::cin)) {
          ++line;
          const auto tab = l.find('\t');
          if (tab == std::string::npos)
            throw Error(fmt::format(
                "tokenize --pair: standard input line {} has no tab (expected 'A<TAB>B')", line));
          pairs.push_back({l.substr(0, tab), l.substr(tab + 1)});
        }
      }
      for (const auto& [a, b] : pairs) print_encoding(bert.encode_plus(a, b, o->max_length));
      return 0;
    }
    auto texts = o->texts.empty() ? read_lines(std::cin) : o->texts;
    if (o->max_length > 0) {
      const auto bert = text::BertTokenizer::from_vocab_file(o->vocab, !o->cased);
      for (const auto& t : texts) print_encoding(bert.encode_plus(t, std::nullopt, o->max_length));
      return 0;
    }
    const std::unique_ptr<text::Tokenizer> tok =
        o->tokenizer.empty() ? std::make_unique<text::BertTokenizer>(
                                   text::BertTokenizer::from_vocab_file(o->vocab, !o->cased))
                             : text::load_tokenizer(o->tokenizer);
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
