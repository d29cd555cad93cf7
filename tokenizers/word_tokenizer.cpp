#include "tokenizers/word_tokenizer.hpp"

#include <fmt/format.h>

namespace anatomy::text {

WordTokenizer WordTokenizer::train(const std::vector<std::string>& texts, int64_t min_frequency,
                                   int64_t max_size, bool lowercase) {
  std::vector<std::vector<std::string>> all;
  for (const auto& t : texts) all.push_back(pre_tokenize(t, lowercase));
  return WordTokenizer(Vocabulary::build(all, min_frequency, max_size), lowercase);
}

std::string WordTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::vector<std::string> pieces;
  for (int64_t id : ids)
    if (!is_special(id))
      pieces.push_back(vocab_.token(id) == "[UNK]" ? kSpaceMark + "[UNK]" : vocab_.token(id));
  return join_pieces(pieces);
}

std::string WordTokenizer::options_json() const {
  return fmt::format(R"({{"lowercase": {}}})", lowercase ? "true" : "false");
}

}  // namespace anatomy::text
