// What the chapter's tutorials share: the text "time flies like an arrow", the BERT tokenizer
// and the bert-base-uncased config.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "checkpoints/checkpoints.hpp"
#include "models/models.hpp"
#include "tokenizers/tokenizers.hpp"
#include "tutorial.hpp"

namespace anatomy::tutorial {

inline const std::string kText = "time flies like an arrow";

// What `make setup` (cmake/setup-pretrained.sh) puts in the cache, for the messages that say how
// to get it.
inline std::string how_to_set_up() {
  const std::string dir = checkpoints::pretrained_cache_dir();
  return fmt::format("`make setup` (cmake/setup-pretrained.sh) puts it in {}",
                     dir.empty() ? std::string("~/.cache/anatomy") : dir);
}

// bert-base-uncased's vocab.txt: --vocab PATH, else the one make setup put in the cache (the
// pretrained all-MiniLM-L6-v2's, which is bert-base-uncased's). Empty when neither is there.
inline std::string find_bert_vocab(const Tutorial& t) {
  if (std::string given = t.option("--vocab"); !given.empty()) return given;
  const std::string dir = checkpoints::pretrained_cache_dir();
  std::error_code ec;
  if (!dir.empty() && std::filesystem::exists(std::filesystem::path(dir) / ".requirement", ec))
    return (std::filesystem::path(dir) / "vocab.txt").string();
  return "";
}

// The BERT tokenizer over the real vocabulary, or (saying so, and how to get the real one) over
// a small one built here, so the tutorial still runs before make setup or offline.
inline text::BertTokenizer bert_tokenizer(const Tutorial& t, bool& real) {
  const std::string path = find_bert_vocab(t);
  real = !path.empty();
  if (real) {
    fmt::print("(vocabulary: {})\n", path);
    return text::BertTokenizer::from_vocab_file(path);
  }
  fmt::print(
      "(bert-base-uncased's vocabulary is not set up: {},\n"
      " or pass --vocab PATH. Using a small vocabulary built here instead, so the ids differ "
      "from the book's.)\n",
      how_to_set_up());
  std::vector<std::string> tokens = {"[PAD]", "[UNK]", "[CLS]",  "[SEP]", "[MASK]",
                                     "time",  "flies", "like",   "an",    "arrow",
                                     "fruit", "a",     "banana", "."};
  return text::BertTokenizer(text::Vocabulary(tokens));
}

// A pretrained BERT: --model DIR (or --bert DIR), else checkpoints::find_pretrained_bert's: the
// one make setup put in the cache, bert-base-uncased in the Hugging Face cache, or a Python
// package that carries one (in the test environment build/venv or site-packages). Without one
// the tutorial says how to get one and goes on without it.
inline std::optional<checkpoints::BertFolder> pretrained_bert(const Tutorial& t) {
  std::string dir = t.option("--model");
  if (dir.empty()) dir = t.option("--bert");
  if (dir.empty())
    dir = checkpoints::find_pretrained_bert({std::string(ANATOMY_SOURCE_DIR) + "/build/venv"});
  if (dir.empty()) {
    fmt::print(
        "(no pretrained BERT is set up: {};\n"
        " or pass --model DIR, a folder as save_pretrained writes it. docs/models.md says "
        "more.)\n",
        how_to_set_up());
    return std::nullopt;
  }
  std::optional<checkpoints::BertFolder> bert;
  try {
    bert = checkpoints::load_bert_folder(dir);
  } catch (const Error& e) {  // a folder that is not BERT stops the tutorial, saying why
    fmt::print(stderr, "error: {}\n", e.what());
    std::exit(2);
  }
  fmt::print("(pretrained BERT: {}: {} layers, {} heads, hidden size {})\n", dir,
             bert->config.num_hidden_layers, bert->config.num_attention_heads,
             bert->config.hidden_size);
  return bert;
}

// bert-base-uncased's config.json (kept in models/configs/), with the book's attention classes
// (MultiHeadAttention made of AttentionHeads) rather than the fused layout models train with,
// and the book's Embeddings: token and position tables, no token types.
inline models::TransformerConfig bert_config() {
  auto config = models::TransformerConfig::from_json_file(std::string(ANATOMY_SOURCE_DIR) +
                                                          "/models/configs/bert-base-uncased.json");
  config.attention_type = "book";
  config.type_vocab_size = 0;
  return config;
}

}  // namespace anatomy::tutorial
