// BertTokenizer: Google BERT's tokenizer (tokenization.py, and Hugging Face's BertTokenizer):
//   basic tokenization: drop control characters, normalize whitespace, put spaces around CJK
//   ideographs, lower-case and strip accents (uncased models), split off punctuation;
//   then WordPiece (wordpiece.hpp): each word split greedily into the longest vocabulary entries,
//   continuation pieces marked "##"; a word that cannot be spelled, or longer than 100
//   characters, is [UNK].
// With bert-base-uncased's vocab.txt, "time flies like an arrow" -> 2051 10029 2066 2019 8612.
#pragma once

#include <optional>
#include <set>

#include "tokenizers/tokenizer.hpp"
#include "tokenizers/wordpiece.hpp"

namespace anatomy::text {

struct BasicTokenizerOptions {
  bool do_lower_case = true;
  std::optional<bool> strip_accents;  // unset: follow do_lower_case
  std::set<std::string> never_split;  // tokens kept whole, e.g. [UNK]
  bool tokenize_chinese_chars = true;
};

// The basic step alone (Hugging Face's BasicTokenizer).
std::vector<std::string> basic_tokenize(const std::string& text,
                                        const BasicTokenizerOptions& options);
// The WordPiece step alone, over whitespace-separated words.
std::vector<std::string> wordpiece_tokenize(const std::string& text, const Vocabulary& vocab,
                                            const std::string& unk = "[UNK]",
                                            size_t max_input_chars_per_word = 100);

class BertTokenizer : public Tokenizer {
 public:
  explicit BertTokenizer(Vocabulary vocab, bool do_lower_case = true);
  BertTokenizer(Vocabulary vocab, BasicTokenizerOptions options);
  static BertTokenizer from_vocab_file(const std::string& path, bool do_lower_case = true);
  std::string kind() const override { return "bert"; }
  std::vector<std::string> tokenize(const std::string& text) const override;
  // [CLS] ids [SEP], as the model sees a single sentence.
  std::vector<int64_t> encode_with_special_tokens(const std::string& text) const;
  // One sentence or a pair, as Hugging Face encodes them. max_length > 0 truncates as its
  // "longest_first" does: one token at a time from the end of the longer sentence (of two equally
  // long ones, the second), until the whole, special tokens included, fits.
  BertEncoding encode_plus(const std::string& text,
                           const std::optional<std::string>& text_pair = {},
                           int64_t max_length = 0) const override;
  // Hugging Face's decode(ids, skip_special_tokens=True): specials dropped, "##" pieces joined
  // to the word before, no space before punctuation (clean_up_tokenization_spaces).
  std::string decode(const std::vector<int64_t>& ids) const override;
  BasicTokenizerOptions options;
  WordPiece wordpiece;

 protected:
  std::string options_json() const override;
};

}  // namespace anatomy::text
