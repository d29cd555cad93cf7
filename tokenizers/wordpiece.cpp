#include "tokenizers/wordpiece.hpp"

#include "tokenizers/unicode.hpp"

namespace anatomy::text {

std::vector<WordPiece::Piece> WordPiece::split(const std::u32string& word, const Find& find) const {
  auto unknown = [&] { return std::vector<Piece>{{unk_token, find(unk_token), 0, word.size()}}; };
  if (word.size() > max_input_chars_per_word) return unknown();
  // The word in UTF-8, with the byte where each character starts, so that a candidate is one
  // substring.
  std::string utf8;
  std::vector<size_t> at;
  for (char32_t c : word) {
    at.push_back(utf8.size());
    utf8 += to_utf8(c);
  }
  at.push_back(utf8.size());
  std::vector<Piece> pieces;
  for (size_t start = 0; start < word.size();) {
    // The longest vocabulary entry starting here: try the whole rest, then one character less.
    bool found = false;
    for (size_t end = word.size(); end > start && !found; --end) {
      std::string candidate = (start > 0 ? continuing_subword_prefix : "") +
                              utf8.substr(at[start], at[end] - at[start]);
      const int64_t id = find(candidate);
      if (id < 0) continue;
      pieces.push_back({std::move(candidate), id, start, end});
      found = true;
    }
    if (!found) return unknown();
    start = pieces.back().end;
  }
  return pieces;
}

}  // namespace anatomy::text
