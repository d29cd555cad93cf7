// HuggingFaceTokenizer: a tokenizer.json, as the `tokenizers` library writes it, run as that
// library runs it. Text goes through five steps, each read from the file:
//   added tokens    split off first, matched on the raw text ([CLS], <|endoftext|>, ...)
//   normalizer      BertNormalizer, Lowercase, StripAccents, NFC/NFD/NFKC/NFKD, Strip, Sequence
//   pre-tokenizer   BertPreTokenizer, Whitespace, WhitespaceSplit, ByteLevel, Punctuation,
//                   Digits, Sequence: the text cut into words
//   model           WordPiece, BPE or WordLevel: each word into vocabulary entries (WordPiece
//                   and BPE are BertTokenizer's and BpeTokenizer's: wordpiece.hpp, bpe_merges.hpp)
//   post-processor  TemplateProcessing, BertProcessing, ByteLevel, Sequence:
//                   special tokens and token types ([CLS] a [SEP] b [SEP])
// Every character keeps the position in the original text it came from, so each token has the
// character offsets the library returns. A component the file names and this class does not
// implement is refused by name when the file is loaded. The file's truncation and padding are not
// applied: as with transformers' tokenizers, the caller decides (encode_plus's max_length, which
// truncates as truncation.hpp does).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tokenizers/tokenizer.hpp"

namespace anatomy::text {

// What the library's Tokenizer.encode(a, b) returns, with its field names.
struct Encoding {
  std::vector<std::string> tokens;
  std::vector<int64_t> ids, type_ids, special_tokens_mask, attention_mask;
  // Characters (code points) of the sequence the token came from: [begin, end); (0, 0) for a
  // special token the post-processor added.
  std::vector<std::pair<int64_t, int64_t>> offsets;
  // 0 or 1: which sequence the token came from; -1 for an added special token.
  std::vector<int64_t> sequence_ids;
};

class HuggingFaceTokenizer : public Tokenizer {
 public:
  // A tokenizer.json file, or a folder that holds one. Errors name the file and the component.
  static std::unique_ptr<HuggingFaceTokenizer> load(const std::string& path);
  // The same from the file's text; `where` names it in errors.
  static std::unique_ptr<HuggingFaceTokenizer> parse(const std::string& json,
                                                     const std::string& where);
  ~HuggingFaceTokenizer() override;

  std::string kind() const override { return "hugging_face"; }
  // The tokens of the text alone, without the post-processor's special tokens.
  std::vector<std::string> tokenize(const std::string& text) const override;
  Encoding encode_full(const std::string& text, const std::optional<std::string>& pair = {},
                       bool add_special_tokens = true) const;
  // max_length > 0 truncates "longest_first", as BertTokenizer::encode_plus does.
  BertEncoding encode_plus(const std::string& text,
                           const std::optional<std::string>& text_pair = {},
                           int64_t max_length = 0) const override;
  // Special tokens skipped, then the file's decoder (WordPiece, ByteLevel or BPEDecoder).
  std::string decode(const std::vector<int64_t>& ids) const override;
  // <path>.json holds the whole tokenizer.json (load_tokenizer reads it back); <path>.vocab.txt
  // the vocabulary, one token per line.
  void save(const std::string& path) const override;
  // The file as it was read.
  const std::string& json() const;

  struct Pipeline;

 private:
  HuggingFaceTokenizer();
  std::unique_ptr<Pipeline> p_;
};

// The tokenizer of a Hugging Face model folder: its tokenizer.json, or else its vocab.txt read as
// BERT's (lower-cased unless tokenizer_config.json says do_lower_case false). Refuses a folder
// with neither, naming both.
std::shared_ptr<Tokenizer> load_folder_tokenizer(const std::string& dir);

}  // namespace anatomy::text
