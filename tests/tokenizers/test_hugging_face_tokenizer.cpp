// HuggingFaceTokenizer on small tokenizer.json files whose encodings can be worked out by hand.
// tests/python/check_tokenizer_json.py holds it to the tokenizers library on real files.
#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <tuple>

#include "checkpoints/checkpoints.hpp"
#include "helpers.hpp"
#include "tokenizers/tokenizers.hpp"

using namespace anatomy;
using namespace anatomy::text;
using testing::check_error;
using Json = nlohmann::json;

namespace {

// BERT's pipeline over a few WordPiece entries.
Json wordpiece_file() { return Json::parse(testing::wordpiece_tokenizer_json()); }

// GPT-2's pipeline over the bytes of "hi hi": the merge h+i ranks before Ġ+h.
Json byte_level_file() {
  return Json::parse(R"({
    "added_tokens": [{"id": 6, "content": "<|endoftext|>", "special": true, "normalized": false,
                      "lstrip": false, "rstrip": false, "single_word": false}],
    "normalizer": null,
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true,
                      "use_regex": true},
    "post_processor": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true,
                       "use_regex": true},
    "decoder": {"type": "ByteLevel"},
    "model": {"type": "BPE", "dropout": null, "unk_token": null, "fuse_unk": false,
              "byte_fallback": false,
              "vocab": {"h": 0, "i": 1, "\u0120": 2, "hi": 3, "\u0120h": 4, "\u0120hi": 5},
              "merges": ["h i", "\u0120 h", "\u0120h i"]}})");
}

std::unique_ptr<HuggingFaceTokenizer> parse(const Json& j) {
  return HuggingFaceTokenizer::parse(j.dump(), "test.json");
}

using Offsets = std::vector<std::pair<int64_t, int64_t>>;

}  // namespace

TEST_CASE("tokenizer.json: BERT's pipeline, with ids, offsets and token types") {
  const auto tok = parse(wordpiece_file());
  // Lower-cased and accent-stripped, "é" stays the one character at 14 it came from.
  const Encoding e = tok->encode_full("UnAffable, Café!");
  CHECK(e.tokens == std::vector<std::string>{"[CLS]", "un", "##aff", "##able", ",", "caf", "##e",
                                             "[UNK]", "[SEP]"});
  CHECK(e.ids == std::vector<int64_t>{1, 3, 4, 5, 8, 6, 7, 0, 2});
  CHECK(e.offsets ==
        Offsets{{0, 0}, {0, 2}, {2, 5}, {5, 9}, {9, 10}, {11, 14}, {14, 15}, {15, 16}, {0, 0}});
  CHECK(e.special_tokens_mask == std::vector<int64_t>{1, 0, 0, 0, 0, 0, 0, 0, 1});
  CHECK(tok->tokenize("UnAffable") == std::vector<std::string>{"un", "##aff", "##able"});
  // A pair: B's offsets count from B's start, its part and last [SEP] of type 1.
  const Encoding p = tok->encode_full("caf", "cafe");
  CHECK(p.ids == std::vector<int64_t>{1, 6, 2, 6, 7, 2});
  CHECK(p.type_ids == std::vector<int64_t>{0, 0, 0, 1, 1, 1});
  CHECK(p.offsets == Offsets{{0, 0}, {0, 3}, {0, 0}, {0, 3}, {3, 4}, {0, 0}});
  CHECK(p.sequence_ids == std::vector<int64_t>{-1, 0, -1, 1, 1, -1});
  // encode_plus truncates the longer sentence first (of two as long, the second) and keeps the
  // special tokens: 3 + 2 pieces into 6 - 3 places leaves un ##aff and caf.
  const BertEncoding cut = tok->encode_plus("unaffable", std::string("cafe"), 6);
  CHECK(cut.input_ids == std::vector<int64_t>{1, 3, 4, 2, 6, 2});
  CHECK(cut.sentence_b_start == 4);
  check_error([&] { tok->encode_plus("a", std::string("b"), 2); }, {"at least 3", "got 2"});
  // Special tokens in the text are matched before normalization, so they are not lower-cased.
  CHECK(tok->encode_full("[SEP]cafe").ids == std::vector<int64_t>{1, 2, 6, 7, 2});
  // The WordPiece decoder joins "##" pieces and drops the specials.
  CHECK(tok->decode({1, 3, 4, 5, 8, 6, 7, 2}) == "unaffable, cafe");
}

// BertNormalizer puts spaces around each CJK ideograph, so each is a word of its own, in the
// library's blocks: U+2B81F ends Extension D, and its Extension E begins at U+2B920, not at
// Unicode's U+2B820 (expected values from the tokenizers library).
TEST_CASE("tokenizer.json: BertNormalizer's CJK ideographs are words, in the library's blocks") {
  const auto tok = parse(wordpiece_file());
  const Encoding e = tok->encode_full("un\u65E5aff");
  CHECK(e.ids == std::vector<int64_t>{1, 3, 0, 0, 2});
  CHECK(e.offsets == Offsets{{0, 0}, {0, 2}, {2, 3}, {3, 6}, {0, 0}});
  CHECK(tok->encode_full("a\U0002B81Fb").offsets ==
        Offsets{{0, 0}, {0, 1}, {1, 2}, {2, 3}, {0, 0}});
  CHECK(tok->encode_full("a\U0002B820b").offsets == Offsets{{0, 0}, {0, 3}, {0, 0}});
  CHECK(tok->encode_full("a\U0002B920b").offsets ==
        Offsets{{0, 0}, {0, 1}, {1, 2}, {2, 3}, {0, 0}});
}

TEST_CASE("tokenizer.json: GPT-2's byte-level BPE, merges by rank, offsets trimmed") {
  const auto tok = parse(byte_level_file());
  // "hi" then " hi" (the space joins the word after it). In " hi" the pair h+i (rank 0) merges
  // before Ġ+h (rank 1), and Ġ+hi is no merge: Ġ, hi.
  const Encoding e = tok->encode_full("hi hi");
  CHECK(e.tokens == std::vector<std::string>{"hi", "\u0120", "hi"});
  CHECK(e.ids == std::vector<int64_t>{3, 2, 3});
  // The space token's offsets lose the space (trim_offsets): empty, at 3.
  CHECK(e.offsets == Offsets{{0, 2}, {3, 3}, {3, 5}});
  CHECK(tok->encode_full("<|endoftext|>hi").ids == std::vector<int64_t>{6, 3});
  CHECK(tok->decode({3, 2, 3, 6}) == "hi hi");
  // A character the vocabulary cannot spell, with no unk_token, is dropped as the library does.
  CHECK(tok->encode_full("hix").ids == std::vector<int64_t>{3});
}

TEST_CASE("tokenizer.json: a merge that a merge makes possible, and BPEDecoder's suffixes") {
  // "abc": only b+c is a merge at first; once it is made, a+bc is one too, the pair of the
  // first symbol with the new one, which must be looked up again.
  Json j = byte_level_file();
  j["model"]["vocab"] = Json{{"a", 0},   {"b", 1},  {"c", 2},      {"bc", 3},
                             {"abc", 4}, {"ab", 5}, {"hi</w>", 6}, {"yo</w>", 7}};
  j["model"]["merges"] = Json::array({"b c", "a bc"});
  j["added_tokens"] = Json::array();
  const auto tok = parse(j);
  CHECK(tok->encode_full("abc").tokens == std::vector<std::string>{"abc"});
  // The suffix ends a word: a space after it, nothing after the last token.
  j["decoder"] = Json{{"type", "BPEDecoder"}, {"suffix", "</w>"}};
  const auto bpe = parse(j);
  CHECK(bpe->decode({5, 6, 7}) == "abhi yo");
  CHECK(bpe->decode({7, 6}) == "yo hi");
}

TEST_CASE("tokenizer.json: the Punctuation pre-tokenizer's three behaviors") {
  // WhitespaceSplit, then punctuation: isolated (each mark a piece), contiguous (a run of
  // marks one piece, which WordPiece cannot spell) or removed.
  auto with = [](const std::string& behavior) {
    Json j = wordpiece_file();
    j["pre_tokenizer"] = Json{
        {"type", "Sequence"},
        {"pretokenizers", Json::array({Json{{"type", "WhitespaceSplit"}},
                                       Json{{"type", "Punctuation"}, {"behavior", behavior}}})}};
    return parse(j);
  };
  using Tokens = std::vector<std::string>;
  CHECK(with("Isolated")->tokenize("un,,caf") == Tokens{"un", ",", ",", "caf"});
  CHECK(with("Contiguous")->tokenize("un,,caf") == Tokens{"un", "[UNK]", "caf"});
  CHECK(with("Removed")->tokenize("un,,caf") == Tokens{"un", "caf"});
  check_error([&] { with("Merged"); }, {"behavior 'Merged' is not supported", "Isolated"});
}

TEST_CASE("tokenizer.json: the Digits pre-tokenizer, digit by digit or a run at once") {
  auto with = [](bool individual) {
    Json j = wordpiece_file();
    j["pre_tokenizer"] = Json{{"type", "Digits"}, {"individual_digits", individual}};
    return parse(j)->encode_full("un12caf");
  };
  // WordPiece cannot spell a digit: each piece of digits is one [UNK], seen by its offsets.
  const Encoding one = with(true), run = with(false);
  CHECK(one.tokens == std::vector<std::string>{"[CLS]", "un", "[UNK]", "[UNK]", "caf", "[SEP]"});
  CHECK(one.offsets == Offsets{{0, 0}, {0, 2}, {2, 3}, {3, 4}, {4, 7}, {0, 0}});
  CHECK(run.tokens == std::vector<std::string>{"[CLS]", "un", "[UNK]", "caf", "[SEP]"});
  CHECK(run.offsets == Offsets{{0, 0}, {0, 2}, {2, 4}, {4, 7}, {0, 0}});
}

TEST_CASE("tokenizer.json: a pair without a post-processor is A then B, B of type 1") {
  Json j = wordpiece_file();
  j["post_processor"] = nullptr;
  const auto tok = parse(j);
  const BertEncoding plus = tok->encode_plus("un", std::string("caf"), 0);
  CHECK(plus.input_ids == std::vector<int64_t>{3, 6});
  CHECK(plus.token_type_ids == std::vector<int64_t>{0, 1});
  CHECK(plus.sentence_b_start == 1);
  // An empty A: B starts at the first token and stays there for B's second piece.
  const BertEncoding empty_a = tok->encode_plus("", std::string("cafe"), 0);
  CHECK(empty_a.input_ids == std::vector<int64_t>{6, 7});
  CHECK(empty_a.sentence_b_start == 0);
  const Encoding full = tok->encode_full("un", "caf");
  CHECK(full.type_ids == std::vector<int64_t>{0, 1});
  CHECK(full.sequence_ids == std::vector<int64_t>{0, 1});
}

TEST_CASE("tokenizer.json: the Whitespace pre-tokenizer's runs stop at white space") {
  // \w+|[^\w\s]+ : a run of marks ends before the space after it.
  Json j = wordpiece_file();
  j["pre_tokenizer"] = Json{{"type", "Whitespace"}};
  const Encoding e = parse(j)->encode_full("un,, caf");
  CHECK(e.tokens == std::vector<std::string>{"[CLS]", "un", "[UNK]", "caf", "[SEP]"});
  CHECK(e.offsets == Offsets{{0, 0}, {0, 2}, {2, 4}, {5, 8}, {0, 0}});
}

TEST_CASE("tokenizer.json: GPT-2's pieces keep 's with its apostrophe") {
  // The regex's first alternatives: 's|'t|'re|'ve|'m|'ll|'d, before letters and other marks.
  Json j = byte_level_file();
  j["model"]["vocab"]["'"] = 7;
  j["model"]["vocab"]["s"] = 8;
  j["model"]["vocab"]["'s"] = 9;
  j["model"]["merges"].push_back("' s");
  const auto tok = parse(j);
  CHECK(tok->encode_full("hi's").tokens == std::vector<std::string>{"hi", "'s"});
  CHECK(tok->encode_full("hi'is").tokens == std::vector<std::string>{"hi", "'", "i", "s"});
}

TEST_CASE("tokenizer.json: GPT-2's pieces keep each contraction with its apostrophe") {
  // The regex's first alternatives, 's|'t|'re|'ve|'m|'ll|'d, each followed by more text: " hi"
  // is a piece of its own (Ġ and hi, as h+i ranks before Ġ+h).
  Json j = byte_level_file();
  int64_t id = 7;
  const std::vector<std::string> endings = {"'s", "'t", "'re", "'ve", "'m", "'ll", "'d"};
  for (const char* piece : {"'", "s", "t", "r", "e", "v", "m", "l", "d", "'r", "'v", "'l"})
    j["model"]["vocab"][piece] = id++;
  for (const char* merge :
       {"' s", "' t", "' r", "'r e", "' v", "'v e", "' m", "' l", "'l l", "' d"})
    j["model"]["merges"].push_back(merge);
  for (const auto& e : endings) j["model"]["vocab"][e] = id++;
  const auto tok = parse(j);
  for (const auto& ending : endings) {
    CAPTURE(ending);
    CHECK(tok->encode_full("hi" + ending + " hi").tokens ==
          std::vector<std::string>{"hi", ending, "\u0120", "hi"});
  }
  // Without the apostrophe the letters are a word: "re" is no piece of its own.
  CHECK(tok->encode_full("hi re").tokens == std::vector<std::string>{"hi", "\u0120", "r", "e"});
}

TEST_CASE("tokenizer.json: the four Unicode normal forms as normalizers") {
  // One word of each spelling: U+00E9 composed, e + U+0301 decomposed, and the ligature U+FB01
  // (a compatibility character: only the K forms turn it into f + i).
  Json j = Json::parse(R"({
    "normalizer": null, "pre_tokenizer": {"type": "WhitespaceSplit"}, "post_processor": null,
    "decoder": null,
    "model": {"type": "WordLevel", "unk_token": "[UNK]",
              "vocab": {"[UNK]": 0, "\u00e9": 1, "e\u0301": 2, "fi": 3, "\ufb01": 4,
                        "fi\u0323\u0301": 5, "x": 6}}})");
  const std::string composed = "\u00e9", decomposed = "e\u0301", ligature = "\ufb01";
  const std::string text = composed + " " + decomposed + " " + ligature;
  for (const auto& [form, want] : std::vector<std::pair<std::string, std::vector<int64_t>>>{
           {"NFC", {1, 1, 4}}, {"NFD", {2, 2, 4}}, {"NFKC", {1, 1, 3}}, {"NFKD", {2, 2, 3}}}) {
    const std::string name = form;  // (CAPTURE cannot name a structured binding in clang 14)
    CAPTURE(name);
    j["normalizer"] = {{"type", form}};
    CHECK(parse(j)->encode_full(text).ids == want);
  }
  // NFKD makes the ligature two letters and puts the dot below before the acute: the word is
  // longer than it was, and every piece of it maps back inside the word (0-3, as the tokenizers
  // library gives), not onto the space after it.
  j["normalizer"] = {{"type", "NFKD"}};
  const Encoding e = parse(j)->encode_full("\ufb01\u0301\u0323 x");
  CHECK(e.ids == std::vector<int64_t>{5, 6});
  CHECK(e.offsets == Offsets{{0, 3}, {4, 5}});
}

TEST_CASE("tokenizer.json: the Strip normalizer strips each side it is asked to") {
  // No pre-tokenizer: the whole text is one word, spaces included. Ids and offsets as the
  // tokenizers library gives them.
  Json j = Json::parse(R"({
    "normalizer": null, "pre_tokenizer": null, "post_processor": null, "decoder": null,
    "model": {"type": "WordLevel", "unk_token": "[UNK]",
              "vocab": {"[UNK]": 0, "x": 1, "x  ": 2, "  x": 3}}})");
  for (const auto& [left, right, id, span] :
       std::vector<std::tuple<bool, bool, int64_t, std::pair<int64_t, int64_t>>>{
           {true, true, 1, {2, 3}}, {true, false, 2, {2, 5}}, {false, true, 3, {0, 3}}}) {
    const bool l = left, r = right;  // (CAPTURE cannot name a structured binding in clang 14)
    CAPTURE(l);
    CAPTURE(r);
    j["normalizer"] = {{"type", "Strip"}, {"strip_left", l}, {"strip_right", r}};
    const Encoding e = parse(j)->encode_full("  x  ");
    CHECK(e.ids == std::vector<int64_t>{id});
    CHECK(e.offsets == Offsets{span});
  }
}

TEST_CASE("tokenizer.json: a normalized added token is matched in its normalized spelling") {
  // "HeLLo" is added with normalized: true under a Lowercase normalizer, so it matches "HELLO"
  // once that is lower-cased. Tokens, ids and offsets as the tokenizers library gives them.
  const auto tok = parse(Json::parse(R"({
    "added_tokens": [{"id": 3, "content": "HeLLo", "special": false, "normalized": true,
                      "lstrip": false, "rstrip": false, "single_word": false}],
    "normalizer": {"type": "Lowercase"}, "pre_tokenizer": {"type": "WhitespaceSplit"},
    "post_processor": null, "decoder": null,
    "model": {"type": "WordLevel", "unk_token": "[UNK]",
              "vocab": {"[UNK]": 0, "say": 1, "x": 2}}})"));
  const Encoding e = tok->encode_full("say HELLO x");
  CHECK(e.tokens == std::vector<std::string>{"say", "hello", "x"});
  CHECK(e.ids == std::vector<int64_t>{1, 3, 2});
  CHECK(e.offsets == Offsets{{0, 3}, {4, 9}, {10, 11}});
}

TEST_CASE("tokenizer.json: BPE's continuing_subword_prefix marks every piece but a word's first") {
  // As the tokenizers library encodes "ab ba" with this model.
  const auto tok = parse(Json::parse(R"({
    "normalizer": null, "pre_tokenizer": {"type": "WhitespaceSplit"}, "post_processor": null,
    "decoder": null,
    "model": {"type": "BPE", "dropout": null, "unk_token": "[UNK]",
              "continuing_subword_prefix": "##", "end_of_word_suffix": null, "fuse_unk": false,
              "byte_fallback": false, "vocab": {"a": 0, "b": 1, "##a": 2, "##b": 3, "[UNK]": 4},
              "merges": []}})"));
  const Encoding e = tok->encode_full("ab ba");
  CHECK(e.tokens == std::vector<std::string>{"a", "##b", "b", "##a"});
  CHECK(e.ids == std::vector<int64_t>{0, 3, 1, 2});
}

TEST_CASE("tokenizer.json: ByteLevel's prefix space in offsets, and merges written as pairs") {
  // Offsets as the tokenizers library gives them for "hi hi" (Ġ then hi, as h+i ranks first).
  Json j = byte_level_file();
  j["pre_tokenizer"]["add_prefix_space"] = true;
  j["post_processor"] = nullptr;  // untrimmed: the added space spans the first character
  CHECK(parse(j)->encode_full("hi hi").offsets == Offsets{{0, 1}, {0, 2}, {2, 3}, {3, 5}});
  // Trimmed: the added space shrinks to the start, or past the first character when the
  // post-processor does not know of it. Without the key it is taken as there (the library's
  // default).
  j["post_processor"] = {{"type", "ByteLevel"}, {"trim_offsets", true}};
  CHECK(parse(j)->encode_full("hi hi").offsets == Offsets{{0, 0}, {0, 2}, {3, 3}, {3, 5}});
  j["post_processor"]["add_prefix_space"] = false;
  CHECK(parse(j)->encode_full("hi hi").offsets == Offsets{{1, 1}, {0, 2}, {3, 3}, {3, 5}});
  // Newer files write each merge as a pair of strings; the encoding is the same.
  Json pairs = byte_level_file();
  pairs["model"]["merges"] = Json::array(
      {Json::array({"h", "i"}), Json::array({"\u0120", "h"}), Json::array({"\u0120h", "i"})});
  CHECK(parse(pairs)->encode_full("hi hi").ids ==
        parse(byte_level_file())->encode_full("hi hi").ids);
  CHECK(parse(pairs)->encode_full("hi hi").tokens ==
        std::vector<std::string>{"hi", "\u0120", "hi"});
}

TEST_CASE("tokenizer.json: GPT-2's run of spaces leaves its last space to the word after it") {
  // \s+(?!\S): "hi   hi" is hi, two spaces, then " hi" (Ġ and hi, as h+i ranks first), with
  // the tokenizers library's offsets.
  Json j = byte_level_file();
  j["post_processor"] = nullptr;  // offsets untrimmed
  const Encoding e = parse(j)->encode_full("hi   hi");
  CHECK(e.tokens == std::vector<std::string>{"hi", "\u0120", "\u0120", "\u0120", "hi"});
  CHECK(e.offsets == Offsets{{0, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 7}});
}

TEST_CASE("tokenizer.json: GPT-2's byte table, byte by byte") {
  // bytes_to_unicode as GPT-2's encoder.py writes it: the printable bytes ('!'-'~', '¡'-'¬',
  // '®'-'ÿ') stand for themselves, the others for 256, 257, ... in order.
  std::vector<int> kept;
  for (int b = '!'; b <= '~'; ++b) kept.push_back(b);
  for (int b = 0xA1; b <= 0xAC; ++b) kept.push_back(b);
  for (int b = 0xAE; b <= 0xFF; ++b) kept.push_back(b);
  std::vector<char32_t> table(256);
  char32_t next = 256;
  for (int b = 0; b < 256; ++b)
    table[static_cast<size_t>(b)] =
        std::find(kept.begin(), kept.end(), b) != kept.end() ? static_cast<char32_t>(b) : next++;
  // A vocabulary of the 256 byte characters, byte b at id b, and no merges: a text encodes to
  // its bytes.
  Json j = byte_level_file();
  j["added_tokens"] = Json::array();
  j["model"]["merges"] = Json::array();
  j["model"]["vocab"] = Json::object();
  for (int b = 0; b < 256; ++b) j["model"]["vocab"][to_utf8(table[static_cast<size_t>(b)])] = b;
  const auto tok = parse(j);
  // Every byte of one, two and three-byte UTF-8: ASCII, then U+0080-U+07FF (leads C2-DF,
  // continuations 80-BF), then a character of each lead E0-EF.
  std::vector<char32_t> chars;
  for (char32_t c = 1; c < 0x800; ++c) chars.push_back(c);
  for (char32_t k = 0; k < 16; ++k)  // lead E0 + k; U+D841 would be a surrogate, so U+D041
    chars.push_back(k == 0xD ? char32_t{0xD041} : (k << 12) | 0x841);
  for (char32_t c : chars) {
    const std::string text = to_utf8(c);
    std::vector<int64_t> bytes;
    for (unsigned char b : text) bytes.push_back(b);
    CAPTURE(static_cast<int64_t>(c));
    CHECK(tok->encode_full(text).ids == bytes);
    CHECK(tok->decode(bytes) == text);
  }
}

TEST_CASE("tokenizer.json: saved in a run and read back by load_tokenizer") {
  testing::TempDir dir;
  const auto tok = parse(wordpiece_file());
  tok->save(dir / "tokenizer");
  const auto back = load_tokenizer(dir / "tokenizer");
  CHECK(back->kind() == "hugging_face");
  CHECK(back->encode("UnAffable, Café!") == tok->encode("UnAffable, Café!"));
  CHECK(back->encode_plus("caf", std::string("cafe")).token_type_ids ==
        std::vector<int64_t>{0, 0, 0, 1, 1, 1});
}

TEST_CASE("tokenizer.json: what it cannot read is refused by name") {
  auto with = [](Json j, const std::string& field, const Json& value) {
    j[field] = value;
    return j;
  };
  const Json base = wordpiece_file();
  check_error(
      [&] {
        parse(with(base, "normalizer", {{"type", "Precompiled"}}));
      },
      {"test.json", "normalizer 'Precompiled' is not supported", "BertNormalizer"});
  check_error(
      [&] {
        parse(with(base, "pre_tokenizer", {{"type", "Metaspace"}}));
      },
      {"pre_tokenizer 'Metaspace' is not supported"});
  check_error(
      [&] {
        parse(with(base, "post_processor", {{"type", "RobertaProcessing"}}));
      },
      {"post_processor 'RobertaProcessing' is not supported"});
  check_error(
      [&] {
        parse(with(base, "decoder", {{"type", "Metaspace"}}));
      },
      {"decoder 'Metaspace' is not supported"});
  Json unigram = base;
  unigram["model"]["type"] = "Unigram";
  check_error([&] { parse(unigram); }, {"model 'Unigram' is not supported"});
  Json gap = base;
  gap["model"]["vocab"]["##e"] = 9;
  check_error([&] { parse(gap); }, {"no token has the id 7"});
  Json dropout = byte_level_file();
  dropout["model"]["dropout"] = 0.1;
  check_error([&] { parse(dropout); }, {"dropout"});
  Json merge = byte_level_file();
  merge["model"]["merges"].push_back("i h");
  check_error([&] { parse(merge); }, {"'ih', which is not in the vocab"});
  // An added token's id outside 0 .. tokens - 1 is refused before any table grows to it.
  for (const int64_t id : {int64_t{-5}, int64_t{60000000}}) {
    Json added = base;
    added["added_tokens"].push_back({{"id", id}, {"content", "[BIG]"}, {"special", true}});
    check_error([&] { parse(added); },
                {fmt::format("the id {} of '[BIG]' is outside 0 .. 12", id)});
  }
  // A special token the model would read as an id past its embedding table.
  check_error(
      [&] {
        parse(with(base, "post_processor",
                   {{"type", "BertProcessing"}, {"sep", {"[SEP]", 999}}, {"cls", {"[CLS]", 1}}}));
      },
      {"special token '[SEP]' has the id 999, outside the vocabulary of 9"});
  check_error([&] { HuggingFaceTokenizer::parse("{\"version\": \"1.0\"}", "x.json"); },
              {"x.json", "expected an object with a 'model'"});
  // JSON nested past the parser's limit is refused before it is built, naming the file.
  check_error(
      [&] {
        HuggingFaceTokenizer::parse(std::string(100, '[') + std::string(100, ']'), "deep.json");
      },
      {"tokenizer.json deep.json: JSON nested deeper than 64 levels"});
}

TEST_CASE("tokenizer.json: a BERT folder with it and no vocab.txt loads, tokenizing as vocab.txt") {
  namespace fs = std::filesystem;
  const std::string golden = testing::test_path("parity/golden/bert");
  testing::TempDir dir;
  for (const char* f : {"config.json", "model.safetensors"})
    fs::copy_file(golden + "/" + f, dir / f);
  // The golden folder's vocab.txt as a tokenizer.json of BERT's pipeline.
  Json file = wordpiece_file();
  file["added_tokens"] = Json::array();
  file["model"]["vocab"] = Json::object();
  const auto vocab = Vocabulary::load(golden + "/vocab.txt");
  for (int64_t id = 0; id < vocab.size(); ++id) file["model"]["vocab"][vocab.token(id)] = id;
  file["post_processor"] = {{"type", "BertProcessing"},
                            {"sep", {"[SEP]", vocab.id("[SEP]")}},
                            {"cls", {"[CLS]", vocab.id("[CLS]")}}};
  std::ofstream(dir / "tokenizer.json") << file.dump();
  const auto bert = checkpoints::load_bert_folder(dir.str());
  const auto tok = load_folder_tokenizer(bert.dir);
  CHECK(tok->kind() == "hugging_face");
  const BertTokenizer reference(vocab);
  for (const std::string text : {"time flies like an arrow", "Fruit flies, like a BANANA!"})
    CHECK(tok->encode_plus(text).input_ids == reference.encode_plus(text).input_ids);
  fs::remove(dir / "tokenizer.json");
  check_error([&] { checkpoints::load_bert_folder(dir.str()); }, {"no vocab.txt"});
}

TEST_CASE(
    "tokenizer.json: of added tokens starting at one place the longest wins, wherever listed") {
  // The longer one is listed first: the matcher keeps it over the shorter one found after it.
  Json j = wordpiece_file();
  j["normalizer"] = nullptr;
  for (const auto& [id, content] : {std::pair{9, "<ab>"}, std::pair{10, "<a"}})
    j["added_tokens"].push_back({{"id", id},
                                 {"content", content},
                                 {"special", false},
                                 {"normalized", false},
                                 {"lstrip", false},
                                 {"rstrip", false},
                                 {"single_word", false}});
  // The tokenizers library: [CLS] <ab> caf <a [SEP].
  CHECK(parse(j)->encode_full("<ab>caf<a").tokens ==
        std::vector<std::string>{"[CLS]", "<ab>", "caf", "<a", "[SEP]"});
}

TEST_CASE("tokenizer.json: GPT-2's runs of marks stop at letters and digits") {
  // ' ?[^\s\p{L}\p{N}]+' takes '!' alone from "hi!hi" and "!1". The merges '! h' and '! 1' rank
  // first, so a run that went on into the letters or digits would show as '!h' or '!1'.
  Json j = byte_level_file();
  for (const auto& [token, id] :
       {std::pair{"!", 7}, std::pair{"!h", 8}, std::pair{"1", 9}, std::pair{"!1", 10}})
    j["model"]["vocab"][token] = id;
  j["model"]["merges"].insert(j["model"]["merges"].begin(), {"! h", "! 1"});
  const auto tok = parse(j);
  // The tokenizers library gives these four.
  CHECK(tok->encode_full("hi!hi").tokens == std::vector<std::string>{"hi", "!", "hi"});
  CHECK(tok->encode_full("!1").tokens == std::vector<std::string>{"!", "1"});
  CHECK(tok->encode_full("hi!!").tokens == std::vector<std::string>{"hi", "!", "!"});
  CHECK(tok->encode_full("1hi").tokens == std::vector<std::string>{"1", "hi"});
}

TEST_CASE("tokenizer.json: GPT-2's space joins the word after it at the text's start too") {
  // With Ġ+h the first merge, " hi" as one piece is Ġhi; split as " " and "hi" it would be Ġ, hi.
  Json j = byte_level_file();
  j["model"]["merges"] = {"\u0120 h", "\u0120h i", "h i"};
  const auto tok = parse(j);
  // The tokenizers library gives these three.
  CHECK(tok->encode_full(" hi").tokens == std::vector<std::string>{"\u0120hi"});
  CHECK(tok->encode_full("hi hi").tokens == std::vector<std::string>{"hi", "\u0120hi"});
  CHECK(tok->encode_full(" hi ").tokens == std::vector<std::string>{"\u0120hi", "\u0120"});
}

TEST_CASE("tokenizer.json: characters whose Unicode category changed keep the library's old one") {
  // The tokenizers library classifies by older tables than ICU's: marks by Unicode 9, punctuation
  // by Unicode 8. Each expectation below is the library's own output for the same file.
  Json j = wordpiece_file();
  for (const auto& [token, id] : {std::pair{"ab", 9}, std::pair{"a", 10}, std::pair{"b", 11}})
    j["model"]["vocab"][token] = id;
  j["normalizer"] = Json{{"type", "StripAccents"}};
  auto tok = parse(j);
  using Tokens = std::vector<std::string>;
  // U+1CF2: a mark in Unicode 9 (a letter since), which StripAccents drops.
  CHECK(tok->encode_full("a\u1CF2b").tokens == Tokens{"[CLS]", "ab", "[SEP]"});
  // U+111C9: punctuation in Unicode 8 (a mark since): kept, and split off by BertPreTokenizer.
  CHECK(tok->encode_full("a\U000111C9b").tokens == Tokens{"[CLS]", "a", "[UNK]", "b", "[SEP]"});
  // BertNormalizer's strip_accents drops nonspacing marks: U+1734 was one in Unicode 9, U+1885
  // became one after, and U+1CF2 was a spacing mark.
  j["normalizer"] = Json{{"type", "BertNormalizer"},
                         {"clean_text", true},
                         {"handle_chinese_chars", true},
                         {"strip_accents", true},
                         {"lowercase", false}};
  tok = parse(j);
  CHECK(tok->encode_full("a\u1734b").tokens == Tokens{"[CLS]", "ab", "[SEP]"});
  CHECK(tok->encode_full("a\u1885b").tokens == Tokens{"[CLS]", "[UNK]", "[SEP]"});
  CHECK(tok->encode_full("a\u1CF2b").tokens == Tokens{"[CLS]", "[UNK]", "[SEP]"});
}

// The library's own files name every flag of a BertNormalizer; one written by hand may not. A
// missing flag takes the default of tokenizers.normalizers.BertNormalizer(): clean the text,
// split CJK, lower-case, and strip accents as it lower-cases. BertNormalizer().normalize_str
// gives "ab" for "a\x01B" and "ae" for "a\x01\u00C9"; with clean_text=False, "a\x01b".
TEST_CASE("tokenizer.json: a BertNormalizer without its flags takes BertNormalizer()'s defaults") {
  Json j = wordpiece_file();
  for (const auto& [token, id] : {std::pair{"ab", 9}, std::pair{"ae", 10}})
    j["model"]["vocab"][token] = id;
  j["normalizer"] = Json{{"type", "BertNormalizer"}};
  const auto tok = parse(j);
  using Tokens = std::vector<std::string>;
  // (Octal \001: a hex escape would take the B as a digit.)
  CHECK(tok->encode_full("a\001B").tokens == Tokens{"[CLS]", "ab", "[SEP]"});
  CHECK(tok->encode_full("a\001\u00C9").tokens == Tokens{"[CLS]", "ae", "[SEP]"});
  CHECK(tok->encode_full("x\u65E5").tokens == Tokens{"[CLS]", "[UNK]", "[UNK]", "[SEP]"});
}

TEST_CASE("a BERT folder with vocab.txt and no tokenizer_config.json lower-cases, as BERT") {
  namespace fs = std::filesystem;
  const std::string golden = testing::test_path("parity/golden/bert");
  testing::TempDir dir;
  fs::copy_file(golden + "/vocab.txt", dir / "vocab.txt");
  const auto vocab = Vocabulary::load(golden + "/vocab.txt");
  const std::string text = "Fruit flies, like a BANANA!";
  const auto lower = BertTokenizer(vocab, true).encode(text);
  REQUIRE(lower != BertTokenizer(vocab, false).encode(text));  // the text tells the two apart
  CHECK(load_folder_tokenizer(dir.str())->encode(text) == lower);
  // A tokenizer_config.json that says otherwise is followed.
  std::ofstream(dir / "tokenizer_config.json") << R"({"do_lower_case": false})";
  CHECK(load_folder_tokenizer(dir.str())->encode(text) == BertTokenizer(vocab, false).encode(text));
  // One that is not JSON holds no setting: the folder loads, lower-casing as BERT does.
  std::ofstream(dir / "tokenizer_config.json") << R"({"do_lower_case": fal)";
  CHECK(load_folder_tokenizer(dir.str())->encode(text) == lower);
}
