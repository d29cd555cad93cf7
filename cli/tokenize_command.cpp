// anatomy tokenize: the BERT tokenizer over a vocab.txt, a Hugging Face tokenizer.json (or model
// folder), or a run's own tokenizer, one line per text; with --pair, sentence pairs ([CLS] a [SEP]
// b [SEP] and the token types).
#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include <filesystem>
#include "cli/commands.hpp"
#include "tokenizers/bert_tokenizer.hpp"
#include "tokenizers/hugging_face_tokenizer.hpp"

namespace anatomy::cli {

std::vector<std::string> read_lines(std::istream& in);

namespace {

struct TokenizeOptions {
  std::string vocab, tokenizer, format = "text";
  bool cased = false, pair = false;
  int64_t max_length = 0;
  std::vector<std::string> texts;
};

void declare_options(CLI::App& cmd, TokenizeOptions& o) {
  auto* vocab = cmd.add_option("--vocab", o.vocab, "a BERT vocab.txt, e.g. bert-base-uncased's");
  cmd.add_option("--tokenizer", o.tokenizer,
                 "a Hugging Face tokenizer.json or model folder, or a tokenizer a run saved, e.g. "
                 "runs/x/source_tokenizer (no extension)")
      ->excludes(vocab);
  cmd.add_option("--format", o.format, "text (tokens, a tab, ids) | json")
      ->capture_default_str()
      ->check(CLI::IsMember({"text", "json"}));
  cmd.add_flag("--cased", o.cased, "keep case and accents (cased vocabularies)");
  cmd.add_flag("--pair", o.pair,
               "sentence pairs, as BERT reads them: texts two at a time (or lines 'A<TAB>B'); "
               "prints tokens with [CLS]/[SEP], ids and token_type_ids");
  cmd.add_option("--max-length", o.max_length,
                 "truncate to this many tokens, [CLS] and [SEP] included (longest first, as "
                 "Hugging Face); 0: no limit")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  cmd.add_option("texts", o.texts, "texts to tokenize");
}

// The tokenizer the options name. A tokenizer.json or a model folder is Hugging Face's; anything
// else is a run's prefix, whose tokenizer has no special tokens for pairs or truncation: refused
// before reading it.
std::shared_ptr<text::Tokenizer> open_tokenizer(const TokenizeOptions& o) {
  if (o.vocab.empty() && o.tokenizer.empty())
    throw Error(
        "tokenize: give --vocab FILE (BERT), --tokenizer tokenizer.json or --tokenizer "
        "PATH (a run's)");
  namespace fs = std::filesystem;
  const bool hugging_face =
      !o.tokenizer.empty() &&
      (fs::is_directory(o.tokenizer) ||
       (fs::path(o.tokenizer).extension() == ".json" && !fs::exists(o.tokenizer + ".json")));
  if ((o.pair || o.max_length > 0) && o.vocab.empty() && !hugging_face)
    throw Error(
        "tokenize: --pair and --max-length need special tokens ([CLS], [SEP]): give --vocab "
        "FILE (BERT) or --tokenizer tokenizer.json; a run's own tokenizer has none");
  if (!o.vocab.empty())
    return std::make_shared<text::BertTokenizer>(
        text::BertTokenizer::from_vocab_file(o.vocab, !o.cased));
  if (fs::is_directory(o.tokenizer)) return text::load_folder_tokenizer(o.tokenizer);
  if (hugging_face) return text::HuggingFaceTokenizer::load(o.tokenizer);
  return text::load_tokenizer(o.tokenizer);
}

// The whole encoding: tokens, ids and token types (json: Hugging Face's field names).
void print_encoding(const text::BertEncoding& e, const std::string& format) {
  if (format == "json")
    fmt::print("{}\n", nlohmann::json{{"tokens", e.tokens},
                                      {"input_ids", e.input_ids},
                                      {"token_type_ids", e.token_type_ids},
                                      {"attention_mask", e.attention_mask},
                                      {"sentence_b_start", e.sentence_b_start}}
                           .dump());
  else
    fmt::print("{}\t{}\t{}\n", fmt::join(e.tokens, " "), fmt::join(e.input_ids, " "),
               fmt::join(e.token_type_ids, " "));
}

// Hugging Face's tokenizers print the library's whole encoding, offsets included.
void print_full(const text::Encoding& e, const std::string& format) {
  if (format == "json") {
    nlohmann::json offsets = nlohmann::json::array();
    for (const auto& [b, e2] : e.offsets) offsets.push_back({b, e2});
    fmt::print("{}\n", nlohmann::json{{"tokens", e.tokens},
                                      {"ids", e.ids},
                                      {"type_ids", e.type_ids},
                                      {"offsets", offsets},
                                      {"special_tokens_mask", e.special_tokens_mask},
                                      {"attention_mask", e.attention_mask}}
                           .dump());
  } else {
    fmt::print("{}\t{}\t{}\n", fmt::join(e.tokens, " "), fmt::join(e.ids, " "),
               fmt::join(e.type_ids, " "));
  }
}

// The sentence pairs: the texts two at a time, else standard input's lines 'A<TAB>B'.
std::vector<std::pair<std::string, std::string>> read_pairs(const std::vector<std::string>& texts) {
  std::vector<std::pair<std::string, std::string>> pairs;
  if (!texts.empty()) {
    if (texts.size() % 2 != 0)
      throw Error(
          fmt::format("tokenize --pair: texts come two at a time (sentence A, sentence B), got {}",
                      texts.size()));
    for (size_t i = 0; i < texts.size(); i += 2) pairs.push_back({texts[i], texts[i + 1]});
    return pairs;
  }
  int64_t line = 0;
  for (const auto& l : read_lines(std::cin)) {
    ++line;
    const auto tab = l.find('\t');
    if (tab == std::string::npos)
      throw Error(fmt::format(
          "tokenize --pair: standard input line {} has no tab (expected 'A<TAB>B')", line));
    pairs.push_back({l.substr(0, tab), l.substr(tab + 1)});
  }
  return pairs;
}

int tokenize(const TokenizeOptions& o) {
  const std::shared_ptr<text::Tokenizer> tok = open_tokenizer(o);
  const auto* hf = dynamic_cast<const text::HuggingFaceTokenizer*>(tok.get());
  if (o.pair) {
    for (const auto& [a, b] : read_pairs(o.texts)) {
      if (hf && o.max_length == 0)
        print_full(hf->encode_full(a, b), o.format);
      else
        print_encoding(tok->encode_plus(a, b, o.max_length), o.format);
    }
    return 0;
  }
  const auto texts = o.texts.empty() ? read_lines(std::cin) : o.texts;
  for (const auto& t : texts) {
    if (o.max_length > 0) {
      print_encoding(tok->encode_plus(t, std::nullopt, o.max_length), o.format);
    } else if (hf) {
      print_full(hf->encode_full(t), o.format);
    } else {
      const auto tokens = tok->tokenize(t);
      const auto ids = tok->encode(t);
      if (o.format == "json")
        fmt::print("{}\n", nlohmann::json{{"tokens", tokens}, {"ids", ids}}.dump());
      else
        fmt::print("{}\t{}\n", fmt::join(tokens, " "), fmt::join(ids, " "));
    }
  }
  return 0;
}

}  // namespace

Runner add_tokenize_command(CLI::App& app) {
  auto o = std::make_shared<TokenizeOptions>();
  declare_options(*app.add_subcommand("tokenize",
                                      "Tokenize texts (arguments or standard input) with BERT's "
                                      "or a run's tokenizer"),
                  *o);
  return [o] { return tokenize(*o); };
}

}  // namespace anatomy::cli
