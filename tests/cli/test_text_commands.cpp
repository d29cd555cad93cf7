// The commands that read text without a model through the `anatomy` program: bleu and tokenize.
#include <algorithm>
#include <cmath>
#include <regex>
#include <sstream>

#include "data/corpus.hpp"
#include "training/training.hpp"
#include "training/training_fixtures.hpp"

using namespace anatomy;
using namespace anatomy::testing;

// These run the `anatomy` command: label end-to-end (the sanitizer run skips them).
TEST_SUITE_BEGIN("end-to-end");

TEST_CASE("bleu and tokenize commands") {
  const std::string dir = fresh_dir("bleu");
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/hyp.txt")
      << "The dog bit the man.\nIt wasn't surprising.\nThe man had just bitten him.\n";
  std::ofstream(dir + "/ref1.txt")
      << "The dog bit the man.\nIt was not unexpected.\nThe man bit him first.\n";
  std::ofstream(dir + "/ref2.txt")
      << "The dog had bit the man.\nNo one was surprised.\nThe man had bitten the dog.\n";
  auto text = run(fmt::format("bleu {0}/hyp.txt {0}/ref1.txt {0}/ref2.txt", dir));
  CHECK(text.output ==
        "BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = 0.944 hyp_len = 17 ref_len = 18)\n");
  auto json = run(fmt::format("bleu --format json {0}/hyp.txt {0}/ref1.txt {0}/ref2.txt", dir));
  const auto j = nlohmann::json::parse(json.output);
  CHECK(std::abs(j["score"].get<double>() - 48.530827) < 1e-4);
  CHECK(j["counts"] == nlohmann::json({14, 7, 5, 3}));
  CHECK(j["ref_len"] == 18);
  // Case counts unless --lowercase is given (sacreBLEU's -lc).
  std::ofstream(dir + "/upper.txt") << "THE DOG BIT THE MAN.\n";
  std::ofstream(dir + "/lower.txt") << "The dog bit the man.\n";
  auto cased = run(fmt::format("bleu --format json {0}/upper.txt {0}/lower.txt", dir));
  auto uncased =
      run(fmt::format("bleu --lowercase --format json {0}/upper.txt {0}/lower.txt", dir));
  CHECK(nlohmann::json::parse(cased.output)["counts"] == nlohmann::json({1, 0, 0, 0}));  // "."
  CHECK(nlohmann::json::parse(uncased.output)["score"].get<double>() == doctest::Approx(100.0));
  std::ofstream(dir + "/short.txt") << "one line\n";
  // A reference file of another length is named, first or later among the references.
  for (const std::string refs : {"{0}/short.txt {0}/ref1.txt", "{0}/ref1.txt {0}/short.txt"}) {
    const auto r = run(fmt::format(fmt::runtime("bleu {0}/hyp.txt " + refs), dir));
    CHECK(r.code != 0);
    CHECK_MESSAGE(r.output.find("bleu: " + dir + "/short.txt has 1 lines but " + dir +
                                "/hyp.txt has 3") != std::string::npos,
                  r.output);
  }

  if (!testing::have_shared_data("bert-base-uncased/vocab.txt")) return;
  const std::string vocab = testing::shared_data("bert-base-uncased/vocab.txt");
  auto t = run("tokenize --vocab " + vocab + " \"time flies like an arrow\"");
  CHECK(t.output == "time flies like an arrow\t2051 10029 2066 2019 8612\n");
  auto tj = run("tokenize --vocab " + vocab + " --format json \"I like strawberries\"");
  CHECK(nlohmann::json::parse(tj.output)["tokens"] ==
        nlohmann::json({"i", "like", "straw", "##berries"}));
  // The book's pair, as BERT reads it.
  auto p = run("tokenize --vocab " + vocab +
               " --pair \"time flies like an arrow\" \"fruit flies like a banana\"");
  CHECK(p.output ==
        "[CLS] time flies like an arrow [SEP] fruit flies like a banana [SEP]\t101 2051 10029 2066 "
        "2019 8612 102 5909 10029 2066 1037 15212 102\t0 0 0 0 0 0 0 1 1 1 1 1 1\n");
  // Uncased unless --cased: capitals are lower-cased in pairs and in truncated texts too.
  auto upper = run("tokenize --vocab " + vocab +
                   " --pair \"Time flies like an arrow\" \"Fruit flies like a banana\"");
  CHECK(upper.output == p.output);
  // Two pairs: a line each, in order (a step of 3 through the texts fails).
  auto two = run("tokenize --vocab " + vocab +
                 " --pair \"time flies like an arrow\" \"fruit flies like a banana\" a \"b c\"");
  CHECK_MESSAGE(two.code == 0, two.output);
  CHECK(two.output ==
        p.output + "[CLS] a [SEP] b c [SEP]\t101 1037 102 1038 1039 102\t0 0 0 1 1 1\n");
  auto cut = run("tokenize --vocab " + vocab + " --max-length 5 \"Time flies like an arrow\"");
  CHECK(cut.output == "[CLS] time flies like [SEP]\t101 2051 10029 2066 102\t0 0 0 0 0\n");
  auto pj = run("tokenize --vocab " + vocab + " --pair --format json --max-length 10 a \"b c\"");
  const auto pair = nlohmann::json::parse(pj.output);
  CHECK(pair["token_type_ids"] == nlohmann::json({0, 0, 0, 1, 1, 1}));
  CHECK(pair["sentence_b_start"] == 3);
  // A run's own tokenizer has no pairs and no [CLS]/[SEP] to keep when truncating.
  for (const std::string flag : {"--pair", "--max-length 1"}) {
    auto r = run("tokenize --tokenizer /nonexistent/source_tokenizer " + flag + " a b");
    CHECK(r.code != 0);
    CHECK_MESSAGE(r.output.find("--pair and --max-length need special tokens") != std::string::npos,
                  r.output);
  }
  auto odd = run("tokenize --vocab " + vocab + " --pair one");
  CHECK(odd.code != 0);
  CHECK(odd.output.find("texts come two at a time") != std::string::npos);
  // Pairs from standard input, one `A<TAB>B` per line, as the arguments give them.
  auto piped = run("tokenize --vocab " + vocab + " --pair",
                   "printf 'time flies like an arrow\\tfruit flies like a banana\\n' | ");
  CHECK(piped.output == p.output);
  auto no_tab = run("tokenize --vocab " + vocab + " --pair", "printf 'a b\\n' | ");
  CHECK(no_tab.code != 0);
  CHECK_MESSAGE(no_tab.output.find("standard input line 1 has no tab") != std::string::npos,
                no_tab.output);
}

TEST_SUITE_END();
