#include "tokenizers/tokenizer.hpp"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "autograd/tensor.hpp"
#include "io/input_file.hpp"
#include "io/json_limits.hpp"
#include "io/safetensors.hpp"
#include "tokenizers/bert_tokenizer.hpp"
#include "tokenizers/bpe_tokenizer.hpp"
#include "tokenizers/char_tokenizer.hpp"
#include "tokenizers/hugging_face_tokenizer.hpp"
#include "tokenizers/unicode.hpp"
#include "tokenizers/word_tokenizer.hpp"

namespace anatomy::text {

std::vector<int64_t> Tokenizer::encode(const std::string& text) const {
  return convert_tokens_to_ids(tokenize(text));
}

std::vector<int64_t> Tokenizer::convert_tokens_to_ids(
    const std::vector<std::string>& tokens) const {
  const int64_t unk = vocab_.find("[UNK]");
  std::vector<int64_t> ids;
  for (const auto& t : tokens) {
    const int64_t id = vocab_.find(t);
    if (id < 0 && unk < 0)
      throw Error(
          fmt::format("encode: token '{}' is not in the vocabulary, which has no [UNK]", t));
    ids.push_back(id < 0 ? unk : id);
  }
  return ids;
}

BertEncoding Tokenizer::encode_plus(const std::string&, const std::optional<std::string>&,
                                    int64_t) const {
  throw Error(fmt::format(
      "encode_plus: a {} tokenizer adds no special tokens ([CLS], [SEP]); use a BERT vocab.txt or "
      "a tokenizer.json",
      kind()));
}

bool Tokenizer::is_special(int64_t id) const {
  const std::string& t = vocab_.token(id);
  return t == "[PAD]" || t == "[BOS]" || t == "[EOS]" || t == "[CLS]" || t == "[SEP]";
}

void Tokenizer::save(const std::string& path) const {
  nlohmann::json j = nlohmann::json::parse(options_json());
  j["kind"] = kind();
  j["vocab_escaped"] = true;  // backslash, newline and CR in tokens are written \\, \n, \r
  write_file_atomically(path + ".json", j.dump(2) + "\n");
  vocab_.save(path + ".vocab.txt", true);
}

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path) {
  std::ifstream f = open_input("load_tokenizer", path + ".json");
  std::stringstream ss;
  ss << f.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(ss.str(), json_depth_limit("load_tokenizer: " + path + ".json"));
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("load_tokenizer: {}.json is not valid JSON ({})", path, e.what()));
  }
  if (!j.is_object())
    throw Error(fmt::format("load_tokenizer: {}.json must hold a JSON object (got {})", path,
                            j.type_name()));
  for (const auto& [key, value] : j.items()) {
    const bool flag = key == "vocab_escaped" || key == "lowercase" || key == "do_lower_case";
    if ((key == "kind" && !value.is_string()) || (flag && !value.is_boolean()))
      throw Error(fmt::format("load_tokenizer: {}.json's '{}' must be {} (got {})", path, key,
                              flag ? "true or false" : "a string", value.dump().substr(0, 40)));
  }
  const std::string kind = j.value("kind", "");
  if (kind == "hugging_face") {
    if (!j.contains("tokenizer") || !j["tokenizer"].is_object())
      throw Error(fmt::format(
          "load_tokenizer: {}.json is of kind hugging_face but has no 'tokenizer' object", path));
    return HuggingFaceTokenizer::parse(j["tokenizer"].dump(), path + ".json");
  }
  Vocabulary vocab = Vocabulary::load(path + ".vocab.txt", j.value("vocab_escaped", false));
  if (kind == "char") return std::make_unique<CharTokenizer>(std::move(vocab));
  if (kind == "word")
    return std::make_unique<WordTokenizer>(std::move(vocab), j.value("lowercase", false));
  if (kind == "bpe") return BpeTokenizer::load(path, std::move(vocab), j.value("lowercase", false));
  if (kind == "bert")
    return std::make_unique<BertTokenizer>(std::move(vocab), j.value("do_lower_case", true));

  throw Error(fmt::format("load_tokenizer: {}.json has unknown kind '{}'", path, kind));
}

std::vector<std::string> pre_tokenize(const std::string& text, bool lowercase) {
  const std::string s = lowercase ? to_lower(text) : text;
  std::vector<std::string> pieces;
  std::string current;
  bool space_before = true;
  auto flush = [&] {
    if (!current.empty()) pieces.push_back(current);
    current.clear();
  };
  for (char32_t c : code_points(s)) {
    if (is_whitespace(c) || is_control(c)) {
      flush();
      space_before = true;
    } else if (is_punctuation(c)) {
      flush();
      pieces.push_back((space_before ? kSpaceMark : "") + to_utf8(c));
      space_before = false;
    } else {
      if (current.empty() && space_before) current = kSpaceMark;
      current += to_utf8(c);
      space_before = false;
    }
  }
  flush();
  return pieces;
}

std::string join_pieces(const std::vector<std::string>& pieces) {
  std::string out;
  for (const auto& p : pieces) out += p;
  std::string text;
  for (size_t i = 0; i < out.size();) {
    if (out.compare(i, kSpaceMark.size(), kSpaceMark) == 0) {
      if (!text.empty()) text += ' ';
      i += kSpaceMark.size();
    } else {
      text += out[i++];
    }
  }
  return text;
}

}  // namespace anatomy::text
