// WordPiece, the subword model of BERT (Schuster and Nakajima, 2012; Google's tokenization.py):
// a word is split greedily from its start into the longest vocabulary entries, every piece after
// the first spelled with a continuation prefix ("##"). A word that cannot be spelled so, or that
// is longer than max_input_chars_per_word characters, becomes one unknown token.
// BertTokenizer and the tokenizer.json pipeline (its "WordPiece" model) both split words here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace anatomy::text {

struct WordPiece {
  // A token's id in the vocabulary the model reads, or -1 for a string that is not in it.
  using Find = std::function<int64_t(const std::string&)>;
  // One piece of a word: the vocabulary entry, its id (-1 for an unknown token missing from the
  // vocabulary) and the characters [begin, end) of the word it spells.
  struct Piece {
    std::string token;
    int64_t id;
    size_t begin, end;
  };

  std::string unk_token = "[UNK]";
  std::string continuing_subword_prefix = "##";
  size_t max_input_chars_per_word = 100;

  // The pieces of one word (code points, no white space in it).
  std::vector<Piece> split(const std::u32string& word, const Find& find) const;
};

}  // namespace anatomy::text
