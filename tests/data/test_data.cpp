// Data: the toy tasks, the TSV reader, batching, and BLEU against sacreBLEU's vectors.
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <tuple>

#include "data/data.hpp"
#include "helpers.hpp"

using namespace anatomy;
using namespace anatomy::data;
using testing::check_error;

TEST_CASE("numbers: English and German number words") {
  CHECK(english_number(4321) == "four thousand three hundred twenty-one");
  CHECK(german_number(4321) == "viertausenddreihunderteinundzwanzig");
  CHECK(german_number(1) == "eins");
  CHECK(german_number(21) == "einundzwanzig");
  CHECK(german_number(101) == "einhunderteins");
  CHECK(german_number(1001) == "eintausendeins");
  CHECK(german_number(30) == "dreißig");
  CHECK(german_number(17) == "siebzehn");
  CHECK(german_number(20) == "zwanzig");  // the first tens word, at the edge of the teens
  CHECK(german_number(120) == "einhundertzwanzig");
  CHECK(english_number(20) == "twenty");
  CHECK(english_number(19) == "nineteen");
  CHECK(german_number(9999) == "neuntausendneunhundertneunundneunzig");
  CHECK(german_number(100) == "einhundert");  // the hundreds at their first value
  CHECK(german_number(1100) == "eintausendeinhundert");
  CHECK(german_number(999999) == "neunhundertneunundneunzigtausendneunhundertneunundneunzig");
  CHECK(english_number(100) == "one hundred");
  CHECK(english_number(1000) == "one thousand");
  CHECK(english_number(15) == "fifteen");
  CHECK(english_number(90210) == "ninety thousand two hundred ten");
  check_error([] { german_number(0); }, {"outside 1..999999"});
}

TEST_CASE("toy tasks: splits never share a source, and a seed fixes the data") {
  for (const auto& name : task_names()) {
    CAPTURE(name);
    const Task t = make_task(name, 1);
    // Words are joined by single spaces: no empty word where a part went missing.
    std::string gap;  // the first pair with an empty word, if any
    for (const auto& p : t.splits.train)
      for (const std::string& s : {p.source, p.target})
        if (gap.empty() &&
            (s.empty() || s.find("  ") != std::string::npos || s.front() == ' ' || s.back() == ' '))
          gap = p.source + " -> " + p.target;
    CHECK_MESSAGE(gap.empty(), gap);
    CHECK(t.splits.valid.size() == 500);
    CHECK(t.splits.test.size() == 500);
    CHECK(t.splits.train.size() > 5000);
    std::set<std::string> train;
    for (const auto& p : t.splits.train) train.insert(p.source);
    for (const auto* held : {&t.splits.valid, &t.splits.test})
      for (const auto& p : *held) CHECK_FALSE(train.count(p.source));
    const Task again = make_task(name, 1);
    CHECK(again.splits.train[7].source == t.splits.train[7].source);
    CHECK(make_task(name, 2).splits.test[0].source != t.splits.test[0].source);
  }
  const Task rev = make_task("reverse");
  const Pair& p = rev.splits.train[0];
  auto words = [](const std::string& s) {
    std::vector<std::string> w;
    std::stringstream ss(s);
    for (std::string x; ss >> x;) w.push_back(x);
    return w;
  };
  auto src = words(p.source), tgt = words(p.target);
  std::reverse(src.begin(), src.end());
  CHECK(src == tgt);
  const Task dates = make_task("dates");
  const Pair& d = dates.splits.train[0];
  CHECK(d.target.size() == 10);
  CHECK(d.target[4] == '-');
  const Task toylang = make_task("toylang");
  const Pair& toy = toylang.splits.train[3];
  CHECK((toy.target.ends_with("as") || toy.target.ends_with("is")));
  check_error([] { make_task("klingon"); }, {"unknown task 'klingon'", "numbers"});
}

TEST_CASE("TSV corpus: pairs, extra columns, and errors with line numbers") {
  const std::string dir = (anatomy::testing::temp_root() / "anatomy_tsv").string();
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir + "/" + name, std::ios::binary) << text;
    return dir + "/" + name;
  };
  auto c = read_tsv(write("ok.tsv", "Go.\tGeh.\tCC-BY 2.0 (France)\r\n\nHi.\tHallo!\n"));
  REQUIRE(c.pairs.size() == 2);
  CHECK(c.pairs[0].target == "Geh.");
  CHECK(c.pairs[1].source == "Hi.");
  const std::string bad = write("bad.tsv", "Go.\tGeh.\nno tab here\nHi.\t\n\xff\xfe\tx\n");
  check_error([&] { read_tsv(bad); }, {"bad.tsv line 2 has no tab", "--skip-malformed"});
  auto skipped = read_tsv(bad, {.skip_malformed = true});
  CHECK(skipped.pairs.size() == 1);
  CHECK(skipped.skipped_malformed == 3);
  check_error([&] { read_tsv(write("utf8.tsv", "a\tb\n\xff\tc\n")); },
              {"line 2 is not valid UTF-8"});
  // The check reads to the line's last byte.
  check_error([&] { read_tsv(write("utf8end.tsv", "a\tb\nc\td\xff\n")); },
              {"line 2 is not valid UTF-8"});
  // NUL is valid UTF-8 (code point 0): kept, as any other character.
  const auto nul = read_tsv(write("nul.tsv", std::string("a\0b\tc\n", 6)));
  REQUIRE(nul.pairs.size() == 1);
  CHECK(nul.pairs[0].source == std::string("a\0b", 3));
  check_error([&] { read_tsv(write("empty.tsv", "")); }, {"no usable pairs"});
  check_error([&] { read_tsv(dir + "/missing.tsv"); }, {"cannot open"});
  CHECK(read_tsv(write("long.tsv", "a\tb\nlonger\tc\n"), {.max_chars = 3}).skipped_long == 1);
  CHECK(read_tsv(write("one.tsv", "a\tb\nab\tc\n"), {.max_chars = 1}).skipped_long == 1);
  // The target side alone is enough to skip a pair.
  const auto target = read_tsv(write("target.tsv", "a\tb\nc\tlonger\n"), {.max_chars = 3});
  CHECK(target.skipped_long == 1);
  REQUIRE(target.pairs.size() == 1);
  CHECK(target.pairs[0].target == "b");
  // Characters, not bytes: "Grüße" is 5 characters in 7 bytes, and fits in 5.
  const auto umlauts =
      read_tsv(write("umlauts.tsv", "Grüße\tGrüße\nGrüßen\tx\n"), {.max_chars = 5});
  CHECK(umlauts.skipped_long == 1);
  REQUIRE(umlauts.pairs.size() == 1);
  CHECK(umlauts.pairs[0].source == "Grüße");
  std::filesystem::remove_all(dir);
}

TEST_CASE("Tatoeba eng-deu reads whole") {
  if (!testing::have_shared_data("tatoeba/eng-deu.tsv")) return;
  const std::string path = testing::shared_data("tatoeba/eng-deu.tsv");
  auto c = read_tsv(path);
  CHECK(c.pairs.size() == 50001);
  CHECK(c.pairs[0].source == "Go.");
}

TEST_CASE("source_key: what the tokenizers read, lower-cased") {
  CHECK(source_key("Tom is here.") == source_key("tom is  here ."));
  CHECK(source_key("Tom is here.") == source_key("TOM IS HERE."));
  CHECK(source_key("Tom is here.") != source_key("Tom is there."));
  CHECK(source_key("Tom is here.") != source_key("Tom is here?"));
  CHECK(source_key("Über") == source_key("über"));  // Unicode case, not ASCII only
}

TEST_CASE("split_by_source: no held-out source is trained on, and every pair is kept") {
  // 400 pairs over 90 sources, most of them repeated with other targets (as in Tatoeba), some
  // repeats differing only in case and spacing.
  std::vector<Pair> pairs;
  for (int i = 0; i < 400; ++i) {
    const int s = (i * 37) % 90;
    std::string source = fmt::format("sentence {} here.", s);
    if (i % 3 == 0) source = fmt::format("Sentence {}  here .", s);
    pairs.push_back({source, fmt::format("satz {} variante {}", s, i)});
  }
  SplitReport r;
  const Splits sp = split_by_source(pairs, 20, 20, 7, "test.tsv", &r);
  CHECK(r.pairs == 400);
  CHECK(r.sources == 90);
  CHECK(r.repeated_pairs == 400);  // every source has several pairs
  CHECK(sp.train.size() + sp.valid.size() + sp.test.size() == 400);
  CHECK(sp.valid.size() >= 20);
  CHECK(sp.test.size() >= 20);
  CHECK(sp.valid.size() < 40);  // whole groups of ~4-5 pairs, not far past the size asked for
  std::set<std::string> train, valid, test;
  for (const auto& p : sp.train) train.insert(source_key(p.source));
  for (const auto& p : sp.valid) valid.insert(source_key(p.source));
  for (const auto& p : sp.test) test.insert(source_key(p.source));
  CHECK(static_cast<int64_t>(valid.size()) == r.valid_sources);
  CHECK(static_cast<int64_t>(test.size()) == r.test_sources);
  for (const auto& k : valid) CHECK_MESSAGE((!train.count(k) && !test.count(k)), k);
  for (const auto& k : test) CHECK_MESSAGE(!train.count(k), k);
  // Every target is still there, once.
  std::multiset<std::string> targets;
  for (const auto* part : {&sp.train, &sp.valid, &sp.test})
    for (const auto& p : *part) targets.insert(p.target);
  CHECK(targets.size() == 400);
  CHECK(std::set<std::string>(targets.begin(), targets.end()).size() == 400);
  // The seed fixes it; another seed holds out other sources.
  CHECK(split_by_source(pairs, 20, 20, 7, "test.tsv").test[0].target == sp.test[0].target);
  CHECK(split_by_source(pairs, 20, 20, 8, "test.tsv").test[0].target != sp.test[0].target);
  // A size of 0 leaves that split to a file of the user's own.
  const Splits no_valid = split_by_source(pairs, 0, 20, 7, "test.tsv");
  CHECK(no_valid.valid.empty());
  CHECK(no_valid.train.size() + no_valid.test.size() == 400);
  // Too few sources to hold any out: a clear error, not an empty training set.
  std::vector<Pair> one_source(10, Pair{"same.", "gleich."});
  CHECK_THROWS_WITH_AS(split_by_source(one_source, 1, 1, 0, "one.tsv"),
                       doctest::Contains("1 distinct source"), Error);
  // The count needed is one per held-out split asked for, plus one to train on.
  check_error([&] { split_by_source(one_source, 1, 0, 0, "one.tsv"); },
              {"1 distinct source", "at least 2 are needed"});
  // Two sources are enough for one held-out split: one to hold out, one to train on.
  const std::vector<Pair> two = {{"a.", "x."}, {"b.", "y."}, {"b.", "z."}};
  SplitReport r2;
  const Splits valid_only = split_by_source(two, 1, 0, 0, "two.tsv", &r2);
  CHECK(valid_only.valid.size() + valid_only.train.size() == 3);
  CHECK(valid_only.test.empty());
  CHECK(r2.repeated_pairs == 2);  // "b." twice; "a." once is not repeated
  CHECK(split_by_source(two, 0, 1, 0, "two.tsv").test.size() >= 1);
  // Sizes beyond the corpus take whole sources until one is left, and that one trains.
  const Splits greedy = split_by_source(two, 0, 10, 0, "two.tsv");
  CHECK(greedy.test.size() + greedy.train.size() == 3);
  CHECK(greedy.test.size() >= 1);
  CHECK(greedy.train.size() >= 1);
  const Splits most = split_by_source(pairs, 1000, 1000, 7, "test.tsv");
  std::set<std::string> left;
  for (const auto& p : most.train) left.insert(source_key(p.source));
  CHECK(left.size() == 1);
  CHECK(most.valid.size() + most.test.size() + most.train.size() == 400);
  check_error([&] { split_by_source(two, 1, 1, 0, "two.tsv"); },
              {"2 distinct source", "at least 3 are needed"});
}

TEST_CASE(
    "the split by pairs holds out one pair in 20, and needs one more pair than it holds out") {
  // Under 40 pairs one goes to validation and one to test; four pairs leave two to train on,
  // three would leave one, which split_corpus_by_pair refuses.
  const std::vector<Pair> four = {{"a.", "w."}, {"b.", "x."}, {"c.", "y."}, {"d.", "z."}};
  const Splits sp = split_corpus_by_pair(four, 0, "four.tsv");
  CHECK(sp.valid.size() == 1);
  CHECK(sp.test.size() == 1);
  CHECK(sp.train.size() == 2);
  check_error(
      [&] {
        split_corpus_by_pair({four.begin(), four.end() - 1}, 0, "three.tsv");
      },
      {"three.tsv has only 3 pairs", "at least 4 are needed"});
  // 100 pairs: 5 held out each way.
  std::vector<Pair> hundred;
  for (int i = 0; i < 100; ++i) hundred.push_back({fmt::format("s{}.", i), "t."});
  const Splits h = split_corpus_by_pair(hundred, 0, "hundred.tsv");
  CHECK(h.valid.size() == 5);
  CHECK(h.test.size() == 5);
  CHECK(h.train.size() == 90);
}

TEST_CASE("Tatoeba eng-deu: the split by source holds out no source the training split has") {
  if (!testing::have_shared_data("tatoeba/eng-deu.tsv")) return;
  const std::string path = testing::shared_data("tatoeba/eng-deu.tsv");
  auto pairs = read_tsv(path).pairs;
  // The split by pairs (what runs without data.split in run.json use): 36-40% of its test pairs
  // leak.
  const Splits by_pair = split_corpus_by_pair(pairs, 0, path);
  std::set<std::string> trained;
  for (const auto& p : by_pair.train) trained.insert(source_key(p.source));
  int64_t leaked = 0;
  for (const auto& p : by_pair.test) leaked += trained.count(source_key(p.source));
  CHECK(leaked > 300);
  SplitReport r;
  const Splits sp = split_by_source(std::move(pairs), 1000, 1000, 0, path, &r);
  CHECK(r.pairs == 50001);
  CHECK(r.sources > 37000);
  CHECK(r.sources < 37700);
  trained.clear();
  for (const auto& p : sp.train) trained.insert(source_key(p.source));
  leaked = 0;
  for (const auto* held : {&sp.valid, &sp.test})
    for (const auto& p : *held) leaked += trained.count(source_key(p.source));
  CHECK(leaked == 0);
  CHECK(sp.test.size() >= 1000);
  CHECK(sp.test.size() < 1010);
}

// pad_batch pads each row to the longest with pad_id; a batch whose rows are all empty (an
// empty text to translate) still gets one padding position per row, [B, 1], not a [B, 0]
// tensor that no layer takes.
TEST_CASE("pad_batch pads to the longest row, and to one position when every row is empty") {
  const Tensor t = pad_batch({{4, 5}, {}, {7}}, 9);
  CHECK(t.shape() == Shape{3, 2});
  CHECK(t.to_int_vector() == std::vector<int64_t>{4, 5, 9, 9, 7, 9});
  const Tensor empty = pad_batch({{}, {}}, 9);
  CHECK(empty.shape() == Shape{2, 1});
  CHECK(empty.to_int_vector() == std::vector<int64_t>{9, 9});
}

TEST_CASE("batching: padding, BOS/EOS, the token budget, every row once") {
  std::vector<std::vector<int64_t>> src, tgt;
  for (int i = 0; i < 100; ++i) {
    src.push_back(std::vector<int64_t>(1 + i % 9, 5));
    tgt.push_back(std::vector<int64_t>(1 + (i * 7) % 11, 6));
  }
  auto batches = make_batches(src, tgt, {.max_tokens = 64, .seed = 3});
  std::multiset<int64_t> seen;
  for (const auto& b : batches) {
    const int64_t B = b.source.size(0);
    CHECK(B * std::max(b.source.size(1), b.target_in.size(1)) <= 64);
    CHECK(b.target_in.shape() == b.target_out.shape());
    for (int64_t r = 0; r < B; ++r) {
      const auto& t = tgt[b.rows[r]];
      auto in = b.target_in.select(0, r).to_int_vector();
      auto out = b.target_out.select(0, r).to_int_vector();
      CHECK(in[0] == 2);          // [BOS] first
      CHECK(out[t.size()] == 3);  // [EOS] after the target
      CHECK(in[1] == t[0]);
      for (size_t k = t.size() + 1; k < out.size(); ++k) CHECK(out[k] == 0);  // padding
      seen.insert(b.rows[r]);
    }
  }
  CHECK(seen.size() == 100);
  CHECK(std::set<int64_t>(seen.begin(), seen.end()).size() == 100);
  auto again = make_batches(src, tgt, {.max_tokens = 64, .seed = 3});
  CHECK(again[0].rows == batches[0].rows);
  // Bucketed (unshuffled, to see the order): rows come in order of their padded length, the
  // longer of the source and the target plus its [BOS]; a batch is closed only when the next
  // row would pass the budget.
  auto padded = [&](int64_t r) { return std::max(src[r].size(), tgt[r].size() + 1); };
  batches = make_batches(src, tgt, {.max_tokens = 64, .shuffle = false});
  std::vector<size_t> lengths;
  std::vector<int64_t> order;
  for (const auto& b : batches)
    for (int64_t r : b.rows) {
      lengths.push_back(padded(r));
      order.push_back(r);
    }
  CHECK(std::is_sorted(lengths.begin(), lengths.end()));
  // The sort is stable and its key is the same for both rows it compares: rows of one padded
  // length keep their input order, whether the source or the target sets that length.
  for (size_t i = 0; i + 1 < order.size(); ++i)
    if (lengths[i] == lengths[i + 1]) CHECK(order[i] < order[i + 1]);
  for (size_t i = 0; i + 1 < batches.size(); ++i) {
    size_t longest = padded(batches[i + 1].rows[0]);
    for (int64_t r : batches[i].rows) longest = std::max(longest, padded(r));
    CHECK(static_cast<int64_t>(longest * (batches[i].rows.size() + 1)) > 64);
  }
  // max_rows caps the rows of a batch as well.
  for (const auto& b : make_batches(src, tgt, {.max_tokens = 64, .max_rows = 3, .seed = 3}))
    CHECK(b.rows.size() <= 3);
  // Its smallest value too: one row per batch, every row once.
  const auto single = make_batches(src, tgt, {.max_tokens = 64, .max_rows = 1, .seed = 3});
  CHECK(single.size() == src.size());
  for (const auto& b : single) CHECK(b.rows.size() == 1);
}

// 13a's second rule, a period or comma after a digit and before a non-digit: sacreBLEU's
// re.sub(r'([\.,])([^0-9])', r' \1 \2') keeps the mark ("3.x" -> "3 . x"); a number keeps its
// point ("3.5").
TEST_CASE("tokenize_13a splits a period or comma between a digit and a non-digit") {
  CHECK(tokenize_13a("3.x and 7,y but 3.5") == "3 . x and 7 , y but 3.5");
}

TEST_CASE("BLEU: every case of sacreBLEU's vectors, to 4 decimals") {
  if (!testing::have_shared_data("bleu/sacrebleu_vectors.json")) return;
  std::ifstream f(testing::shared_data("bleu/sacrebleu_vectors.json"));
  const auto j = nlohmann::json::parse(f);
  for (const auto& [in, out] : j["tokenize_13a"].items())
    CHECK(tokenize_13a(in) == out.get<std::string>());
  for (const auto& c : j["cases"]) {
    const std::string name = c["name"];
    CAPTURE(name);
    BleuOptions o;
    const auto& opt = c["options"];
    o.tokenize = opt.value("tokenize", "13a");
    o.lowercase = opt.value("lowercase", false);
    o.max_ngram_order = opt.value("max_ngram_order", 4);
    o.smooth_method = opt.value("smooth_method", "exp");
    if (opt.contains("smooth_value")) o.smooth_value = opt["smooth_value"].get<double>();
    o.effective_order = opt.value("effective_order", false);
    const auto hyps = c["hypotheses"].get<std::vector<std::string>>();
    const auto refs = c["references"].get<std::vector<std::vector<std::string>>>();
    // sacreBLEU's sentence_bleu cases go through ours: one hypothesis, one line per reference.
    const bool sentence = c.value("kind", "") == "sentence";
    std::vector<std::string> sentence_refs;
    if (sentence)
      for (const auto& stream : refs) sentence_refs.push_back(stream.at(0));
    const BleuScore s =
        sentence ? sentence_bleu(hyps.at(0), sentence_refs, o) : corpus_bleu(hyps, refs, o);
    const auto& e = c["expected"];
    CHECK(std::abs(s.score - e["score"].get<double>()) < 5e-5);
    CHECK(std::abs(s.bp - e["bp"].get<double>()) < 5e-5);
    CHECK(s.sys_len == e["sys_len"].get<int64_t>());
    CHECK(s.ref_len == e["ref_len"].get<int64_t>());
    CHECK(s.counts == e["counts"].get<std::vector<double>>());
    CHECK(s.totals == e["totals"].get<std::vector<double>>());
    for (size_t k = 0; k < s.precisions.size(); ++k)
      CHECK(std::abs(s.precisions[k] - e["precisions"][k].get<double>()) < 5e-5);
  }
  // sacreBLEU's printed line for its README example.
  const auto& readme = j["cases"][0];
  CHECK(corpus_bleu(readme["hypotheses"], readme["references"]).format() ==
        "BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = 0.944 hyp_len = 17 ref_len = 18)");
}

TEST_CASE("majority: labels are the most frequent of a, b, c, and examples are distinct") {
  const auto examples = majority_examples(2000, 3);
  std::set<std::string> seen;
  for (const auto& e : examples) {
    CHECK(seen.insert(e.text).second);
    int64_t counts[3] = {0, 0, 0};
    for (char c : e.text)
      if (c >= 'a' && c <= 'c') ++counts[c - 'a'];
    const int64_t best = std::max({counts[0], counts[1], counts[2]});
    CHECK(counts[e.label] == best);
    CHECK((counts[0] == best) + (counts[1] == best) + (counts[2] == best) == 1);
  }
  CHECK(majority_examples(10, 3)[4].text == examples[4].text);  // a seed fixes the data
  CHECK(examples.size() == 2000);                               // exactly as many as asked
  CHECK(majority_examples(1, 3).size() == 1);
  // Lengths 5 to 15, each of them drawn.
  std::set<size_t> lengths;
  for (const auto& e : examples) lengths.insert((e.text.size() + 1) / 2);
  CHECK(lengths == std::set<size_t>{5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15});
}

TEST_CASE("dates: every day of every month, February 29 in leap years only") {
  const Task t = make_task("dates", 4);
  std::map<int, int> last_day;  // month -> the largest day drawn
  int feb29 = 0;
  for (const auto* split : {&t.splits.train, &t.splits.valid, &t.splits.test}) {
    for (const Pair& p : *split) {
      int year = 0, month = 0, day = 0;
      REQUIRE(std::sscanf(p.target.c_str(), "%d-%d-%d", &year, &month, &day) == 3);
      last_day[month] = std::max(last_day[month], day);
      if (month == 2 && day == 29) {
        ++feb29;
        CHECK(((year % 4 == 0 && year % 100 != 0) || year % 400 == 0));
      }
    }
  }
  CHECK(last_day == std::map<int, int>{{1, 31},
                                       {2, 29},
                                       {3, 31},
                                       {4, 30},
                                       {5, 31},
                                       {6, 30},
                                       {7, 31},
                                       {8, 31},
                                       {9, 30},
                                       {10, 31},
                                       {11, 30},
                                       {12, 31}});
  CHECK(feb29 > 0);
}

TEST_CASE("numbers: every number from 1 to 9999, once") {
  const Task t = make_task("numbers", 2);
  std::set<std::string> sources;
  for (const auto* split : {&t.splits.train, &t.splits.valid, &t.splits.test})
    for (const Pair& p : *split) CHECK(sources.insert(p.source).second);
  CHECK(sources.size() == 9999);
  CHECK(sources.count(english_number(1)) == 1);
  CHECK(sources.count(english_number(9999)) == 1);
  CHECK(sources.count(english_number(10000)) == 0);
}

TEST_CASE("BLEU: of two references equally close in length, the shorter one counts") {
  // sacreBLEU's closest reference length: the smallest |ref - hyp|, ties to the shorter ref.
  for (const bool shorter_first : {true, false}) {
    CAPTURE(shorter_first);
    const std::vector<std::string> four = {"a b c d"}, six = {"a b c d e f"};
    const auto s =
        corpus_bleu({"a b c d e"}, shorter_first ? std::vector{four, six} : std::vector{six, four});
    CHECK(s.sys_len == 5);
    CHECK(s.ref_len == 4);
    CHECK(s.bp == 1.0);
  }
}

TEST_CASE("13a tokenization unescapes every entity, the first at the line's start too") {
  // As sacreBLEU's str.replace: every occurrence, left to right.
  CHECK(tokenize_13a("&quot;a&quot; &amp;&amp; &lt;b&gt;&gt;") == "\" a \" & & < b > >");
  // 13a's symbol ranges, one character of each ({-~, [-`, space-&, (-+, :-@, /), as sacreBLEU's
  // regular expression splits them.
  CHECK(tokenize_13a("a{b|c}d~e") == "a { b | c } d ~ e");
  CHECK(tokenize_13a("a[b`c") == "a [ b ` c");
  CHECK(tokenize_13a("a!b&c") == "a ! b & c");
  CHECK(tokenize_13a("a(b+c") == "a ( b + c");
  CHECK(tokenize_13a("a:b@c/d") == "a : b @ c / d");
}

// A period or comma after a digit is split off only by the rule "unless followed by a digit",
// which at the end of a line sees 13a's padding space: sacreBLEU gives "costs 5 ." and "3 ,", and
// keeps "3.5" and "3,5" whole.
// add-k smoothing (sacreBLEU's default k = 1) adds k to the matches and the totals of every order
// above 1: "a b c d" against "a b c e" has precisions 3/4, (2+1)/(3+1), (1+1)/(2+1), (0+1)/(1+1),
// so BLEU = 100 (3/4 · 3/4 · 2/3 · 1/2)^(1/4) = 65.8037 (brevity penalty 1).
TEST_CASE("add-k smoothing adds 1 by default to every order above unigrams") {
  const std::vector<std::string> hyp = {"a b c d"};
  const std::vector<std::vector<std::string>> ref = {{"a b c e"}};
  const double want = 100.0 * std::pow(0.75 * 0.75 * (2.0 / 3.0) * 0.5, 0.25);
  CHECK(std::abs(corpus_bleu(hyp, ref, {.smooth_method = "add-k"}).score - want) < 1e-9);
  CHECK(std::abs(corpus_bleu(hyp, ref, {.smooth_method = "add-k", .smooth_value = 1.0}).score -
                 want) < 1e-9);
  // k = 2: (2+2)/(3+2), (1+2)/(2+2), (0+2)/(1+2).
  const double k2 = 100.0 * std::pow(0.75 * 0.8 * 0.75 * (2.0 / 3.0), 0.25);
  CHECK(std::abs(corpus_bleu(hyp, ref, {.smooth_method = "add-k", .smooth_value = 2.0}).score -
                 k2) < 1e-9);
}

TEST_CASE("13a tokenization splits a digit's final period or comma, not a decimal point") {
  CHECK(tokenize_13a("It costs 5.") == "It costs 5 .");
  CHECK(tokenize_13a("1, 2, 3,") == "1 , 2 , 3 ,");
  CHECK(tokenize_13a("pi is 3.14 or 3,14") == "pi is 3.14 or 3,14");
  CHECK(tokenize_13a("pages 3-4") == "pages 3 - 4");
}

TEST_CASE("split_pairs: held-out sets must leave at least one training pair") {
  std::vector<Pair> pairs;
  for (int i = 0; i < 11; ++i) pairs.push_back({std::to_string(i), std::to_string(i)});
  const Splits s = split_pairs(pairs, 5, 5, 1);
  CHECK(s.train.size() == 1);
  CHECK(s.valid.size() == 5);
  CHECK(s.test.size() == 5);
  pairs.pop_back();
  check_error([&] { split_pairs(pairs, 5, 5, 1); },
              {"split: 10 pairs are too few for 5 valid and 5 test pairs"});
}

TEST_CASE("BLEU: every reference stream must have a line per hypothesis") {
  check_error(
      [] {
        corpus_bleu({"a b", "c d"}, {{"a b"}, {"a b", "c d"}});
      },
      {"bleu: reference stream 1 has 1 lines but there are 2 hypotheses"});
  check_error(
      [] {
        corpus_bleu({"a b", "c d"}, {{"a b", "c d"}, {"a b"}});
      },
      {"reference stream 2 has 1 lines"});
}

TEST_CASE("toylang: subjects are definite half of the time") {
  // Read from the toy side, "la" before a definite noun. Definite and indefinite phrases have
  // as many forms each, so removing repeated sentences keeps the half (the other choices have
  // unequal numbers of forms, and repeats thin out the more frequent ones). 20,000 sentences:
  // standard error 0.0035.
  const Task t = make_task("toylang", 5);
  double n = 0, definite = 0;
  for (const auto* split : {&t.splits.train, &t.splits.valid, &t.splits.test})
    for (const Pair& p : *split) {
      definite += p.target.starts_with("la ");
      ++n;
    }
  CHECK(std::abs(definite / n - 0.5) < 0.02);
  // And plural a third of the time: the subject's noun (the first toy word after "la") ends in
  // the plural -j (a subject has no accusative -n).
  double plural = 0;
  for (const auto* split : {&t.splits.train, &t.splits.valid, &t.splits.test})
    for (const Pair& p : *split) {
      const std::string rest = p.target.starts_with("la ") ? p.target.substr(3) : p.target;
      plural += rest.substr(0, rest.find(' ')).ends_with("j");
    }
  CHECK(std::abs(plural / n - 1.0 / 3.0) < 0.02);
}

// Seed 0's data is fixed across builds (the guide's scores are measured on it): each task's
// first training pair and its size, and the majority task's first example.
TEST_CASE("toy tasks: seed 0 gives the same data in every build") {
  const std::vector<std::tuple<std::string, std::string, std::string, size_t>> pinned = {
      {"copy", "g q s a q", "g q s a q", 20000},
      {"reverse", "g q s a q", "q a s q g", 20000},
      {"numbers", "two thousand seven hundred thirty", "zweitausendsiebenhundertdreißig", 9999},
      {"dates", "June 22, 2077", "2077-06-22", 20000},
      {"toylang", "a young man follows a big teacher", "viro juna instruiston grandan sekvas",
       20000}};
  for (const auto& pin : pinned) {
    const std::string name = std::get<0>(pin);
    CAPTURE(name);
    const Task t = make_task(name, 0);
    CHECK(t.splits.train[0].source == std::get<1>(pin));
    CHECK(t.splits.train[0].target == std::get<2>(pin));
    CHECK(t.splits.train.size() + t.splits.valid.size() + t.splits.test.size() == std::get<3>(pin));
  }
  const auto m = majority_examples(3, 0);
  CHECK(m[0].text == "g b c f c f e d e e");
  CHECK(m[0].label == 2);
}

// The English side agrees with the toy side: the toy verb's stem names the English verb, whose
// form follows the tense (-is: "liked", "watched") and the subject's number (plural: "like";
// singular: "likes", "watches"); half of the subjects have an adjective and half of the
// sentences are in the past.
TEST_CASE("toylang: English verbs agree with tense and number, in the stated proportions") {
  const Task t = make_task("toylang", 4);
  const std::set<std::string> adjectives = {"big", "small", "red", "old", "young", "happy"};
  const std::map<std::string, std::string> english = {{"ŝat", "like"},    {"rigard", "watch"},
                                                      {"sekv", "follow"}, {"help", "help"},
                                                      {"vok", "call"},    {"vizit", "visit"}};
  double n = 0, past = 0, with_adjective = 0;
  for (const Pair& p : t.splits.train) {
    CAPTURE(p.source);
    std::vector<std::string> en, toy;
    std::istringstream a(p.source), b(p.target);
    for (std::string x; a >> x;) en.push_back(x);
    for (std::string x; b >> x;) toy.push_back(x);
    const size_t v = adjectives.count(en[1]) ? 3 : 2;  // determiner, [adjective], noun, verb
    REQUIRE(v < en.size());
    const std::string& toy_verb = toy.back();
    const bool is_past = toy_verb.ends_with("is");
    REQUIRE(english.count(toy_verb.substr(0, toy_verb.size() - 2)));
    const std::string base = english.at(toy_verb.substr(0, toy_verb.size() - 2));
    const bool plural = toy[toy[0] == "la" ? 1 : 0].ends_with("j");  // the subject's noun
    const std::string wanted = is_past  ? base + (base.back() == 'e' ? "d" : "ed")
                               : plural ? base
                                        : base + (base.back() == 'h' ? "es" : "s");
    CHECK(en[v] == wanted);
    n += 1, past += is_past, with_adjective += v == 3;
  }
  CHECK(std::abs(past / n - 0.5) < 0.02);
  CHECK(std::abs(with_adjective / n - 0.5) < 0.03);
}

TEST_CASE("dates: days_in_month knows the Gregorian leap years") {
  CHECK(days_in_month(2023, 2) == 28);
  CHECK(days_in_month(2024, 2) == 29);  // every 4th year
  CHECK(days_in_month(1900, 2) == 28);  // but not every 100th
  CHECK(days_in_month(2000, 2) == 29);  // but every 400th
  CHECK(days_in_month(2000, 1) == 31);
  CHECK(days_in_month(2000, 4) == 30);
  CHECK(days_in_month(2001, 12) == 31);
  check_error([] { days_in_month(2000, 13); }, {"days_in_month", "month 13"});
  check_error([] { days_in_month(2000, 0); }, {"days_in_month", "month 0"});
  // Every generated date exists: no February 29 outside a leap year, no April 31.
  const Task t = make_task("dates", 2);
  for (const Pair& p : t.splits.train) {
    const int year = std::stoi(p.target.substr(0, 4)), month = std::stoi(p.target.substr(5, 2));
    CHECK(std::stoi(p.target.substr(8, 2)) <= days_in_month(year, month));
  }
}

TEST_CASE("toylang: every sentence has its subject, its object in the accusative, then the verb") {
  const Task t = make_task("toylang", 6);
  for (const Pair& p : t.splits.test) {
    CAPTURE(p.target);
    std::vector<std::string> w;
    std::istringstream in(p.target);
    for (std::string x; in >> x;) w.push_back(x);
    REQUIRE(w.size() >= 3);
    CHECK((w.back().ends_with("is") || w.back().ends_with("as")));  // the verb, last
    // One noun in the nominative (-o, -oj) and one in the accusative (-on, -ojn).
    int nominative = 0, accusative = 0;
    for (const auto& x : w) {
      nominative += x.ends_with("o") || x.ends_with("oj");
      accusative += x.ends_with("on") || x.ends_with("ojn");
    }
    CHECK(nominative == 1);
    CHECK(accusative == 1);
  }
}

TEST_CASE("Splits::split names each part, and refuses other names") {
  Splits s;
  s.train = {{"a", "b"}};
  s.valid = {{"c", "d"}, {"e", "f"}};
  s.test = {{"g", "h"}, {"i", "j"}, {"k", "l"}};
  CHECK(s.split("train").size() == 1);
  CHECK(s.split("valid").size() == 2);
  CHECK(s.split("test").size() == 3);
  check_error([&] { s.split("dev"); }, {"unknown split 'dev'", "train, valid or test"});
}

TEST_CASE("BLEU: an empty reference is a length like any other") {
  // sacreBLEU: the closest reference length to a 1-word hypothesis among 0 and 3 words is 0.
  const auto s = corpus_bleu({"a"}, {{""}, {"a b c"}});
  CHECK(s.ref_len == 0);
  CHECK(s.sys_len == 1);
  // An empty hypothesis against an empty reference is not too short: sacreBLEU's BP is 1.
  const auto empty = corpus_bleu({""}, {{""}});
  CHECK(empty.sys_len == 0);
  CHECK(empty.bp == 1.0);
  CHECK(empty.score == 0.0);
}

// sacreBLEU splits a line with Python's str.split(): any run of ASCII whitespace separates words,
// carriage return, form feed and vertical tab included.
TEST_CASE("BLEU: words are split at every kind of ASCII whitespace") {
  BleuOptions o;
  o.tokenize = "none";
  const auto s =
      corpus_bleu({"one\ttwo\rthree\ffour\vfive\nsix"}, {{"one two three four five six"}}, o);
  CHECK(s.sys_len == 6);
  CHECK(s.score == doctest::Approx(100.0));
}

// Each clause of the corpus reader's filter on its own: a file of good pairs and one line that
// fails only that clause. A clause that never fires, or one that fires for the other side, keeps
// or drops the wrong line here.
TEST_CASE("TSV corpus: each malformed or long clause skips its line alone, and says which") {
  testing::TempDir dir;
  auto read = [&](const std::string& bad, const CorpusOptions& options) {
    std::ofstream(dir / "c.tsv", std::ios::binary) << "Go.\tGeh.\n" << bad << "\nHi.\tHallo.\n";
    return read_tsv(dir / "c.tsv", options);
  };
  struct Clause {
    const char* name;
    std::string line;
    const char* message;  // empty: a long pair, dropped without an error
  };
  const Clause clauses[] = {
      {"no tab", "Go on.", "line 2 has no tab between source and target"},
      {"empty source", "\tGeh weiter.", "line 2 has an empty source or target"},
      {"empty target", "Go on.\t", "line 2 has an empty source or target"},
      {"a source of spaces", "   \tGeh weiter.", "line 2 has an empty source or target"},
      {"a target of spaces", "Go on.\t \t(c)", "line 2 has an empty source or target"},
      {"invalid UTF-8 in the source", "Go \xc3.\tGeh.", "line 2 is not valid UTF-8"},
      {"invalid UTF-8 in the target", "Go.\tGeh \xe2\x82.", "line 2 is not valid UTF-8"},
      {"a long source", "Go on, go on.\tGeh.", ""},
      {"a long target", "Go.\tGeh weiter, los.", ""},
  };
  for (const Clause& c : clauses) {
    CAPTURE(c.name);
    const CorpusOptions limit{.max_chars = 8};
    if (*c.message) {
      check_error([&] { read(c.line, limit); }, {"c.tsv", c.message, "--skip-malformed"});
      const Corpus kept = read(c.line, {.max_chars = 8, .skip_malformed = true});
      CHECK(kept.skipped_malformed == 1);
      CHECK(kept.skipped_long == 0);
      REQUIRE(kept.pairs.size() == 2);
      CHECK(kept.pairs[1].source == "Hi.");
    } else {
      const Corpus kept = read(c.line, limit);
      CHECK(kept.skipped_long == 1);
      CHECK(kept.skipped_malformed == 0);
      REQUIRE(kept.pairs.size() == 2);
      CHECK(kept.pairs[1].source == "Hi.");
      // Without the limit the same line is a pair like any other.
      CHECK(read(c.line, {}).pairs.size() == 3);
    }
  }
  // At the limit a side is kept: 8 characters each, "ä" one character in two bytes.
  const Corpus at_limit = read("Go on, ä\tGeh, los", {.max_chars = 8});
  CHECK(at_limit.skipped_long == 0);
  CHECK(at_limit.pairs.size() == 3);
  // Blank and whitespace-only lines are neither pairs nor malformed.
  const Corpus blank = read(" \t ", {});
  CHECK(blank.skipped_malformed == 0);
  CHECK(blank.pairs.size() == 2);
  CHECK(blank.lines == 3);
}
