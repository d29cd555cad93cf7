// CharTokenizer: one token per Unicode character, spaces included.
#pragma once

#include "tokenizers/tokenizer.hpp"

namespace anatomy::text {

class CharTokenizer : public Tokenizer {
 public:
  explicit CharTokenizer(Vocabulary vocab) { vocab_ = std::move(vocab); }
  // Every character of the texts, the most frequent first, after the special tokens.
  static CharTokenizer train(const std::vector<std::string>& texts, int64_t min_frequency = 1);
  std::string kind() const override { return "char"; }
  std::vector<std::string> tokenize(const std::string& text) const override;
  std::string decode(const std::vector<int64_t>& ids) const override;
};

}  // namespace anatomy::text
