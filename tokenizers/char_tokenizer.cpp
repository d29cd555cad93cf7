#include "tokenizers/char_tokenizer.hpp"

#include "tokenizers/unicode.hpp"

namespace anatomy::text {

CharTokenizer CharTokenizer::train(const std::vector<std::string>& texts, int64_t min_frequency) {
  std::vector<std::vector<std::string>> all;
  for (const auto& t : texts) all.push_back(utf8_chars(t));
  return CharTokenizer(Vocabulary::build(all, min_frequency));
}

std::vector<std::string> CharTokenizer::tokenize(const std::string& text) const {
  return utf8_chars(text);
}

std::string CharTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::string out;
  for (int64_t id : ids)
    if (!is_special(id)) out += vocab_.token(id);
  return out;
}

}  // namespace anatomy::text
