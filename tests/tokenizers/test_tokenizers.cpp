// Tokenizers: BERT against the reference vectors and Hugging Face's test cases (from
// ../shared/data, skipped with a reason where absent), and round trips of our own kinds.
#include <cctype>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "tokenizers/tokenizers.hpp"

using namespace anatomy;
using namespace anatomy::text;
using testing::check_error;

namespace {

std::optional<nlohmann::json> shared_json(const std::string& relative) {
  if (!testing::have_shared_data(relative)) return std::nullopt;
  std::ifstream f(testing::shared_data(relative));
  return nlohmann::json::parse(f);
}

std::optional<BertTokenizer> bert_base() {
  if (!testing::have_shared_data("bert-base-uncased/vocab.txt")) return std::nullopt;
  const std::string path = testing::shared_data("bert-base-uncased/vocab.txt");
  static const Vocabulary vocab = Vocabulary::load(path);
  return BertTokenizer(vocab);
}

}  // namespace

TEST_CASE("ASCII's classes: punctuation, control characters and white space, code by code") {
  // BERT's rules and the tokenizers library's agree on ASCII. Punctuation: 33-126 without the
  // alphanumerics, whatever Unicode's category ('$', '^', '`' and '~' are symbols there).
  // Control: 0-31 and 127, except tab, newline and carriage return, which are white space.
  // White space: BERT's is space, tab, newline and carriage return; Rust's (is_white_space,
  // Unicode's White_Space) adds the vertical tab and the form feed, not the 28-31 of Python's.
  for (char32_t c = 0; c < 128; ++c) {
    const bool symbol = c > 32 && c < 127 && !std::isalnum(static_cast<int>(c));
    const bool line = c == '\t' || c == '\n' || c == '\r';
    const bool control = (c < 32 || c == 127) && !line;
    CAPTURE(static_cast<int>(c));
    CHECK(is_punctuation(c) == symbol);
    CHECK(hf_is_punctuation(c) == symbol);
    CHECK(is_control(c) == control);
    CHECK(hf_is_control(c) == control);
    CHECK(is_whitespace(c) == (c == ' ' || line));
    CHECK(is_white_space(c) == (c == ' ' || line || c == 11 || c == 12));
  }
}

TEST_CASE("BERT tokenizer: the reference vectors with bert-base-uncased's vocab") {
  auto vectors = shared_json("bert-base-uncased/tokenizer_vectors.json");
  auto tok = bert_base();
  if (!vectors || !tok) return;
  CHECK(tok->vocab().size() == 30522);
  CHECK(tok->encode("time flies like an arrow") ==
        std::vector<int64_t>{2051, 10029, 2066, 2019, 8612});
  for (const auto& v : *vectors) {
    const std::string input = v["input"];
    CAPTURE(input);
    CHECK(tok->tokenize(input) == v["tokens"].get<std::vector<std::string>>());
    CHECK(tok->encode(input) == v["ids"].get<std::vector<int64_t>>());
    CHECK(tok->encode_with_special_tokens(input) ==
          v["with_special_ids"].get<std::vector<int64_t>>());
  }
}

TEST_CASE("BERT tokenizer: the book's sentence pair, as Hugging Face encodes it") {
  auto tok = bert_base();
  if (!tok) return;
  // tokenizer("time flies like an arrow", "fruit flies like a banana")
  const auto e = tok->encode_plus("time flies like an arrow", "fruit flies like a banana");
  CHECK(e.input_ids == std::vector<int64_t>{101, 2051, 10029, 2066, 2019, 8612, 102, 5909, 10029,
                                            2066, 1037, 15212, 102});
  CHECK(e.token_type_ids == std::vector<int64_t>{0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1});
  CHECK(e.attention_mask == std::vector<int64_t>(13, 1));
  CHECK(e.sentence_b_start == 7);
  CHECK(e.tokens[6] == "[SEP]");
  CHECK(e.tokens[7] == "fruit");
  // One sentence: what the model sees with its special tokens, all of type 0.
  const auto one = tok->encode_plus("time flies like an arrow");
  CHECK(one.input_ids == tok->encode_with_special_tokens("time flies like an arrow"));
  CHECK(one.token_type_ids == std::vector<int64_t>(7, 0));
  CHECK(one.sentence_b_start == -1);
}

TEST_CASE("BERT tokenizer: longest_first truncation of a pair") {
  const BertTokenizer tok(
      Vocabulary({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "a", "b", "c", "d", "e"}));
  auto tokens = [&](const std::string& a, const std::optional<std::string>& b, int64_t max) {
    return tok.encode_plus(a, b, max).tokens;
  };
  using V = std::vector<std::string>;
  // Equal lengths: the second sentence loses a token first, then they take turns.
  CHECK(tokens("a b c d e", "e d c b a", 10) ==
        V{"[CLS]", "a", "b", "c", "d", "[SEP]", "e", "d", "c", "[SEP]"});
  // The longer one is cut until it is no longer the longer one.
  CHECK(tokens("a b c d e", "e", 6) == V{"[CLS]", "a", "b", "[SEP]", "e", "[SEP]"});
  CHECK(tokens("a", "a b c d e", 7) == V{"[CLS]", "a", "[SEP]", "a", "b", "c", "[SEP]"});
  // A single sentence is cut at its end; room to spare changes nothing.
  CHECK(tokens("a b c d e", std::nullopt, 4) == V{"[CLS]", "a", "b", "[SEP]"});
  CHECK(tokens("a b", "c", 100).size() == 6);
  // Only the special tokens left.
  CHECK(tokens("a b", "c d", 3) == V{"[CLS]", "[SEP]", "[SEP]"});
  check_error([&] { tok.encode_plus("a", "b", 2); },
              {"encode_plus", "at least 3", "a pair", "got 2"});
  check_error([&] { tok.encode_plus("a", std::nullopt, -1); }, {"at least 2", "got -1"});
  // 1 is below both minimums: too short for [CLS] and [SEP] alone.
  check_error([&] { tok.encode_plus("a", std::nullopt, 1); },
              {"at least 2", "one sentence", "got 1"});
  check_error([&] { tok.encode_plus("a", "b", 1); }, {"at least 3", "a pair", "got 1"});
}

TEST_CASE("BERT tokenizer: Hugging Face's test cases") {
  auto hf = shared_json("bert-base-uncased/hf_tokenizer_expectations.json");
  if (!hf) return;
  const Vocabulary toy((*hf)["toy_vocab_full_tokenizer"].get<std::vector<std::string>>());
  const Vocabulary wp_vocab(
      {"[UNK]", "[CLS]", "[SEP]", "want", "##want", "##ed", "wa", "un", "runn", "##ing"});
  int checked = 0;
  for (const auto& c : (*hf)["cases"]) {
    const std::string fn = c["fn"];
    CAPTURE(fn);
    if (fn == "BertTokenizer(toy_vocab).tokenize") {
      BertTokenizer t(toy);
      CHECK(t.tokenize(c["in"]) == c["out"].get<std::vector<std::string>>());
      CHECK(t.encode(c["in"]) == c["ids"].get<std::vector<int64_t>>());
    } else if (fn.rfind("BasicTokenizer(", 0) == 0) {
      BasicTokenizerOptions o;
      if (fn.find("do_lower_case=False") != std::string::npos) o.do_lower_case = false;
      if (fn.find("strip_accents=False") != std::string::npos) o.strip_accents = false;
      if (fn.find("strip_accents=True") != std::string::npos) o.strip_accents = true;
      if (fn.find("never_split=['[UNK]']") != std::string::npos) o.never_split = {"[UNK]"};
      CHECK(basic_tokenize(c["in"], o) == c["out"].get<std::vector<std::string>>());
    } else if (fn.rfind("WordpieceTokenizer", 0) == 0) {
      CHECK(wordpiece_tokenize(c["in"], wp_vocab) == c["out"].get<std::vector<std::string>>());
    } else if (fn == "BertTokenizer(toy_vocab) per-string") {
      BertTokenizer t(toy);
      for (size_t i = 0; i < c["in"].size(); ++i)
        CHECK(t.tokenize(c["in"][i]) == c["out"][i].get<std::vector<std::string>>());
    } else if (fn.rfind("BertTokenizerFast(bert-base-uncased)", 0) == 0) {
      // Tokens only: character offsets are a feature of the fast tokenizer we do not provide.
      auto tok = bert_base();
      if (!tok) continue;
      std::vector<std::string> toks{"[CLS]"};
      for (auto& t : tok->tokenize(c["in"])) toks.push_back(t);
      toks.push_back("[SEP]");
      CHECK(toks == c["out"].get<std::vector<std::string>>());
    } else if (fn == "is_whitespace true") {
      for (const std::string s : c["in"]) CHECK(is_whitespace(code_points(s)[0]));
    } else if (fn == "is_control true") {
      for (const std::string s : c["in"]) CHECK(is_control(code_points(s)[0]));
      for (const std::string s : c["false"]) CHECK_FALSE(is_control(code_points(s)[0]));
    } else if (fn == "is_punctuation true") {
      for (const std::string s : c["in"]) CHECK(is_punctuation(code_points(s)[0]));
      for (const std::string s : c["false"]) CHECK_FALSE(is_punctuation(code_points(s)[0]));
    } else {
      FAIL("a case this test does not know: ", fn);
    }
    ++checked;
  }
  CHECK(checked == static_cast<int>((*hf)["cases"].size()));
}

// U+0000 is a code point like any other (Python's list("a\0b") keeps it); only bytes that are
// not UTF-8 become U+FFFD.
TEST_CASE("WordPiece's 100-character limit counts characters, not bytes") {
  // "ж" is 2 bytes: a 100-letter word is 200 bytes and still spelled; 101 letters are [UNK].
  const BertTokenizer tok(Vocabulary({"[UNK]", "[CLS]", "[SEP]", "ж", "##ж", "😀", "##😀"}));
  std::string word;
  for (int i = 0; i < 100; ++i) word += "ж";
  const auto spelled = tok.tokenize(word);
  REQUIRE(spelled.size() == 100);
  CHECK(spelled.front() == "ж");
  CHECK(spelled.back() == "##ж");
  CHECK(tok.tokenize(word + "ж") == std::vector<std::string>{"[UNK]"});
  // 4-byte characters the same: 100 emoji are spelled, 101 are not.
  std::string emoji;
  for (int i = 0; i < 100; ++i) emoji += "😀";
  CHECK(tok.tokenize(emoji).size() == 100);
  CHECK(tok.tokenize(emoji + "😀") == std::vector<std::string>{"[UNK]"});
}

TEST_CASE("code_points keeps NUL and replaces invalid bytes with U+FFFD") {
  CHECK(code_points(std::string("a\0b", 3)) == std::vector<char32_t>{'a', 0, 'b'});
  CHECK(code_points("a\xff"
                    "b") == std::vector<char32_t>{'a', 0xFFFD, 'b'});
  CHECK(code_points("\xc3\xa9") == std::vector<char32_t>{0xE9});  // é
}

TEST_CASE("script_name and main_script: the script most letters are written in") {
  CHECK(script_name(U'a') == "Latin");
  CHECK(script_name(U'\u00fc') == "Latin");  // ü
  CHECK(script_name(U'\u0436') == "Cyrillic");
  CHECK(script_name(U'\u4e2d') == "Han");
  CHECK(script_name(U'7') == "Common");
  CHECK(script_name(U'!') == "Common");
  CHECK(main_script({"Grüß Gott!", "Hallo"}) == "Latin");
  CHECK(main_script({"Привет, мир", "да"}) == "Cyrillic");
  // Counted by letters, not by texts or bytes: one long Russian line outweighs two short Latin
  // ones; digits and punctuation count for none.
  CHECK(main_script({"ok", "hi", "Москва большая"}) == "Cyrillic");
  CHECK(main_script({"12345 !!! ...", "x"}) == "Latin");
  CHECK(main_script({"123", "?"}) == "Common");
  CHECK(main_script({}) == "Common");
}

TEST_CASE("char, word and BPE tokenizers: training, round trips, save and load") {
  const std::vector<std::string> corpus = {"Hallo, Welt!", "Wie geht es dir?", "Es geht mir gut.",
                                           "Hallo Tom.", "Gut, danke."};
  auto chars = CharTokenizer::train(corpus);
  CHECK(chars.vocab().token(0) == "[PAD]");
  CHECK(chars.vocab().token(3) == "[EOS]");
  CHECK(chars.decode(chars.encode("Hallo, Welt!")) == "Hallo, Welt!");
  CHECK(chars.encode("Ü") == std::vector<int64_t>{chars.vocab().id("[UNK]")});
  // decode skips every special token but [UNK], wherever it stands ([PAD] and [BOS]
  // included).
  {
    const auto& v = chars.vocab();
    std::vector<int64_t> ids{v.id("[BOS]"), v.id("[PAD]")};
    for (int64_t id : chars.encode("Tom")) ids.push_back(id);
    ids.insert(ids.end(), {v.id("[PAD]"), v.id("[EOS]"), v.id("[PAD]")});
    CHECK(chars.decode(ids) == "Tom");
  }

  auto words = WordTokenizer::train(corpus, 1, 0, false);
  CHECK(words.tokenize("Hallo, Welt!") == std::vector<std::string>{"▁Hallo", ",", "▁Welt", "!"});
  CHECK(words.decode(words.encode("Es geht mir gut.")) == "Es geht mir gut.");
  CHECK(words.decode(words.encode("Hallo Mars")) == "Hallo [UNK]");
  {
    const auto& v = words.vocab();
    std::vector<int64_t> ids{v.id("[BOS]")};
    for (int64_t id : words.encode("Hallo Tom")) ids.push_back(id);
    ids.insert(ids.end(), {v.id("[EOS]"), v.id("[PAD]")});
    CHECK(words.decode(ids) == "Hallo Tom");
  }
  auto capped = WordTokenizer::train(corpus, 2, 0, false);  // words seen twice or more
  CHECK(capped.vocab().contains("▁geht"));
  CHECK_FALSE(capped.vocab().contains("▁Welt"));

  auto bpe = BpeTokenizer::train(corpus, 40, false, 1);
  CHECK(bpe.vocab().size() <= 40);
  for (const auto& s : corpus) CHECK(bpe.decode(bpe.encode(s)) == s);
  CHECK(bpe.decode(bpe.encode("Hallo Welten")) == "Hallo Welten");  // unseen word, still spelled
  CHECK(bpe.tokenize("Hallo").size() < 5);                          // merges were learned
  // With room to spare and min_frequency 1, pairs seen once are merged too, to the whole word.
  auto once = BpeTokenizer::train({"abcd"}, 100, false, 1);
  CHECK(once.tokenize("abcd") == std::vector<std::string>{"▁abcd"});
  CHECK(once.tokenize("dcba") == std::vector<std::string>{"▁", "d", "c", "b", "a"});
  // Traced by hand: (▁, b) is the only pair seen twice; then every pair is seen once and ties go
  // to the smaller pair ("a" < "b" < "▁"). (b, c) keeps its count after (▁, b) is merged next
  // to it in "▁bbc", and is merged in its turn.
  const std::vector<std::pair<std::string, std::string>> traced = {
      {"▁", "b"}, {"a", "a"}, {"aa", "b"}, {"b", "c"}, {"▁", "aab"}, {"▁b", "a"}, {"▁b", "bc"}};
  CHECK(BpeTokenizer::train({"ba bbc aab"}, 100, false, 1).merges == traced);

  const std::string dir = (anatomy::testing::temp_root() / "anatomy_tok").string();
  std::filesystem::create_directories(dir);
  for (const Tokenizer* t : std::initializer_list<const Tokenizer*>{&chars, &words, &bpe}) {
    t->save(dir + "/t");
    auto loaded = load_tokenizer(dir + "/t");
    CHECK(loaded->kind() == t->kind());
    CHECK(loaded->encode("Hallo, Welt!") == t->encode("Hallo, Welt!"));
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("Vocabulary::build caps at max_size, and BertTokenizer::decode joins every contraction") {
  // max_size caps the vocabulary, even at one token: the most frequent.
  const Vocabulary capped = Vocabulary::build({{"b", "a", "a"}}, 1, 1, {});
  CHECK(capped.size() == 1);
  CHECK(capped.token(0) == "a");
  // decode's clean-up joins every contraction to the word before it, not only the first.
  const BertTokenizer bert(
      Vocabulary({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "'ve"}));
  CHECK(bert.decode({5, 7, 6, 7}) == "a've b've");
}

TEST_CASE("tokenizer files: clear errors") {
  const std::string dir = (anatomy::testing::temp_root() / "anatomy_tok_bad").string();
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/dup.txt") << "a\nb\na\n";
  check_error([&] { Vocabulary::load(dir + "/dup.txt"); }, {"token 'a' appears twice", "dup.txt"});
  std::ofstream(dir + "/empty.txt") << "";
  check_error([&] { Vocabulary::load(dir + "/empty.txt"); }, {"is empty"});
  check_error([&] { Vocabulary::load(dir + "/missing.txt"); }, {"cannot open"});
  check_error([&] { load_tokenizer(dir + "/none"); }, {"cannot open", "none.json"});
  std::ofstream(dir + "/k.json") << R"({"kind": "sentencepiece"})";
  std::ofstream(dir + "/k.vocab.txt") << "[PAD]\n";
  check_error([&] { load_tokenizer(dir + "/k"); }, {"unknown kind 'sentencepiece'"});
  Vocabulary v({"[PAD]", "x"});
  check_error([&] { v.token(5); }, {"id 5 is out of range"});
  check_error([&] { v.token(2); }, {"id 2 is out of range for a vocabulary of 2"});  // one past
  CHECK(v.token(1) == "x");
  check_error([&] { Vocabulary({"a\nb"}).save(dir + "/plain.txt", false); },
              {"line break", "plain.txt"});
  std::ofstream(dir + "/e.json") << R"({"kind": "char", "vocab_escaped": true})";
  std::ofstream(dir + "/e.vocab.txt") << "[PAD]\na\\tb\n";
  check_error([&] { load_tokenizer(dir + "/e"); }, {"e.vocab.txt line 2", "after a backslash"});
  // A merges file needs two non-empty symbols per line: "left right".
  BpeTokenizer::train({"ba bbc aab"}, 40, false, 1).save(dir + "/b");
  for (const std::string bad : {"ab", " b", "a ", "a"}) {
    std::ofstream(dir + "/b.merges.txt") << "b a\n" << bad << "\n";
    check_error([&] { load_tokenizer(dir + "/b"); }, {"b.merges.txt line 2", "'left right'"});
  }
  // A merge of tokens the vocabulary does not hold.
  std::ofstream(dir + "/b.merges.txt") << "x y\n";
  check_error([&] { load_tokenizer(dir + "/b"); }, {"b.merges.txt", "merge 'x y' needs 'x'"});
  std::filesystem::remove_all(dir);
}

// A vocabulary whose [UNK] has id 0 (as some do): unknown tokens map to 0, not to an error.
TEST_CASE("convert_tokens_to_ids: [UNK] at id 0 is still the unknown token") {
  CharTokenizer chars(Vocabulary({"[UNK]", "a", "b"}));
  CHECK(chars.convert_tokens_to_ids({"a", "z", "b"}) == std::vector<int64_t>{1, 0, 2});
  CharTokenizer no_unk(Vocabulary({"[PAD]", "a"}));
  check_error([&] { no_unk.convert_tokens_to_ids({"z"}); }, {"'z'", "no [UNK]"});
}

// A character vocabulary of real text holds "\n" (and may hold "\r" and "\"): vocab.txt keeps
// one token per line by escaping them, and a checkpoint's tokenizer loads back the same ids.
TEST_CASE("char vocabularies with line breaks and backslashes survive save and load") {
  const std::string text = "First Citizen:\nBefore we proceed,\r\nhear me \\n speak.\\\n";
  auto chars = CharTokenizer::train({text});
  for (const char* t : {"\n", "\r", "\\"}) CHECK(chars.vocab().contains(t));
  const std::string dir = (anatomy::testing::temp_root() / "anatomy_tok_nl").string();
  std::filesystem::create_directories(dir);
  chars.save(dir + "/t");
  auto loaded = load_tokenizer(dir + "/t");
  CHECK(loaded->vocab().tokens() == chars.vocab().tokens());
  CHECK(loaded->encode(text) == chars.encode(text));
  CHECK(loaded->decode(loaded->encode(text)) == text);
  // BERT's plain vocab.txt is read as it is: a backslash line is the token "\".
  std::ofstream(dir + "/plain.txt") << "[PAD]\n\\\nn\n";
  CHECK(Vocabulary::load(dir + "/plain.txt").token(1) == "\\");
  std::filesystem::remove_all(dir);
}

TEST_CASE("BPE encoding applies the earliest-learned merge first, wherever it is in the word") {
  const Vocabulary vocab({"[UNK]", "▁", "a", "b", "c", "ab", "bc"});
  // (a, b) learned first: "▁abc" -> ▁ ab c, although (b, c) is also a merge.
  BpeTokenizer ab_first(vocab, {{"a", "b"}, {"b", "c"}}, false);
  CHECK(ab_first.tokenize("abc") == std::vector<std::string>{"▁", "ab", "c"});
  BpeTokenizer bc_first(vocab, {{"b", "c"}, {"a", "b"}}, false);
  CHECK(bc_first.tokenize("abc") == std::vector<std::string>{"▁", "a", "bc"});
}

TEST_CASE("a vocabulary without [UNK]: id 0 encodes, an unknown token is an error") {
  WordTokenizer words(Vocabulary({"▁hallo", "▁welt"}), false);
  CHECK(words.encode("hallo welt") == std::vector<int64_t>{0, 1});
  check_error([&] { words.encode("hallo mars"); },
              {"encode", "'▁mars' is not in the vocabulary", "no [UNK]"});
}

TEST_CASE("Vocabulary::build: most frequent first, ties in alphabetical order, specials first") {
  // a 3 times; b, c and d twice, given in the order d, c, b; e once.
  const Vocabulary v = Vocabulary::build({{"d", "a", "c"}, {"b", "a", "d"}, {"c", "b", "a", "e"}},
                                         1, 0, {"[PAD]", "[UNK]"});
  CHECK(v.tokens() == std::vector<std::string>{"[PAD]", "[UNK]", "a", "b", "c", "d", "e"});
  // min_frequency 2 leaves e out; max_size 4 keeps the specials and the two most frequent.
  CHECK(Vocabulary::build({{"d", "a", "c"}, {"b", "a", "d"}, {"c", "b", "a", "e"}}, 2, 0, {})
            .tokens() == std::vector<std::string>{"a", "b", "c", "d"});
  CHECK(Vocabulary::build({{"d", "a", "c"}, {"b", "a", "d"}, {"c", "b", "a", "e"}}, 1, 4,
                          {"[PAD]", "[UNK]"})
            .tokens() == std::vector<std::string>{"[PAD]", "[UNK]", "a", "b"});
}

TEST_CASE("BERT's punctuation: every ASCII symbol and the Unicode P* categories") {
  BasicTokenizerOptions o;
  o.do_lower_case = false;
  // ':' (58) and '@' (64) end one ASCII range, '$' and '`' are symbols BERT splits off too;
  // then Pd (—), Pi («), Pf (»), Po (¿), Ps (「), Pe (」), Pc (‿).
  CHECK(basic_tokenize("a:b@c$d`e", o) ==
        std::vector<std::string>{"a", ":", "b", "@", "c", "$", "d", "`", "e"});
  CHECK(basic_tokenize("a—b«c»¿d「e」f‿g", o) == std::vector<std::string>{"a", "—", "b", "«", "c",
                                                                          "»", "¿", "d", "「", "e",
                                                                          "」", "f", "‿", "g"});
  CHECK(basic_tokenize("a+b", o) == std::vector<std::string>{"a", "+", "b"});  // ASCII Sm too
  CHECK(basic_tokenize("a×b", o) == std::vector<std::string>{"a×b"});          // Unicode Sm is not
}

// BERT's _clean_text: NUL and U+FFFD (the replacement character, which is not a control
// character) vanish; other control characters too; tab and newline are whitespace.
TEST_CASE("BERT's cleaning drops NUL, U+FFFD and control characters") {
  BasicTokenizerOptions o;
  CHECK(basic_tokenize("fo\xEF\xBF\xBD"
                       "o b\x01"
                       "ar",
                       o) == std::vector<std::string>{"foo", "bar"});
  CHECK(basic_tokenize(std::string("a\0b", 3), o) == std::vector<std::string>{"ab"});
  CHECK(basic_tokenize("a\tb\nc", o) == std::vector<std::string>{"a", "b", "c"});
}

TEST_CASE("a BERT tokenizer file that does not say 'do_lower_case' lower-cases, as BERT") {
  const std::string dir = (anatomy::testing::temp_root() / "anatomy_tok_bert").string();
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/b.json") << R"({"kind": "bert"})";
  std::ofstream(dir + "/b.vocab.txt") << "[PAD]\n[UNK]\n[CLS]\n[SEP]\nhallo\n";
  CHECK(load_tokenizer(dir + "/b")->tokenize("Hallo") == std::vector<std::string>{"hallo"});
  std::filesystem::remove_all(dir);
}

TEST_CASE("a word tokenizer file that does not say 'lowercase' keeps case") {
  const std::string dir = (anatomy::testing::temp_root() / "anatomy_tok_word").string();
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/w.json") << R"({"kind": "word"})";
  std::ofstream(dir + "/w.vocab.txt") << "[PAD]\n[UNK]\n[BOS]\n[EOS]\n▁Hallo\n▁hallo\n";
  auto t = load_tokenizer(dir + "/w");
  CHECK(t->tokenize("Hallo hallo") == std::vector<std::string>{"▁Hallo", "▁hallo"});
  CHECK(t->encode("Hallo hallo") == std::vector<int64_t>{4, 5});
  std::filesystem::remove_all(dir);
}

TEST_CASE("a vocab.txt with Windows line endings loads the same tokens") {
  const std::string dir = (anatomy::testing::temp_root() / "anatomy_tok_crlf").string();
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/crlf.txt", std::ios::binary) << "[PAD]\r\n[UNK]\r\nflies\r\n\r\n";
  // The last line is empty once its "\r" is gone: still a line, as Python's splitlines sees it.
  CHECK(Vocabulary::load(dir + "/crlf.txt").tokens() ==
        std::vector<std::string>{"[PAD]", "[UNK]", "flies", ""});
  std::filesystem::remove_all(dir);
}

TEST_CASE("pre_tokenize: the space mark only on pieces that follow whitespace or start the text") {
  CHECK(pre_tokenize("Hallo, Welt!", false) ==
        std::vector<std::string>{"▁Hallo", ",", "▁Welt", "!"});
  // "world" follows a comma, "s" an apostrophe: no space before them, so no mark.
  CHECK(pre_tokenize("hello,world it's", false) ==
        std::vector<std::string>{"▁hello", ",", "world", "▁it", "'", "s"});
  CHECK(pre_tokenize("  Zwei\tWorte\n", true) == std::vector<std::string>{"▁zwei", "▁worte"});
}

TEST_CASE("is_cjk: Hugging Face's _is_chinese_char blocks, each end in and its neighbours out") {
  // The ranges of transformers' BasicTokenizer._is_chinese_char.
  const std::vector<std::pair<char32_t, char32_t>> blocks = {
      {0x4E00, 0x9FFF},   {0x3400, 0x4DBF},   {0x20000, 0x2A6DF}, {0x2A700, 0x2B73F},
      {0x2B740, 0x2B81F}, {0x2B820, 0x2CEAF}, {0xF900, 0xFAFF},   {0x2F800, 0x2FA1F}};
  auto inside = [&](char32_t c) {
    return std::any_of(blocks.begin(), blocks.end(),
                       [&](const auto& b) { return c >= b.first && c <= b.second; });
  };
  for (const auto& [first, last] : blocks) {
    for (const char32_t c :
         std::vector<char32_t>{first - 1, first, first + 1, last - 1, last, last + 1}) {
      CAPTURE(static_cast<uint32_t>(c));
      CHECK(is_cjk(c) == inside(c));
    }
  }
  CHECK(is_cjk(U'時'));
  CHECK_FALSE(is_cjk(U'a'));
  CHECK_FALSE(is_cjk(U'ア'));  // katakana is not in BERT's list
}

// Hugging Face's decode(ids, skip_special_tokens=True): specials dropped, "##" pieces joined to
// the word before them, no space before punctuation; and a cased BERT tokenizer survives save
// and load_tokenizer.
TEST_CASE("BertTokenizer: decode joins word pieces and skips specials, and saves its casing") {
  const Vocabulary vocab(std::vector<std::string>{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
                                                  "un", "##aff", "##able", "time", "Time", "!",
                                                  "don", "'", "t", ",", "."});
  const BertTokenizer lower(vocab);
  const auto pair = lower.encode_plus("unaffable time", std::string("TIME!"));
  CHECK(pair.tokens == std::vector<std::string>{"[CLS]", "un", "##aff", "##able", "time", "[SEP]",
                                                "time", "!", "[SEP]"});
  CHECK(lower.decode(pair.input_ids) == "unaffable time time!");
  CHECK(lower.decode(lower.encode("don't, time.")) == "don't, time.");
  CHECK(lower.decode({}) == "");
  CHECK(lower.decode({2, 3}) == "");  // only specials

  BasicTokenizerOptions cased_options;
  cased_options.do_lower_case = false;
  const BertTokenizer cased(vocab, cased_options);
  CHECK(cased.tokenize("Time time") == std::vector<std::string>{"Time", "time"});
  const std::string dir = (anatomy::testing::temp_root() / "anatomy_tok_cased").string();
  std::filesystem::create_directories(dir);
  cased.save(dir + "/b");
  const auto loaded = load_tokenizer(dir + "/b");
  CHECK(loaded->kind() == "bert");
  CHECK(loaded->tokenize("Time time") == std::vector<std::string>{"Time", "time"});
  lower.save(dir + "/l");
  CHECK(load_tokenizer(dir + "/l")->tokenize("Time time") ==
        std::vector<std::string>{"time", "time"});
  std::filesystem::remove_all(dir);
}

// The three parts BertTokenizer, BpeTokenizer and the tokenizer.json pipeline share.
TEST_CASE("WordPiece: the longest entry first, each piece's characters, [UNK] for the whole word") {
  const std::map<std::string, int64_t> vocab = {
      {"[UNK]", 0}, {"un", 1}, {"unaff", 2}, {"##aff", 3}, {"##able", 4}, {"##a", 5}, {"é", 6}};
  const WordPiece::Find find = [&](const std::string& t) {
    const auto it = vocab.find(t);
    return it == vocab.end() ? int64_t{-1} : it->second;
  };
  const WordPiece wordpiece;
  auto pieces = wordpiece.split(U"unaffable", find);
  REQUIRE(pieces.size() == 2);  // "unaff" is longer than "un", so "##able" follows it
  CHECK(pieces[0].token == "unaff");
  CHECK(pieces[0].id == 2);
  CHECK(pieces[1].token == "##able");
  CHECK(pieces[1].begin == 5);
  CHECK(pieces[1].end == 9);
  // One piece that cannot be spelled makes the whole word unknown, over all its characters.
  pieces = wordpiece.split(U"unaffablex", find);
  REQUIRE(pieces.size() == 1);
  CHECK(pieces[0].token == "[UNK]");
  CHECK(pieces[0].end == 10);
  // Characters, not bytes: "é" is one character of two bytes.
  pieces = wordpiece.split(U"é", find);
  REQUIRE(pieces.size() == 1);
  CHECK(pieces[0].end == 1);
  // Another prefix, another unknown token, a shorter limit.
  const WordPiece other{"<unk>", "@@", 3};
  CHECK(other.split(U"unaff", find)[0].token == "<unk>");
  CHECK(other.split(U"una", [](const std::string& t) { return t == "un" || t == "@@a" ? 1 : -1; })
            .back()
            .token == "@@a");
}

TEST_CASE("BpeMerges: lowest rank first, the leftmost of equal pairs, unknown symbols stay") {
  // Ids: a 0, b 1, c 2, ab 3, bc 4, aa 5, abc 6.
  BpeMerges merges;
  merges.add(1, 2, 4);  // b c -> bc, rank 0
  merges.add(0, 1, 3);  // a b -> ab, rank 1
  merges.add(0, 0, 5);  // a a -> aa, rank 2
  merges.add(0, 4, 6);  // a bc -> abc, rank 3
  auto ids = [&](const std::vector<int64_t>& word) {
    std::vector<BpeMerges::Symbol> symbols;
    for (size_t i = 0; i < word.size(); ++i) symbols.push_back({word[i], i, i + 1});
    std::vector<int64_t> out;
    for (const auto& s : merges.apply(symbols)) out.push_back(s.id);
    return out;
  };
  using V = std::vector<int64_t>;
  CHECK(ids({0, 1, 2}) == V{6});             // b c first (rank 0), then a bc
  CHECK(ids({0, 1}) == V{3});                // a b
  CHECK(ids({0, 0, 0}) == V{5, 0});          // a a at the left first
  CHECK(ids({0, -1, 1, 2}) == V{0, -1, 4});  // an unknown symbol merges with nothing
  CHECK(ids({}).empty());
  const auto spans = merges.apply({{0, 0, 1}, {1, 1, 3}, {2, 3, 4}});
  REQUIRE(spans.size() == 1);
  CHECK(spans[0].begin == 0);
  CHECK(spans[0].end == 4);  // the merged symbol spans what its parts spanned
}

TEST_CASE("truncate_longest_first: the longer loses a token at a time, the second of equals") {
  using P = std::pair<size_t, size_t>;
  CHECK(truncate_longest_first(5, 5, true, 3, 10) == P{4, 3});
  CHECK(truncate_longest_first(5, 1, true, 3, 6) == P{2, 1});
  CHECK(truncate_longest_first(7, 0, false, 2, 4) == P{2, 0});
  CHECK(truncate_longest_first(7, 3, true, 3, 0) == P{7, 3});  // 0: no truncation
  CHECK(truncate_longest_first(2, 2, true, 3, 3) == P{0, 0});
  check_error([] { truncate_longest_first(1, 1, true, 3, 2); },
              {"max_length", "at least 3", "a pair", "got 2"});
}
