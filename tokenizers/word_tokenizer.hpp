// WordTokenizer: words and punctuation marks as tokens, with a vocabulary built from a corpus
// (min frequency, max size); a word outside it becomes [UNK].
#pragma once

#include "tokenizers/tokenizer.hpp"

namespace anatomy::text {

class WordTokenizer : public Tokenizer {
 public:
  WordTokenizer(Vocabulary vocab, bool lowercase) : lowercase(lowercase) {
    vocab_ = std::move(vocab);
  }
  static WordTokenizer train(const std::vector<std::string>& texts, int64_t min_frequency = 1,
                             int64_t max_size = 0, bool lowercase = false);
  std::string kind() const override { return "word"; }
  std::vector<std::string> tokenize(const std::string& text) const override {
    return pre_tokenize(text, lowercase);
  }
  std::string decode(const std::vector<int64_t>& ids) const override;
  bool lowercase;

 protected:
  std::string options_json() const override;
};

}  // namespace anatomy::text
