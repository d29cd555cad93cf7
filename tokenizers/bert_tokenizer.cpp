#include "tokenizers/bert_tokenizer.hpp"

#include <fmt/format.h>

#include "autograd/tensor.hpp"
#include "tokenizers/truncation.hpp"
#include "tokenizers/unicode.hpp"

namespace anatomy::text {

namespace {

std::vector<std::string> split_whitespace(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char32_t c : code_points(s)) {
    if (is_whitespace(c)) {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += to_utf8(c);
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

std::vector<std::string> split_on_punctuation(const std::string& token) {
  std::vector<std::string> out;
  bool start_new = true;
  for (char32_t c : code_points(token)) {
    if (is_punctuation(c)) {
      out.push_back(to_utf8(c));
      start_new = true;
    } else {
      if (start_new) out.emplace_back();
      start_new = false;
      out.back() += to_utf8(c);
    }
  }
  return out;
}

// Appends the WordPiece tokens of one word.
void spell(const WordPiece& wordpiece, const std::string& word, const Vocabulary& vocab,
           std::vector<std::string>& out) {
  const std::vector<char32_t> chars = code_points(word);
  const auto find = [&](const std::string& token) { return vocab.find(token); };
  for (auto& piece : wordpiece.split(std::u32string(chars.begin(), chars.end()), find))
    out.push_back(std::move(piece.token));
}

}  // namespace

std::vector<std::string> basic_tokenize(const std::string& text, const BasicTokenizerOptions& o) {
  // Clean: drop NUL, U+FFFD and control characters; every whitespace becomes a space; space
  // around CJK ideographs so each is its own word.
  std::string cleaned;
  for (char32_t c : code_points(text)) {
    if (c == 0 || c == 0xFFFD || is_control(c)) continue;
    if (is_whitespace(c)) {
      cleaned += ' ';
    } else if (o.tokenize_chinese_chars && is_cjk(c)) {
      cleaned += ' ' + to_utf8(c) + ' ';
    } else {
      cleaned += to_utf8(c);
    }
  }
  const bool strip = o.strip_accents.value_or(o.do_lower_case);
  std::vector<std::string> split;
  for (std::string token : split_whitespace(cleaned)) {
    if (o.never_split.count(token)) {
      split.push_back(token);
      continue;
    }
    if (o.do_lower_case) token = to_lower(token);
    if (strip) token = strip_accents(token);
    for (auto& piece : split_on_punctuation(token)) split.push_back(piece);
  }
  std::string joined;
  for (const auto& s : split) joined += s + " ";
  return split_whitespace(joined);
}

std::vector<std::string> wordpiece_tokenize(const std::string& text, const Vocabulary& vocab,
                                            const std::string& unk, size_t max_chars) {
  std::vector<std::string> out;
  for (const auto& word : split_whitespace(text))
    spell(WordPiece{unk, "##", max_chars}, word, vocab, out);
  return out;
}

BertTokenizer::BertTokenizer(Vocabulary vocab, bool do_lower_case) {
  vocab_ = std::move(vocab);
  options.do_lower_case = do_lower_case;
  options.never_split = {"[UNK]", "[SEP]", "[PAD]", "[CLS]", "[MASK]"};
}

BertTokenizer::BertTokenizer(Vocabulary vocab, BasicTokenizerOptions o) : options(std::move(o)) {
  vocab_ = std::move(vocab);
}

BertTokenizer BertTokenizer::from_vocab_file(const std::string& path, bool do_lower_case) {
  return BertTokenizer(Vocabulary::load(path), do_lower_case);
}

std::vector<std::string> BertTokenizer::tokenize(const std::string& text) const {
  std::vector<std::string> out;
  for (const auto& word : basic_tokenize(text, options)) {
    if (options.never_split.count(word))
      out.push_back(word);
    else
      spell(wordpiece, word, vocab_, out);
  }
  return out;
}

std::vector<int64_t> BertTokenizer::encode_with_special_tokens(const std::string& text) const {
  std::vector<int64_t> ids{vocab_.id("[CLS]")};
  for (int64_t id : encode(text)) ids.push_back(id);
  ids.push_back(vocab_.id("[SEP]"));
  return ids;
}

BertEncoding BertTokenizer::encode_plus(const std::string& text,
                                        const std::optional<std::string>& text_pair,
                                        int64_t max_length) const {
  std::vector<std::string> a = tokenize(text), b;
  if (text_pair) b = tokenize(*text_pair);
  const auto [keep_a, keep_b] = truncate_longest_first(a.size(), b.size(), text_pair.has_value(),
                                                       text_pair ? 3 : 2, max_length);
  a.resize(keep_a);
  b.resize(keep_b);
  BertEncoding e;
  auto add = [&](const std::string& token, int64_t type) {
    e.tokens.push_back(token);
    e.token_type_ids.push_back(type);
  };
  add("[CLS]", 0);
  for (const auto& t : a) add(t, 0);
  add("[SEP]", 0);
  if (text_pair) {
    e.sentence_b_start = static_cast<int64_t>(e.tokens.size());
    for (const auto& t : b) add(t, 1);
    add("[SEP]", 1);
  }
  e.input_ids = convert_tokens_to_ids(e.tokens);
  e.attention_mask.assign(e.input_ids.size(), 1);
  return e;
}

std::string BertTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::string out;
  for (int64_t id : ids) {
    if (is_special(id)) continue;
    const std::string& t = vocab_.token(id);
    if (t.rfind("##", 0) == 0)
      out += t.substr(2);
    else
      out += (out.empty() ? "" : " ") + t;
  }
  // Hugging Face's clean_up_tokenization (on for BERT): no space before punctuation and
  // English contractions, as the text had them.
  for (const char* piece : {" .", " ?", " !", " ,", " ' ", " n't", " 'm", " 's", " 've", " 're"}) {
    const std::string from = piece, to = from == " ' " ? "'" : from.substr(1);
    for (size_t at = 0; (at = out.find(from, at)) != std::string::npos;) {
      out.replace(at, from.size(), to);
      at += to.size();
    }
  }
  return out;
}

std::string BertTokenizer::options_json() const {
  return fmt::format(R"({{"do_lower_case": {}}})", options.do_lower_case ? "true" : "false");
}

}  // namespace anatomy::text
