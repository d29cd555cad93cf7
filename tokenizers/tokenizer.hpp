// Tokenizer: text <-> tokens <-> ids. Four kinds share this interface:
//   char  one token per Unicode character (lossless)
//   word  words and punctuation, a vocabulary built from a corpus
//   bpe   byte-pair-encoding subwords trained from a corpus, so any word can be spelled
//   bert  the BERT tokenizer (basic tokenization, then WordPiece) over any vocab.txt
// The project's own kinds mark a token that follows a space with "▁" (as SentencePiece does),
// so decode() restores the text's spacing exactly.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tokenizers/vocabulary.hpp"

namespace anatomy::text {

inline const std::string kSpaceMark = "\xE2\x96\x81";  // "▁", U+2581

// What Hugging Face's tokenizer(text) or tokenizer(text, text_pair) returns for a BERT:
// [CLS] a [SEP] (b [SEP]), token_type_ids 0 for the first sentence with its [CLS] and [SEP] and 1
// for the second with its [SEP], attention_mask all 1 (nothing is padded).
struct BertEncoding {
  std::vector<std::string> tokens;
  std::vector<int64_t> input_ids, token_type_ids, attention_mask;
  int64_t sentence_b_start = -1;  // the second sentence's first position (BertViz's); -1: none
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual std::string kind() const = 0;
  virtual std::vector<std::string> tokenize(const std::string& text) const = 0;
  // Ids of tokenize(text); a token missing from the vocabulary becomes [UNK].
  std::vector<int64_t> encode(const std::string& text) const;
  // Tokens to ids; unknown ones are [UNK] (an error if the vocabulary has none).
  std::vector<int64_t> convert_tokens_to_ids(const std::vector<std::string>& tokens) const;
  // Text of the ids, skipping [PAD], [BOS], [EOS] (and [CLS], [SEP] for BERT).
  virtual std::string decode(const std::vector<int64_t>& ids) const = 0;
  // One sentence or a pair with the model's special tokens, for the kinds that have them (bert,
  // hugging_face); max_length > 0 truncates the longer sentence first. Others throw.
  virtual BertEncoding encode_plus(const std::string& text,
                                   const std::optional<std::string>& text_pair = {},
                                   int64_t max_length = 0) const;
  const Vocabulary& vocab() const { return vocab_; }
  // Writes <path>.json (kind and options), <path>.vocab.txt and, for BPE, <path>.merges.txt.
  virtual void save(const std::string& path) const;

 protected:
  virtual std::string options_json() const { return "{}"; }
  bool is_special(int64_t id) const;
  Vocabulary vocab_;
};

// Loads what Tokenizer::save wrote; errors name the file and what is wrong.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path);

// The project's pre-tokenizer: words and single punctuation marks, "▁" before each piece that
// follows whitespace (or starts the text). "Hallo, Welt!" -> ▁Hallo , ▁Welt !
std::vector<std::string> pre_tokenize(const std::string& text, bool lowercase);
// Joins pieces back: "▁" becomes a space, the leading one dropped.
std::string join_pieces(const std::vector<std::string>& pieces);

}  // namespace anatomy::text
