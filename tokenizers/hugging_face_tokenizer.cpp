#include "tokenizers/hugging_face_tokenizer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

#include "autograd/tensor.hpp"
#include "io/input_file.hpp"
#include "io/json_limits.hpp"
#include "io/safetensors.hpp"
#include "tokenizers/bert_tokenizer.hpp"
#include "tokenizers/bpe_merges.hpp"
#include "tokenizers/truncation.hpp"
#include "tokenizers/unicode.hpp"
#include "tokenizers/wordpiece.hpp"

namespace anatomy::text {

namespace {

using Json = nlohmann::json;
using Span = std::pair<int64_t, int64_t>;

// Text on its way through the pipeline: each character with the characters of the original
// text it came from.
struct Piece {
  std::u32string chars;
  std::vector<Span> from;
};

Piece original(const std::u32string& text, int64_t begin, int64_t end) {
  Piece p;
  for (int64_t i = begin; i < end; ++i) {
    p.chars.push_back(text[static_cast<size_t>(i)]);
    p.from.push_back({i, i + 1});
  }
  return p;
}

Piece slice(const Piece& p, size_t begin, size_t end) {
  Piece out;
  out.chars = p.chars.substr(begin, end - begin);
  out.from.assign(p.from.begin() + static_cast<int64_t>(begin),
                  p.from.begin() + static_cast<int64_t>(end));
  return out;
}

// The span of original text that characters [begin, end) of a piece came from.
Span span_of(const Piece& p, size_t begin, size_t end) {
  return {p.from[begin].first, p.from[end - 1].second};
}

// Replaces each character by what f returns (nothing drops it); the new characters come from
// where the old one came from.
template <typename F>
void map_chars(Piece& p, F f) {
  Piece out;
  for (size_t i = 0; i < p.chars.size(); ++i)
    for (char32_t c : f(p.chars[i])) {
      out.chars.push_back(c);
      out.from.push_back(p.from[i]);
    }
  p = std::move(out);
}

// Unicode normalization, a segment at a time (a starter and the marks that combine with it).
// Where the segment normalizes character by character, each result keeps its own source;
// where characters merge (NFC of e + U+0301), the result comes from the whole segment.
void normalize_piece(Piece& p, const std::string& form) {
  Piece out;
  for (size_t i = 0; i < p.chars.size();) {
    size_t j = i + 1;
    while (j < p.chars.size() && !has_boundary_before(p.chars[j], form)) ++j;
    const std::u32string whole = normalize(p.chars.substr(i, j - i), form);
    std::u32string joined;
    std::vector<Span> from;
    for (size_t k = i; k < j; ++k) {
      const std::u32string part = normalize(std::u32string(1, p.chars[k]), form);
      joined += part;
      from.insert(from.end(), part.size(), p.from[k]);
    }
    if (joined != whole) {
      // Characters merged: each result comes from the source character at its place (the
      // library's alignment: a composed character from the first of its parts).
      from.clear();
      for (size_t k = 0; k < whole.size(); ++k) from.push_back(p.from[std::min(i + k, j - 1)]);
    }
    out.chars += whole;
    out.from.insert(out.from.end(), from.begin(), from.end());
    i = j;
  }
  p = std::move(out);
}

std::u32string one(char32_t c) { return std::u32string(1, c); }

// BERT's CJK blocks as the library spells them: it starts Extension E at U+2B920, not U+2B820.
bool hf_is_cjk(char32_t c) { return is_cjk(c) && !(c >= 0x2B820 && c < 0x2B920); }

// ---- reading the file ------------------------------------------------------------------------

struct Reader {
  std::string where;
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(fmt::format("tokenizer.json '{}': {}", where, what));
  }
  const Json& field(const Json& j, const std::string& component, const std::string& key) const {
    if (!j.contains(key)) fail(fmt::format("the {} has no '{}'", component, key));
    return j.at(key);
  }
  bool flag(const Json& j, const std::string& key, bool otherwise) const {
    if (!j.contains(key) || j.at(key).is_null()) return otherwise;
    if (!j.at(key).is_boolean())
      fail(fmt::format("'{}' must be true or false, got {}", key, j.at(key).dump()));
    return j.at(key).get<bool>();
  }
  std::string text(const Json& j, const std::string& key, const std::string& otherwise) const {
    if (!j.contains(key) || j.at(key).is_null()) return otherwise;
    if (!j.at(key).is_string())
      fail(fmt::format("'{}' must be a string, got {}", key, j.at(key).dump()));
    return j.at(key).get<std::string>();
  }
  std::string type(const Json& j, const std::string& component) const {
    if (!j.is_object()) fail(fmt::format("the {} must be an object, got {}", component, j.dump()));
    return text(j, "type", "");
  }
  [[noreturn]] void unsupported(const std::string& component, const std::string& type,
                                const std::string& supported) const {
    fail(fmt::format("the {} '{}' is not supported (this tokenizer reads: {})", component,
                     type.empty() ? "(no type)" : type, supported));
  }
};

// ---- normalizers -----------------------------------------------------------------------------

using Normalizer = std::function<void(Piece&)>;

Normalizer read_normalizer(const Json& j, const Reader& r) {
  const std::string type = r.type(j, "normalizer");
  if (type == "Sequence") {
    std::vector<Normalizer> steps;
    for (const auto& step : r.field(j, "normalizer", "normalizers"))
      steps.push_back(read_normalizer(step, r));
    return [steps](Piece& p) {
      for (const auto& s : steps) s(p);
    };
  }
  if (type == "BertNormalizer") {
    const bool clean = r.flag(j, "clean_text", true),
               chinese = r.flag(j, "handle_chinese_chars", true);
    const bool lower = r.flag(j, "lowercase", true), strip = r.flag(j, "strip_accents", lower);
    return [=](Piece& p) {
      // The order of the library's BertNormalizer: clean, CJK, accents, case.
      if (clean)
        map_chars(p, [](char32_t c) {
          if (c == 0 || c == 0xFFFD || hf_is_control(c)) return std::u32string();
          return one(c == '\t' || c == '\n' || c == '\r' || is_white_space(c) ? U' ' : c);
        });
      if (chinese)
        map_chars(p, [](char32_t c) {
          return hf_is_cjk(c) ? std::u32string{U' ', c, U' '} : one(c);
        });
      if (strip) {
        normalize_piece(p, "NFD");
        map_chars(p,
                  [](char32_t c) { return hf_is_nonspacing_mark(c) ? std::u32string() : one(c); });
      }
      if (lower) map_chars(p, [](char32_t c) { return to_lower(c); });
    };
  }
  if (type == "Lowercase")
    return [](Piece& p) { map_chars(p, [](char32_t c) { return to_lower(c); }); };
  if (type == "StripAccents")
    return [](Piece& p) {
      map_chars(p, [](char32_t c) { return hf_is_mark(c) ? std::u32string() : one(c); });
    };
  if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD")
    return [type](Piece& p) { normalize_piece(p, type); };
  if (type == "Strip") {
    const bool left = r.flag(j, "strip_left", true), right = r.flag(j, "strip_right", true);
    return [=](Piece& p) {
      size_t b = 0, e = p.chars.size();
      while (left && b < e && is_white_space(p.chars[b])) ++b;
      while (right && e > b && is_white_space(p.chars[e - 1])) --e;
      p = slice(p, b, e);
    };
  }
  r.unsupported("normalizer", type,
                "BertNormalizer, Lowercase, StripAccents, NFC, NFD, NFKC, NFKD, Strip, Sequence");
}

// ---- pre-tokenizers --------------------------------------------------------------------------

using PreTokenizer = std::function<std::vector<Piece>(std::vector<Piece>)>;

// Splits every piece into the ranges `cut` returns; characters outside them are dropped.
template <typename Cut>
std::vector<Piece> split_each(const std::vector<Piece>& pieces, Cut cut) {
  std::vector<Piece> out;
  for (const auto& p : pieces)
    for (auto [b, e] : cut(p.chars))
      if (e > b) out.push_back(slice(p, b, e));
  return out;
}

using Ranges = std::vector<std::pair<size_t, size_t>>;

// Runs of characters of one class: kept (class 0), dropped (1) or each alone (2); with
// `contiguous`, a run of class 2 stays together.
template <typename Classify>
Ranges runs(const std::u32string& s, Classify classify, bool contiguous = false) {
  Ranges out;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const int c = classify(s[i]);
    if (c == 0) continue;
    if (i > start) out.push_back({start, i});
    if (c == 2) {
      size_t j = i + 1;
      while (contiguous && j < s.size() && classify(s[j]) == 2) ++j;
      out.push_back({i, j});
      i = j - 1;
    }
    start = i + 1;
  }
  if (s.size() > start) out.push_back({start, s.size()});
  return out;
}

// GPT-2's pattern: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
Ranges gpt2_pieces(const std::u32string& s) {
  auto other = [](char32_t c) { return !is_white_space(c) && !is_letter(c) && !is_number(c); };
  Ranges out;
  const size_t n = s.size();
  for (size_t i = 0; i < n;) {
    size_t j = i;
    auto run_of = [&](size_t from, auto in_class) {
      size_t k = from;
      while (k < n && in_class(s[k])) ++k;
      return k;
    };
    if (s[i] == '\'' && i + 1 < n) {
      const std::u32string two = s.substr(i + 1, 2);
      if (two == U"re" || two == U"ve" || two == U"ll")
        j = i + 3;
      else if (s[i + 1] == 's' || s[i + 1] == 't' || s[i + 1] == 'm' || s[i + 1] == 'd')
        j = i + 2;
    }
    if (j == i) {
      const size_t k = s[i] == ' ' && i + 1 < n ? i + 1 : i;  // the optional leading space
      if (is_letter(s[k]))
        j = run_of(k, is_letter);
      else if (is_number(s[k]))
        j = run_of(k, is_number);
      else if (other(s[k]))
        j = run_of(k, other);
    }
    if (j == i) {  // whitespace: \s+(?!\S) leaves the last one to the word after it, else \s+
      const size_t k = run_of(i, is_white_space);
      j = k == n || k - i == 1 ? k : k - 1;
    }
    out.push_back({i, j});
    i = j;
  }
  return out;
}

// The byte of GPT-2's byte-to-character table: printable bytes stand for themselves, the
// others for 256 and up, in order.
const std::vector<char32_t>& byte_chars() {
  static const std::vector<char32_t> table = [] {
    std::vector<char32_t> t(256);
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
      t[static_cast<size_t>(b)] = printable ? static_cast<char32_t>(b) : next++;
    }
    return t;
  }();
  return table;
}

// Whitespace's pattern \w+|[^\w\s]+: runs of word characters, and runs of the others that are
// not white space.
Ranges word_or_symbol_runs(const std::u32string& s) {
  Ranges out;
  for (size_t i = 0; i < s.size();) {
    if (is_white_space(s[i]) && !is_word_char(s[i])) {
      ++i;
      continue;
    }
    const bool word = is_word_char(s[i]);
    size_t j = i + 1;
    while (j < s.size() &&
           (word ? is_word_char(s[j]) : !is_word_char(s[j]) && !is_white_space(s[j])))
      ++j;
    out.push_back({i, j});
    i = j;
  }
  return out;
}

Ranges white_space_split(const std::u32string& s) {
  return runs(s, [](char32_t c) { return is_white_space(c) ? 1 : 0; });
}

// Each character becomes the characters of its UTF-8 bytes, all from where it came from.
void to_byte_chars(Piece& p) {
  map_chars(p, [](char32_t c) {
    std::u32string bytes;
    for (unsigned char b : to_utf8(c)) bytes.push_back(byte_chars()[b]);
    return bytes;
  });
}

PreTokenizer read_pre_tokenizer(const Json& j, const Reader& r);

PreTokenizer read_pre_tokenizer_sequence(const Json& j, const Reader& r) {
  std::vector<PreTokenizer> steps;
  for (const auto& step : r.field(j, "pre_tokenizer", "pretokenizers"))
    steps.push_back(read_pre_tokenizer(step, r));
  return [steps](std::vector<Piece> pieces) {
    for (const auto& s : steps) pieces = s(std::move(pieces));
    return pieces;
  };
}

PreTokenizer read_punctuation(const Json& j, const Reader& r) {
  const std::string behavior = r.text(j, "behavior", "Isolated");
  if (behavior != "Isolated" && behavior != "Contiguous" && behavior != "Removed")
    r.fail(
        fmt::format("the Punctuation pre-tokenizer's behavior '{}' is not supported "
                    "(this tokenizer reads: Isolated, Contiguous, Removed)",
                    behavior));
  const int kind = behavior == "Removed" ? 1 : 2;
  const bool contiguous = behavior == "Contiguous";
  return [kind, contiguous](std::vector<Piece> pieces) {
    return split_each(pieces, [&](const std::u32string& s) {
      return runs(
          s, [&](char32_t c) { return hf_is_punctuation(c) ? kind : 0; }, contiguous);
    });
  };
}

PreTokenizer read_digits(const Json& j, const Reader& r) {
  const bool individual = r.flag(j, "individual_digits", false);
  return [individual](std::vector<Piece> pieces) {
    return split_each(pieces, [&](const std::u32string& s) {
      return runs(
          s, [](char32_t c) { return is_number(c) ? 2 : 0; }, !individual);
    });
  };
}

PreTokenizer read_byte_level(const Json& j, const Reader& r) {
  const bool prefix = r.flag(j, "add_prefix_space", true), regex = r.flag(j, "use_regex", true);
  return [prefix, regex](std::vector<Piece> pieces) {
    for (auto& p : pieces)
      if (prefix && !p.chars.empty() && p.chars[0] != ' ') {
        p.chars.insert(p.chars.begin(), U' ');
        p.from.insert(p.from.begin(), p.from[0]);
      }
    if (regex) pieces = split_each(pieces, gpt2_pieces);
    for (auto& p : pieces) to_byte_chars(p);
    return pieces;
  };
}

// The pre-tokenizers this class reads, by the name of their "type".
using PreTokenizerReader = PreTokenizer (*)(const Json&, const Reader&);
const std::map<std::string, PreTokenizerReader>& pre_tokenizer_readers() {
  static const std::map<std::string, PreTokenizerReader> readers = {
      {"Sequence", read_pre_tokenizer_sequence},
      {"BertPreTokenizer",
       [](const Json&, const Reader&) -> PreTokenizer {
         // White space splits; each punctuation character is a word of its own.
         return [](std::vector<Piece> pieces) {
           return split_each(split_each(pieces, white_space_split), [](const std::u32string& s) {
             return runs(s, [](char32_t c) { return hf_is_punctuation(c) ? 2 : 0; });
           });
         };
       }},
      {"WhitespaceSplit",
       [](const Json&, const Reader&) -> PreTokenizer {
         return [](std::vector<Piece> pieces) { return split_each(pieces, white_space_split); };
       }},
      {"Whitespace",
       [](const Json&, const Reader&) -> PreTokenizer {
         return [](std::vector<Piece> pieces) { return split_each(pieces, word_or_symbol_runs); };
       }},
      {"Punctuation", read_punctuation},
      {"Digits", read_digits},
      {"ByteLevel", read_byte_level}};
  return readers;
}

PreTokenizer read_pre_tokenizer(const Json& j, const Reader& r) {
  const std::string type = r.type(j, "pre_tokenizer");
  const auto& readers = pre_tokenizer_readers();
  if (const auto it = readers.find(type); it != readers.end()) return it->second(j, r);
  r.unsupported("pre_tokenizer", type,
                "BertPreTokenizer, Whitespace, WhitespaceSplit, ByteLevel, Punctuation, Digits, "
                "Sequence");
}

// ---- models ----------------------------------------------------------------------------------

struct Token {
  std::string text;
  int64_t id;
  Span offsets;
};

// The model: WordPiece (wordpiece.hpp) and BPE (bpe_merges.hpp) as BertTokenizer and
// BpeTokenizer run them, with the file's settings; WordLevel looks each word up whole.
struct Model {
  std::string type, unk;
  std::unordered_map<std::string, int64_t> vocab;
  std::vector<std::string> names;  // by id
  WordPiece wordpiece;
  BpeMerges merges;
  std::string prefix, suffix;  // BPE's continuing_subword_prefix and end_of_word_suffix
  bool fuse_unk = false, ignore_merges = false;

  int64_t find(const std::string& token) const {
    const auto it = vocab.find(token);
    return it == vocab.end() ? -1 : it->second;
  }

  std::vector<Token> tokenize(const Piece& word) const {
    if (type == "WordPiece") return wordpiece_tokens(word);
    const std::string whole = to_utf8(std::vector<char32_t>(word.chars.begin(), word.chars.end()));
    const Span all = span_of(word, 0, word.chars.size());
    if (type == "WordLevel" || (ignore_merges && find(whole) >= 0)) {
      const int64_t id = find(whole);
      return {id >= 0 ? Token{whole, id, all} : Token{unk, find(unk), all}};
    }
    return bpe_tokens(word);
  }

  std::vector<Token> wordpiece_tokens(const Piece& word) const {
    std::vector<Token> out;
    const WordPiece::Find lookup = [this](const std::string& token) { return find(token); };
    for (auto& piece : wordpiece.split(word.chars, lookup))
      out.push_back({std::move(piece.token), piece.id, span_of(word, piece.begin, piece.end)});
    return out;
  }

  // BPE's first symbols: one a character, the continuation prefix on all but the first and the
  // end-of-word suffix on the last. A character outside the vocabulary becomes the unk token
  // (with fuse_unk, a run of them one), or is dropped when the model has none.
  std::vector<BpeMerges::Symbol> bpe_symbols(const Piece& word) const {
    std::vector<BpeMerges::Symbol> symbols;
    const int64_t unk_id = find(unk);
    bool after_unknown = false;
    for (size_t i = 0; i < word.chars.size(); ++i) {
      std::string s = (i > 0 ? prefix : "") + to_utf8(word.chars[i]);
      if (i + 1 == word.chars.size()) s += suffix;
      const int64_t id = find(s);
      if (id < 0 && unk.empty()) continue;
      if (id < 0 && fuse_unk && after_unknown)
        symbols.back().end = i + 1;
      else
        symbols.push_back({id < 0 ? unk_id : id, i, i + 1});
      after_unknown = id < 0;
    }
    return symbols;
  }

  std::vector<Token> bpe_tokens(const Piece& word) const {
    std::vector<Token> out;
    for (const auto& s : merges.apply(bpe_symbols(word)))
      out.push_back({names[static_cast<size_t>(s.id)], s.id, span_of(word, s.begin, s.end)});
    return out;
  }
};

}  // namespace

// ---- the pipeline ----------------------------------------------------------------------------

struct HuggingFaceTokenizer::Pipeline {
  struct Added {
    std::u32string chars;
    int64_t id;
    bool special, lstrip, rstrip, normalized;
  };
  std::string json;
  std::vector<Added> added;
  std::optional<Normalizer> normalizer;
  std::optional<PreTokenizer> pre_tokenizer;
  Model model;
  // Post-processing: the byte-level offset trimming, then the template.
  struct Template {
    struct Item {
      bool sequence;
      int64_t which;  // sequence: 0 (A) or 1 (B)
      std::vector<std::string> tokens;
      std::vector<int64_t> ids;
      int64_t type_id;
    };
    std::vector<Item> single, pair;
  };
  struct PostStep {
    bool trim_offsets = false, add_prefix_space = false;  // ByteLevel
    std::optional<Template> templ;
  };
  std::vector<PostStep> post;
  std::string decoder = "", decoder_prefix = "##", decoder_suffix = "</w>";
  bool decoder_cleanup = true;

  struct Sequence {
    std::vector<Token> tokens;
    std::vector<int64_t> type_ids, sequence_ids, special;
    // Truncates to the first n tokens.
    void keep(size_t n) {
      tokens.resize(n);
      type_ids.resize(n);
      sequence_ids.resize(n);
      special.resize(n);
    }
  };

  // The tokens of one text, before post-processing.
  std::vector<Token> tokenize(const std::string& text) const {
    const std::vector<char32_t> cps = code_points(text);
    const std::u32string s(cps.begin(), cps.end());
    std::vector<Token> out;
    // Added tokens matched on the raw text cut it first; the pieces between are normalized and
    // may hold the added tokens that are matched after normalization.
    struct Chunk {
      Piece piece;
      int64_t added = -1;  // index into `added`
    };
    std::vector<Chunk> chunks{{original(s, 0, static_cast<int64_t>(s.size()))}};
    chunks = split_added(chunks, false);
    for (auto& c : chunks)
      if (c.added < 0 && normalizer) (*normalizer)(c.piece);
    chunks = split_added(chunks, true);
    for (const auto& c : chunks) {
      if (c.added >= 0) {
        const auto& a = added[static_cast<size_t>(c.added)];
        out.push_back({to_utf8(std::vector<char32_t>(c.piece.chars.begin(), c.piece.chars.end())),
                       a.id, span_of(c.piece, 0, c.piece.chars.size())});
        continue;
      }
      std::vector<Piece> words{c.piece};
      if (pre_tokenizer) words = (*pre_tokenizer)(std::move(words));
      for (const auto& w : words) {
        if (w.chars.empty()) continue;
        for (auto& t : model.tokenize(w)) out.push_back(std::move(t));
      }
    }
    return out;
  }

  template <typename Chunks>
  Chunks split_added(const Chunks& chunks, bool normalized) const {
    Chunks out;
    for (const auto& c : chunks) {
      if (c.added >= 0) {
        out.push_back(c);
        continue;
      }
      const std::u32string& text = c.piece.chars;
      size_t start = 0;
      for (size_t i = 0; i < text.size();) {
        // The longest added token that starts here (leftmost-longest, as the library's matcher).
        int64_t best = -1;
        for (size_t a = 0; a < added.size(); ++a) {
          const auto& t = added[a];
          if (t.normalized != normalized || t.chars.empty()) continue;
          if (text.compare(i, t.chars.size(), t.chars) == 0 &&
              (best < 0 || t.chars.size() > added[static_cast<size_t>(best)].chars.size()))
            best = static_cast<int64_t>(a);
        }
        if (best < 0) {
          ++i;
          continue;
        }
        const auto& t = added[static_cast<size_t>(best)];
        size_t b = i, e = i + t.chars.size();
        while (t.lstrip && b > start && is_white_space(text[b - 1])) --b;
        while (t.rstrip && e < text.size() && is_white_space(text[e])) ++e;
        if (b > start) out.push_back({slice(c.piece, start, b)});
        out.push_back({slice(c.piece, b, e), best});
        start = i = e;
      }
      if (text.size() > start) out.push_back({slice(c.piece, start, text.size())});
    }
    return out;
  }

  // The library's byte-level offset trimming: a token's leading and trailing spaces ("Ġ") are not
  // part of its offsets, except the space add_prefix_space put before the first word.
  static void trim_offsets(Sequence& seq, bool add_prefix_space) {
    const char32_t space = byte_chars()[' '];
    for (size_t i = 0; i < seq.tokens.size(); ++i) {
      auto& t = seq.tokens[i];
      const std::vector<char32_t> cs = code_points(t.text);
      size_t lead = 0, trail = 0;
      while (lead < cs.size() && (cs[lead] == space || is_white_space(cs[lead]))) ++lead;
      while (trail < cs.size() &&
             (cs[cs.size() - 1 - trail] == space || is_white_space(cs[cs.size() - 1 - trail])))
        ++trail;
      auto& [b, e] = t.offsets;
      if (lead > 0) {
        const bool first = i == 0 || b == 0;
        if (!(first && add_prefix_space && lead == 1))
          b = std::min(b + static_cast<int64_t>(lead), e);
      }
      if (trail > 0 && e >= static_cast<int64_t>(trail))
        e = std::max(e - static_cast<int64_t>(trail), b);
    }
  }

  std::vector<Sequence> post_process(std::vector<Sequence> seqs, bool add_special) const {
    for (const auto& step : post) {
      if (!step.templ) {
        for (auto& s : seqs) trim_offsets(s, step.add_prefix_space);
        continue;
      }
      const auto& items = seqs.size() == 2 ? step.templ->pair : step.templ->single;
      Sequence merged;
      for (const auto& item : items) {
        if (item.sequence) {
          const auto& s = seqs[static_cast<size_t>(item.which)];
          for (size_t k = 0; k < s.tokens.size(); ++k) {
            merged.tokens.push_back(s.tokens[k]);
            merged.type_ids.push_back(item.type_id);
            merged.sequence_ids.push_back(item.which);
            merged.special.push_back(s.special[k]);
          }
        } else if (add_special) {
          for (size_t k = 0; k < item.ids.size(); ++k) {
            merged.tokens.push_back({item.tokens[k], item.ids[k], {0, 0}});
            merged.type_ids.push_back(item.type_id);
            merged.sequence_ids.push_back(-1);
            merged.special.push_back(1);
          }
        }
      }
      seqs = {merged};
    }
    if (seqs.size() == 2) {  // no template: A then B
      for (size_t k = 0; k < seqs[1].tokens.size(); ++k) {
        seqs[0].tokens.push_back(seqs[1].tokens[k]);
        seqs[0].type_ids.push_back(seqs[1].type_ids[k]);
        seqs[0].sequence_ids.push_back(1);
        seqs[0].special.push_back(seqs[1].special[k]);
      }
      seqs.pop_back();
    }
    return seqs;
  }

  int64_t added_by_template(bool pair) const {
    int64_t n = 0;
    for (const auto& step : post)
      if (step.templ)
        for (const auto& item : pair ? step.templ->pair : step.templ->single)
          if (!item.sequence) n += static_cast<int64_t>(item.ids.size());
    return n;
  }

  Sequence sequence(const std::string& text, int64_t index) const {
    Sequence s;
    s.tokens = tokenize(text);
    // The library's special_tokens_mask marks only what the post-processor adds.
    for (size_t k = 0; k < s.tokens.size(); ++k) {
      s.type_ids.push_back(index);
      s.sequence_ids.push_back(index);
      s.special.push_back(0);
    }
    return s;
  }
};

namespace {

using Pipeline = HuggingFaceTokenizer::Pipeline;

void read_template(Pipeline& p, const Json& j, const Reader& r) {
  Pipeline::Template t;
  std::map<std::string, std::pair<std::vector<std::string>, std::vector<int64_t>>> specials;
  if (j.contains("special_tokens"))
    for (const auto& [name, value] : j.at("special_tokens").items()) {
      auto& s = specials[name];
      for (const auto& id : r.field(value, "special token", "ids"))
        s.second.push_back(id.get<int64_t>());
      for (const auto& tok : r.field(value, "special token", "tokens"))
        s.first.push_back(tok.get<std::string>());
      if (s.first.size() != s.second.size())
        r.fail(fmt::format("the special token '{}' has {} tokens but {} ids", name, s.first.size(),
                           s.second.size()));
    }
  auto read_items = [&](const Json& list) {
    std::vector<Pipeline::Template::Item> items;
    for (const auto& piece : list) {
      Pipeline::Template::Item item{};
      if (piece.contains("Sequence")) {
        const auto& s = piece.at("Sequence");
        item.sequence = true;
        item.which = r.text(s, "id", "A") == "B" ? 1 : 0;
        item.type_id = s.value("type_id", int64_t{0});
      } else if (piece.contains("SpecialToken")) {
        const auto& s = piece.at("SpecialToken");
        const std::string name = r.text(s, "id", "");
        const auto it = specials.find(name);
        if (it == specials.end())
          r.fail(fmt::format(
              "the template names the special token '{}', which special_tokens does not define",
              name));
        item.tokens = it->second.first;
        item.ids = it->second.second;
        item.type_id = s.value("type_id", int64_t{0});
      } else {
        r.fail(fmt::format("a template piece must be a Sequence or a SpecialToken, got {}",
                           piece.dump()));
      }
      items.push_back(item);
    }
    return items;
  };
  t.single = read_items(r.field(j, "TemplateProcessing", "single"));
  t.pair = read_items(r.field(j, "TemplateProcessing", "pair"));
  Pipeline::PostStep step;
  step.templ = t;
  p.post.push_back(step);
}

void read_post_processor(Pipeline& p, const Json& j, const Reader& r) {
  const std::string type = r.type(j, "post_processor");
  if (type == "Sequence") {
    for (const auto& step : r.field(j, "post_processor", "processors"))
      read_post_processor(p, step, r);
    return;
  }
  if (type == "TemplateProcessing") return read_template(p, j, r);
  if (type == "BertProcessing") {
    // [CLS] A [SEP] and [CLS] A [SEP] B [SEP], B's part of type 1.
    const auto& sep = r.field(j, "BertProcessing", "sep");
    const auto& cls = r.field(j, "BertProcessing", "cls");
    if (!sep.is_array() || sep.size() != 2 || !cls.is_array() || cls.size() != 2)
      r.fail("BertProcessing's sep and cls must be [token, id]");
    Json t = {
        {"single", Json::array({{{"SpecialToken", {{"id", cls[0]}, {"type_id", 0}}}},
                                {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                                {{"SpecialToken", {{"id", sep[0]}, {"type_id", 0}}}}})},
        {"pair", Json::array({{{"SpecialToken", {{"id", cls[0]}, {"type_id", 0}}}},
                              {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                              {{"SpecialToken", {{"id", sep[0]}, {"type_id", 0}}}},
                              {{"Sequence", {{"id", "B"}, {"type_id", 1}}}},
                              {{"SpecialToken", {{"id", sep[0]}, {"type_id", 1}}}}})},
        {"special_tokens",
         {{cls[0].get<std::string>(), {{"id", cls[0]}, {"ids", {cls[1]}}, {"tokens", {cls[0]}}}},
          {sep[0].get<std::string>(), {{"id", sep[0]}, {"ids", {sep[1]}}, {"tokens", {sep[0]}}}}}}};
    return read_template(p, t, r);
  }
  if (type == "ByteLevel") {
    Pipeline::PostStep step;
    step.trim_offsets = r.flag(j, "trim_offsets", true);
    step.add_prefix_space = r.flag(j, "add_prefix_space", true);
    if (step.trim_offsets) p.post.push_back(step);
    return;
  }
  r.unsupported("post_processor", type, "TemplateProcessing, BertProcessing, ByteLevel, Sequence");
}

// "a b" or ["a", "b"]: the two tokens of a merge.
std::pair<std::string, std::string> read_merge(const Json& merge, const Reader& r) {
  if (merge.is_array() && merge.size() == 2)
    return {merge[0].get<std::string>(), merge[1].get<std::string>()};
  if (!merge.is_string()) r.fail(fmt::format("merge {} must be \"a b\" or [a, b]", merge.dump()));
  const std::string s = merge.get<std::string>();
  const auto space = s.find(' ');
  if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
    r.fail(fmt::format("merge {} must be two tokens with one space between", merge.dump()));
  return {s.substr(0, space), s.substr(space + 1)};
}

void read_bpe(Model& model, const Json& m, const Reader& r) {
  model.prefix = r.text(m, "continuing_subword_prefix", "");
  model.suffix = r.text(m, "end_of_word_suffix", "");
  model.fuse_unk = r.flag(m, "fuse_unk", false);
  model.ignore_merges = r.flag(m, "ignore_merges", false);
  if (r.flag(m, "byte_fallback", false))
    r.fail("the BPE model's byte_fallback is not supported (this tokenizer reads BPE without it)");
  if (m.contains("dropout") && !m.at("dropout").is_null() && m.at("dropout").get<double>() != 0.0)
    r.fail("the BPE model's dropout is not supported: it makes tokenization random");
  for (const auto& merge : r.field(m, "model", "merges")) {
    const auto [a, b] = read_merge(merge, r);
    // The right token's continuation prefix is not part of the merged token.
    const std::string joined = a + b.substr(std::min(b.size(), model.prefix.size()));
    for (const std::string& t : {a, b, joined})
      if (!model.vocab.count(t))
        r.fail(fmt::format("merge {} needs '{}', which is not in the vocab", merge.dump(), t));
    model.merges.add(model.vocab.at(a), model.vocab.at(b), model.vocab.at(joined));
  }
}

Model read_model(const Json& m, const Reader& r) {
  Model model;
  model.type = r.type(m, "model");
  if (model.type.empty() && m.contains("merges")) model.type = "BPE";
  if (model.type.empty() && m.contains("continuing_subword_prefix")) model.type = "WordPiece";
  if (model.type != "WordPiece" && model.type != "BPE" && model.type != "WordLevel")
    r.unsupported("model", model.type, "WordPiece, BPE, WordLevel");
  const Json& vocab = r.field(m, "model", "vocab");
  if (!vocab.is_object()) r.fail("the model's vocab must be an object of token: id");
  for (const auto& [token, id] : vocab.items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0)
      r.fail(fmt::format("the vocab's id of '{}' must be a whole number from 0, got {}", token,
                         id.dump()));
    model.vocab[token] = id.get<int64_t>();
  }
  model.unk = r.text(m, "unk_token", model.type == "BPE" ? "" : "[UNK]");
  if (!model.unk.empty() && !model.vocab.count(model.unk))
    r.fail(fmt::format("the model's unk_token '{}' is not in its vocab", model.unk));
  if (model.type == "WordPiece") {
    model.wordpiece.unk_token = model.unk;
    model.wordpiece.continuing_subword_prefix = r.text(m, "continuing_subword_prefix", "##");
    if (m.contains("max_input_chars_per_word"))
      model.wordpiece.max_input_chars_per_word = m.at("max_input_chars_per_word").get<size_t>();
  }
  if (model.type == "BPE") read_bpe(model, m, r);
  return model;
}

std::vector<Pipeline::Added> read_added_tokens(const Json& j, const Reader& r) {
  std::vector<Pipeline::Added> added;
  if (!j.contains("added_tokens") || j.at("added_tokens").is_null()) return added;
  for (const auto& a : j.at("added_tokens")) {
    const std::string content = r.text(a, "content", "");
    if (r.flag(a, "single_word", false))
      r.fail(fmt::format("the added token '{}' has single_word, which is not supported", content));
    const std::vector<char32_t> cs = code_points(content);
    const bool special = r.flag(a, "special", false);
    added.push_back({std::u32string(cs.begin(), cs.end()), a.at("id").get<int64_t>(), special,
                     r.flag(a, "lstrip", false), r.flag(a, "rstrip", false),
                     r.flag(a, "normalized", !special)});
  }
  return added;
}

void read_decoder(Pipeline& p, const Json& d, const Reader& r) {
  p.decoder = r.type(d, "decoder");
  if (p.decoder == "WordPiece") {
    p.decoder_prefix = r.text(d, "prefix", "##");
    p.decoder_cleanup = r.flag(d, "cleanup", true);
  } else if (p.decoder == "BPEDecoder") {
    p.decoder_suffix = r.text(d, "suffix", "</w>");
  } else if (p.decoder != "ByteLevel") {
    r.unsupported("decoder", p.decoder, "WordPiece, ByteLevel, BPEDecoder");
  }
}

// The steps around the model, each where the file names one.
void read_steps(Pipeline& p, const Json& j, const Reader& r) {
  auto given = [&](const char* key) { return j.contains(key) && !j.at(key).is_null(); };
  if (given("normalizer")) p.normalizer = read_normalizer(j.at("normalizer"), r);
  // A normalized added token is matched on normalized text, so in its normalized spelling.
  for (auto& a : p.added)
    if (a.normalized && p.normalizer) {
      Piece piece = original(a.chars, 0, static_cast<int64_t>(a.chars.size()));
      (*p.normalizer)(piece);
      a.chars = piece.chars;
    }
  if (given("pre_tokenizer")) p.pre_tokenizer = read_pre_tokenizer(j.at("pre_tokenizer"), r);
  if (given("post_processor")) read_post_processor(p, j.at("post_processor"), r);
  if (given("decoder")) read_decoder(p, j.at("decoder"), r);
}

// The vocabulary: the model's tokens, then the added ones, by id with no gaps.
std::vector<std::string> tokens_by_id(const Pipeline& p, const Reader& r) {
  std::vector<std::string> tokens;
  std::vector<bool> seen;
  auto put = [&](const std::string& token, int64_t id) {
    // Ids run from 0 without gaps, so none is past the number of tokens: checked before the
    // table grows to it.
    const auto count = static_cast<int64_t>(p.model.vocab.size() + p.added.size());
    if (id < 0 || id >= count)
      r.fail(fmt::format(
          "the id {} of '{}' is outside 0 .. {} (the vocab's {} tokens and {} added ones have ids "
          "from 0 without gaps)",
          id, token, count - 1, p.model.vocab.size(), p.added.size()));
    const auto at = static_cast<size_t>(id);
    if (at >= tokens.size()) {
      tokens.resize(at + 1);
      seen.resize(at + 1, false);
    }
    if (seen[at] && tokens[at] != token)
      r.fail(fmt::format("the id {} is given to both '{}' and '{}'", id, tokens[at], token));
    tokens[at] = token;
    seen[at] = true;
  };
  for (const auto& [token, id] : p.model.vocab) put(token, id);
  for (const auto& a : p.added)
    put(to_utf8(std::vector<char32_t>(a.chars.begin(), a.chars.end())), a.id);
  for (size_t id = 0; id < seen.size(); ++id)
    if (!seen[id])
      r.fail(fmt::format("no token has the id {} (ids must run from 0 without gaps)", id));
  return tokens;
}

// The post-processor's special tokens must be tokens of the vocabulary.
void check_special_ids(const Pipeline& p, size_t vocab_size, const Reader& r) {
  for (const auto& step : p.post)
    if (step.templ)
      for (const auto* items : {&step.templ->single, &step.templ->pair})
        for (const auto& item : *items)
          for (size_t k = 0; k < item.ids.size(); ++k)
            if (item.ids[k] < 0 || item.ids[k] >= static_cast<int64_t>(vocab_size))
              r.fail(
                  fmt::format("the post-processor's special token '{}' has the id {}, outside "
                              "the vocabulary of {}",
                              item.tokens[k], item.ids[k], vocab_size));
}

}  // namespace

HuggingFaceTokenizer::HuggingFaceTokenizer() : p_(std::make_unique<Pipeline>()) {}
HuggingFaceTokenizer::~HuggingFaceTokenizer() = default;

std::unique_ptr<HuggingFaceTokenizer> HuggingFaceTokenizer::load(const std::string& path) {
  std::string file = path;
  if (std::filesystem::is_directory(path))
    file = (std::filesystem::path(path) / "tokenizer.json").string();
  std::ifstream f = open_input("tokenizer.json", file);
  std::stringstream ss;
  ss << f.rdbuf();
  return parse(ss.str(), file);
}

std::unique_ptr<HuggingFaceTokenizer> HuggingFaceTokenizer::parse(const std::string& text,
                                                                  const std::string& where) {
  const Reader r{where};
  Json j;
  try {
    j = Json::parse(text, json_depth_limit("tokenizer.json " + where));
  } catch (const Json::exception& e) {
    r.fail(fmt::format("not valid JSON ({})", e.what()));
  }
  if (!j.is_object() || !j.contains("model"))
    r.fail("not a tokenizer.json of the tokenizers library (expected an object with a 'model')");
  std::unique_ptr<HuggingFaceTokenizer> out(new HuggingFaceTokenizer());
  Pipeline& p = *out->p_;
  p.json = text;
  try {
    p.model = read_model(j.at("model"), r);
    p.added = read_added_tokens(j, r);
    read_steps(p, j, r);
  } catch (const Json::exception& e) {
    r.fail(fmt::format("a field has the wrong type ({})", e.what()));
  }
  p.model.names = tokens_by_id(p, r);
  check_special_ids(p, p.model.names.size(), r);
  try {
    out->vocab_ = Vocabulary(p.model.names);
  } catch (const Error& e) {
    r.fail(e.what());
  }
  return out;
}

const std::string& HuggingFaceTokenizer::json() const { return p_->json; }

Encoding HuggingFaceTokenizer::encode_full(const std::string& text,
                                           const std::optional<std::string>& pair,
                                           bool add_special_tokens) const {
  std::vector<Pipeline::Sequence> seqs{p_->sequence(text, 0)};
  if (pair) seqs.push_back(p_->sequence(*pair, 1));
  const auto merged = p_->post_process(std::move(seqs), add_special_tokens).at(0);
  Encoding e;
  for (size_t k = 0; k < merged.tokens.size(); ++k) {
    const auto& t = merged.tokens[k];
    e.tokens.push_back(t.text);  // an added token's as matched, stripped spaces included
    e.ids.push_back(t.id);
    e.offsets.push_back(t.offsets);
  }
  e.type_ids = merged.type_ids;
  e.sequence_ids = merged.sequence_ids;
  e.special_tokens_mask = merged.special;
  e.attention_mask.assign(e.ids.size(), 1);
  return e;
}

std::vector<std::string> HuggingFaceTokenizer::tokenize(const std::string& text) const {
  return encode_full(text, {}, false).tokens;
}

BertEncoding HuggingFaceTokenizer::encode_plus(const std::string& text,
                                               const std::optional<std::string>& text_pair,
                                               int64_t max_length) const {
  std::vector<Pipeline::Sequence> seqs{p_->sequence(text, 0)};
  if (text_pair) seqs.push_back(p_->sequence(*text_pair, 1));
  const size_t second = text_pair ? seqs[1].tokens.size() : 0;
  const auto [keep_a, keep_b] =
      truncate_longest_first(seqs[0].tokens.size(), second, text_pair.has_value(),
                             p_->added_by_template(text_pair.has_value()), max_length);
  seqs[0].keep(keep_a);
  if (text_pair) seqs[1].keep(keep_b);
  const auto merged = p_->post_process(std::move(seqs), true).at(0);
  BertEncoding e;
  for (size_t k = 0; k < merged.tokens.size(); ++k) {
    e.tokens.push_back(merged.tokens[k].text);
    e.input_ids.push_back(merged.tokens[k].id);
    if (merged.sequence_ids[k] == 1 && e.sentence_b_start < 0)
      e.sentence_b_start = static_cast<int64_t>(k);
  }
  e.token_type_ids = merged.type_ids;
  e.attention_mask.assign(e.input_ids.size(), 1);
  return e;
}

std::string HuggingFaceTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::vector<std::string> tokens;
  for (int64_t id : ids) {
    bool special = false;
    for (const auto& a : p_->added) special = special || (a.special && a.id == id);
    if (!special) tokens.push_back(vocab_.token(id));
  }
  std::string out;
  if (p_->decoder == "ByteLevel") {
    std::unordered_map<char32_t, char> byte_of;
    for (int b = 0; b < 256; ++b)
      byte_of[byte_chars()[static_cast<size_t>(b)]] = static_cast<char>(b);
    std::string bytes;
    for (const auto& t : tokens)
      for (char32_t c : code_points(t)) {
        const auto it = byte_of.find(c);
        bytes += it == byte_of.end() ? to_utf8(c) : std::string(1, it->second);
      }
    return to_utf8(
        code_points(bytes));  // invalid UTF-8 becomes U+FFFD, as the library's lossy decoding
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    std::string t = tokens[i];
    if (p_->decoder == "WordPiece") {
      if (i > 0 && t.rfind(p_->decoder_prefix, 0) == 0)
        t = t.substr(p_->decoder_prefix.size());
      else if (i > 0)
        t = " " + t;
    } else if (p_->decoder == "BPEDecoder") {
      const auto& suffix = p_->decoder_suffix;
      for (size_t at = 0; (at = t.find(suffix, at)) != std::string::npos;)
        t.replace(at, suffix.size(), i + 1 == tokens.size() ? "" : " ");
    } else if (i > 0) {
      t = " " + t;
    }
    out += t;
  }
  if (p_->decoder == "WordPiece" && p_->decoder_cleanup)
    for (const auto& [from, to] :
         std::vector<std::pair<std::string, std::string>>{{" .", "."},
                                                          {" ?", "?"},
                                                          {" !", "!"},
                                                          {" ,", ","},
                                                          {" ' ", "'"},
                                                          {" n't", "n't"},
                                                          {" 'm", "'m"},
                                                          {" do not", " don't"},
                                                          {" 's", "'s"},
                                                          {" 've", "'ve"},
                                                          {" 're", "'re"}})
      for (size_t at = 0; (at = out.find(from, at)) != std::string::npos; at += to.size())
        out.replace(at, from.size(), to);
  return out;
}

void HuggingFaceTokenizer::save(const std::string& path) const {
  Json j;
  j["kind"] = kind();
  j["tokenizer"] = Json::parse(p_->json);
  write_file_atomically(path + ".json", j.dump(2) + "\n");
  vocab_.save(path + ".vocab.txt", true);
}

std::shared_ptr<Tokenizer> load_folder_tokenizer(const std::string& dir) {
  namespace fs = std::filesystem;
  const fs::path d(dir);
  if (fs::exists(d / "tokenizer.json"))
    return HuggingFaceTokenizer::load((d / "tokenizer.json").string());
  if (!fs::exists(d / "vocab.txt"))
    throw Error(fmt::format(
        "model folder '{}': no tokenizer.json and no vocab.txt (one of them holds the tokenizer)",
        dir));
  bool lower = true;
  if (fs::exists(d / "tokenizer_config.json")) {
    std::ifstream f = open_input("tokenizer_config.json", (d / "tokenizer_config.json").string());
    std::stringstream ss;
    ss << f.rdbuf();
    const Json config = Json::parse(ss.str(), nullptr, false);
    if (config.is_object() && config.contains("do_lower_case") &&
        config["do_lower_case"].is_boolean())
      lower = config["do_lower_case"].get<bool>();
  }
  return std::make_shared<BertTokenizer>(
      BertTokenizer::from_vocab_file((d / "vocab.txt").string(), lower));
}

}  // namespace anatomy::text
