// Runs on a corpus through the `anatomy` program: its splits as evaluate reads them again, held-out
// files, a shared vocabulary, and the size, epochs and positions a run plans for itself.
#include <algorithm>
#include <cmath>
#include <regex>
#include <sstream>

#include "data/corpus.hpp"
#include "training/training.hpp"
#include "training/training_fixtures.hpp"

using namespace anatomy;
using namespace anatomy::testing;

// These train through the `anatomy` command: label end-to-end (the sanitizer run skips them).
TEST_SUITE_BEGIN("end-to-end");

TEST_CASE("evaluate reads and splits a corpus exactly as training did") {
  const std::string dir = fresh_dir("corpus_eval");
  const std::string tsv = write_corpus(dir + "_pairs.tsv", 120, "a line without a tab\n");
  auto r = run("train --corpus " + tsv + " --skip-malformed --epochs 1 --vocab-size 40 --out " +
               dir + " " + kQuick);
  REQUIRE_MESSAGE(r.code == 0, r.output);
  CHECK(r.output.find("1 malformed lines skipped") != std::string::npos);
  CHECK(r.output.find("35 distinct source sentences") != std::string::npos);
  // The split is written down, whole groups of a source at a time: 5% of 120 is 6 pairs, and a
  // source has 3 or 4 of them.
  const int64_t test_pairs = lines_of(dir + "/split/test.tsv");
  CHECK(test_pairs >= 6);
  CHECK(test_pairs <= 9);
  CHECK(test_pairs + lines_of(dir + "/split/valid.tsv") + lines_of(dir + "/split/train.tsv") ==
        120);
  // Without the stored --skip-malformed, evaluate would stop at the malformed line.
  auto e = run("evaluate --checkpoint " + dir + " --split test --format json");
  REQUIRE_MESSAGE(e.code == 0, e.output);
  const auto score = nlohmann::json::parse(e.output);
  CHECK(score["sentences"].get<int64_t>() == test_pairs);
  // A corpus run chose its decoding on the validation pairs, and evaluate uses it by default.
  const auto chosen = nlohmann::json::parse(bytes(dir + "/run.json"))["decoding"];
  REQUIRE_MESSAGE(chosen.is_object(), r.output);
  CHECK(chosen["pairs"].get<int64_t>() == lines_of(dir + "/split/valid.tsv"));
  CHECK(score["beam"] == chosen["beam"]);
  CHECK(score["length_penalty"] == chosen["length_penalty"]);
  // The log line names each candidate once: greedy, then beam 4 at each length penalty.
  CHECK_MESSAGE(std::regex_search(
                    r.output, std::regex("decoding: (greedy|beam 4, length penalty [0-9.]+), "
                                         "chosen on [0-9]+ validation pairs \\(BLEU greedy "
                                         "[0-9.]+; beam 4 with length penalty 0.6: [0-9.]+, "
                                         "1: [0-9.]+, 1.5: [0-9.]+, 2: [0-9.]+; [0-9]+ s\\)\n")),
                r.output);
  // What it measured is what evaluate measures on the same pairs: greedy's BLEU, and the
  // choice's. Beam 4 is chosen only where it is at least as good as greedy.
  auto valid_greedy = run("evaluate --checkpoint " + dir + " --split valid --beam 1 --format json");
  REQUIRE_MESSAGE(valid_greedy.code == 0, valid_greedy.output);
  CHECK(nlohmann::json::parse(valid_greedy.output)["bleu"].get<double>() ==
        doctest::Approx(chosen["greedy_bleu"].get<double>()));
  auto valid_default = run("evaluate --checkpoint " + dir + " --split valid --format json");
  REQUIRE_MESSAGE(valid_default.code == 0, valid_default.output);
  const auto by_default = nlohmann::json::parse(valid_default.output);
  if (chosen["beam"] == 4) {
    CHECK(chosen["beam_bleu"].get<double>() >= chosen["greedy_bleu"].get<double>());
    CHECK(by_default["bleu"].get<double>() == doctest::Approx(chosen["beam_bleu"].get<double>()));
  } else {
    CHECK(chosen["beam_bleu"].get<double>() < chosen["greedy_bleu"].get<double>());
    CHECK(by_default["bleu"].get<double>() == doctest::Approx(chosen["greedy_bleu"].get<double>()));
  }
  auto greedy = run("evaluate --checkpoint " + dir + " --split test --beam 1 --format json");
  REQUIRE_MESSAGE(greedy.code == 0, greedy.output);
  CHECK(nlohmann::json::parse(greedy.output)["beam"] == 1);
  // --corpus scores any file: here the run's own test split, to the same BLEU.
  auto file =
      run("evaluate --checkpoint " + dir + " --corpus " + dir + "/split/test.tsv --format json");
  REQUIRE_MESSAGE(file.code == 0, file.output);
  CHECK(nlohmann::json::parse(file.output)["bleu"] == score["bleu"]);
  CHECK(nlohmann::json::parse(file.output)["sentences"] == score["sentences"]);
  // A run.json without options.limit (written by hand, or before the option existed) means no
  // limit, the command line's default: the whole training split (the limit cuts only that).
  nlohmann::json meta;
  {
    std::ifstream in(dir + "/run.json");
    meta = nlohmann::json::parse(in);
  }
  REQUIRE(meta["options"].contains("limit"));
  meta["options"].erase("limit");
  std::ofstream(dir + "/run.json") << meta.dump(2);
  auto no_limit = run("evaluate --checkpoint " + dir + " --split train --format json");
  REQUIRE_MESSAGE(no_limit.code == 0, no_limit.output);
  CHECK(nlohmann::json::parse(no_limit.output)["sentences"].get<int64_t>() ==
        lines_of(dir + "/split/train.tsv"));
  // export reads it the same way: every training pair goes to data.safetensors (one offset more
  // than the pairs).
  const std::string pkg = fresh_dir("corpus_eval_export");
  auto exported = run("export --checkpoint " + dir + " --to " + pkg);
  REQUIRE_MESSAGE(exported.code == 0, exported.output);
  const auto data_file = load_safetensors(pkg + "/data.safetensors").tensors;
  REQUIRE(data_file.count("source_offsets"));
  CHECK(data_file.at("source_offsets").numel() == lines_of(dir + "/split/train.tsv") + 1);
}

TEST_CASE("corpus runs: --valid/--test files, --reverse, --select, and checkpoint averaging") {
  const std::string dir = fresh_dir("corpus_files");
  const std::string tsv = write_corpus(dir + "_train.tsv", 200);
  const std::string valid = dir + "_valid.tsv", test = dir + "_test.tsv";
  std::ofstream(valid) << "w1 x2\tv1 y2\nnew words\tneue worte\n";
  std::ofstream(test) << "w3 x4\tv3 y4 z\n";
  auto r = run("train --corpus " + tsv + " --valid " + valid + " --test " + test +
               " --reverse --select loss --average 2 --epochs 3 --vocab-size 40 --out " + dir +
               " " + kQuick);
  REQUIRE_MESSAGE(r.code == 0, r.output);
  CHECK(r.output.find("reversed") != std::string::npos);
  CHECK(r.output.find("valid: 2 pairs from " + valid) != std::string::npos);
  // "v1 y2" (the reversed source) is in the training corpus, "neue worte" is not.
  CHECK(r.output.find("warning: 1 of their sources are also in the training corpus") !=
        std::string::npos);
  CHECK(r.output.find("train 200 / valid 2 / test 1 pairs") != std::string::npos);
  CHECK(r.output.find("best (validation loss)") != std::string::npos);
  CHECK(r.output.find("averaged the last 2 checkpoints") != std::string::npos);
  CHECK(r.output.find("test (1 pairs, beam 4)") != std::string::npos);
  // Reversed: the German-like column is the source, in the split and in run.json.
  std::ifstream split(dir + "/split/valid.tsv");
  std::string first;
  std::getline(split, first);
  CHECK(first == "v1 y2\tw1 x2");
  std::ifstream meta_file(dir + "/run.json");
  const auto meta = nlohmann::json::parse(meta_file);
  CHECK(meta["data"]["valid"] == valid);
  CHECK(meta["data"]["reverse"] == true);
  CHECK(meta["data"]["split"] == "source");
  CHECK(meta["options"]["select"] == "loss");
  std::ifstream config_file(dir + "/config.json");
  CHECK(nlohmann::json::parse(config_file)["initializer_range"] == 0.06);  // a corpus's init
  // The last two evaluated models are kept for averaging, no more.
  std::vector<std::string> kept;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/checkpoints"))
    kept.push_back(e.path().filename().string());
  CHECK(kept.size() == 2);
  // best/ is the model with the lowest validation loss of the history, or the average of the
  // last two when that validated lower: run.json says which.
  double lowest = 1e30;
  for (const auto& h : meta["history"]) lowest = std::min(lowest, h["valid_loss"].get<double>());
  const double best = meta["best"]["valid_loss"].get<double>();
  if (meta["best"].contains("averaged")) {
    CHECK(meta["best"]["averaged"] == 2);
    CHECK(best < lowest);
  } else {
    CHECK(best == lowest);
  }
  // `anatomy average` does the same on the folder, and evaluate reads --corpus files reversed
  // like the run's own.
  auto a = run("average --checkpoint " + dir + " --last 2");
  REQUIRE_MESSAGE(a.code == 0, a.output);
  CHECK(a.output.find("averaged 2 checkpoints") != std::string::npos);
  auto e = run("evaluate --checkpoint " + dir + " --corpus " + tsv + " --format json");
  REQUIRE_MESSAGE(e.code == 0, e.output);
  CHECK(nlohmann::json::parse(e.output)["sentences"] == 200);
  auto tok = run("tokenize --tokenizer " + dir + "/source_tokenizer --format json \"v1 y2\"");
  REQUIRE_MESSAGE(tok.code == 0, tok.output);
  CHECK(nlohmann::json::parse(tok.output)["tokens"].size() >= 2);

  // What cannot work says so.
  auto expect = [](const Result& res, const std::string& fragment) {
    CHECK_MESSAGE(res.code != 0, res.output);
    CHECK_MESSAGE(res.output.find(fragment) != std::string::npos, res.output);
  };
  const std::string other = fresh_dir("corpus_files_task");
  expect(run("train --task copy --valid " + valid + " --out " + other), "go with --corpus");
  expect(run("train --corpus " + tsv + " --select accuracy --out " + other), "--select");
  const std::string plain = fresh_dir("corpus_no_average");
  REQUIRE(run("train --corpus " + tsv + " --average 0 --epochs 1 --vocab-size 40 --out " + plain +
              " " + kQuick)
              .code == 0);
  expect(run("average --checkpoint " + plain), "train with --average N");
}

TEST_CASE("corpus runs share one vocabulary when both sides are written in one script") {
  auto config_of = [](const std::string& dir) {
    std::ifstream f(dir + "/config.json");
    return nlohmann::json::parse(f);
  };
  // Latin on both sides (w0 x1 -> v0 y1 z): one BPE vocabulary learned from both, and one token
  // table for the encoder, the decoder and the output layer.
  const std::string latin = fresh_dir("shared_vocab_latin");
  const std::string tsv = write_corpus(latin + "_pairs.tsv", 120);
  auto r =
      run("train --corpus " + tsv + " --epochs 1 --vocab-size 60 --out " + latin + " " + kQuick);
  REQUIRE_MESSAGE(r.code == 0, r.output);
  CHECK(r.output.find("shared source-target embeddings") != std::string::npos);
  CHECK(config_of(latin)["share_embeddings"] == true);
  CHECK(bytes(latin + "/source_tokenizer.vocab.txt") ==
        bytes(latin + "/target_tokenizer.vocab.txt"));
  // A target-only word is a source token too.
  auto tok = run("tokenize --tokenizer " + latin + "/source_tokenizer --format json z");
  REQUIRE_MESSAGE(tok.code == 0, tok.output);
  const auto shared_ids = nlohmann::json::parse(tok.output)["ids"];
  CHECK(shared_ids.size() == 1);  // "▁z", a whole word of the target side
  CHECK(shared_ids[0] != 1);
  // The same corpus with --shared-vocab no: two vocabularies, and "z" is not a source token.
  const std::string apart = fresh_dir("shared_vocab_no");
  REQUIRE(run("train --corpus " + tsv + " --shared-vocab no --epochs 1 --vocab-size 60 --out " +
              apart + " " + kQuick)
              .code == 0);
  CHECK(config_of(apart)["share_embeddings"] == false);
  auto unknown = run("tokenize --tokenizer " + apart + "/source_tokenizer --format json z");
  REQUIRE_MESSAGE(unknown.code == 0, unknown.output);
  // A trained vocabulary begins [PAD] [UNK] [BOS] [EOS]: id 1 is the unknown token.
  const auto unknown_ids = nlohmann::json::parse(unknown.output)["ids"];
  CHECK(std::find(unknown_ids.begin(), unknown_ids.end(), 1) != unknown_ids.end());

  // Latin into Cyrillic: separate vocabularies by default, shared when asked for.
  const std::string cyrillic = fresh_dir("shared_vocab_cyrillic");
  {
    std::ofstream f(cyrillic + "_pairs.tsv");
    for (int i = 0; i < 120; ++i)
      f << "w" << i % 7 << " x" << i % 5 << "\t\u0436" << i % 7 << " \u0434" << i % 5 << "\n";
  }
  REQUIRE(run("train --corpus " + cyrillic + "_pairs.tsv --epochs 1 --vocab-size 60 --out " +
              cyrillic + " " + kQuick)
              .code == 0);
  CHECK(config_of(cyrillic)["share_embeddings"] == false);
  const std::string asked = fresh_dir("shared_vocab_yes");
  REQUIRE(run("train --corpus " + cyrillic + "_pairs.tsv --shared-vocab yes --epochs 1 " +
              "--vocab-size 60 --out " + asked + " " + kQuick)
              .code == 0);
  CHECK(config_of(asked)["share_embeddings"] == true);

  // With no --preset, a corpus run's defaults: the size it chose and why, a linear decay, and
  // the last 5 evaluated models kept for averaging.
  const std::string plain = fresh_dir("corpus_defaults");
  auto p = run("train --corpus " + tsv + " --epochs 2 --threads 1 --vocab-size 60 --out " + plain);
  REQUIRE_MESSAGE(p.code == 0, p.output);
  CHECK(p.output.find("size: small, as there is no time budget to size it for") !=
        std::string::npos);
  CHECK(p.output.find("the last 5 evaluated models averaged at the end") != std::string::npos);
  std::ifstream plain_meta(plain + "/run.json");
  const auto meta = nlohmann::json::parse(plain_meta);
  CHECK(meta["size"]["name"] == "small");
  CHECK(meta["schedule"] == "linear");
  CHECK(meta["recipe"]["schedule"]["name"] == "linear");
  CHECK(meta["options"]["average"] == 5);
  CHECK(meta["options"]["lr"] == doctest::Approx(2e-3));  // the size's, not the preset's 1e-3
  CHECK(meta["options"]["max_tokens"] == 1536);           // the small preset's batches
  CHECK(config_of(plain)["hidden_size"] == 128);
  int64_t kept = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(plain + "/checkpoints"))
    ++kept;
  CHECK(kept == 2);

  // A task whose tokenizers are not BPE cannot share one, nor one with BPE on one side only
  // (numbers: words in, BPE out).
  for (const char* task : {"copy", "numbers"}) {
    auto bad = run(fmt::format("train --task {} --shared-vocab yes --out {}", task,
                               fresh_dir(std::string("shared_vocab_") + task)));
    CHECK(bad.code != 0);
    CHECK_MESSAGE(
        bad.output.find("--shared-vocab yes needs BPE on both sides") != std::string::npos,
        bad.output);
  }
}

// A run as long as its time budget plans its linear decay as it goes, to end where the budget
// does; run.json's recipe (what `anatomy export` hands on to PyTorch) then holds where the decay
// ended, about the run's last step, not the first guess (6 epochs of reverse). The pace is known
// after 10 steps, so the run needs 20 or more to re-plan: a machine too slow for that in 3 s
// gets a budget four times as long, and then again, before the test gives up.
TEST_CASE("a budget-long run's recipe keeps where its decay really ended") {
  int64_t steps = 0, total = 0;
  for (const int budget : {3, 12, 48}) {
    const std::string dir = fresh_dir("budget_decay");
    auto r =
        run(fmt::format("train --task reverse --time-budget {} --schedule linear --threads 1 "
                        "--warmup 2 --log-every 1 --out {} {}",
                        budget, dir, kQuick));
    REQUIRE_MESSAGE(r.code == 0, r.output);
    // Until the pace is known, the decay follows a first guess of the run's length (the task's
    // 6 epochs): after a warmup of 2 steps the rate is still near the tiny preset's peak of 2e-3,
    // not decayed at once as a guess of no steps at all would have it.
    const std::regex early(R"re(epoch 1, batch [3-9]/\d+  train loss [^\n]*?  lr ([\d.e+-]+))re");
    int64_t lines = 0;
    for (std::sregex_iterator it(r.output.begin(), r.output.end(), early), end; it != end; ++it) {
      ++lines;
      CHECK_MESSAGE(std::stod((*it)[1]) > 1e-3, it->str());
    }
    CHECK(lines == 7);
    const auto meta = nlohmann::json::parse(bytes(dir + "/run.json"));
    steps = meta["step"].get<int64_t>();
    total = meta["recipe"]["schedule"]["total_steps"].get<int64_t>();
    if (steps >= 20) break;
  }
  CAPTURE(steps);
  CAPTURE(total);
  REQUIRE(steps >= 20);
  CHECK(total >= steps - 1);
  CHECK(total <= steps + steps / 5 + 5);
}

// A corpus run without --preset gets the size its time budget buys for the corpus's target
// tokens per epoch, [EOS] included: counted here from the training split the run wrote and its
// target tokenizer. --epochs 1 keeps the run short; the size is still chosen for the budget.
TEST_CASE("a corpus run sizes itself for its target tokens, the end tokens included") {
  const std::string dir = fresh_dir("corpus_size");
  const std::string tsv = write_corpus(dir + "_pairs.tsv", 120);
  auto r = run("train --corpus " + tsv + " --epochs 1 --time-budget 100 --threads 1 " +
               "--vocab-size 40 --out " + dir);
  REQUIRE_MESSAGE(r.code == 0, r.output);
  const auto target = text::load_tokenizer(dir + "/target_tokenizer");
  int64_t tokens = 0;
  for (const auto& p : data::read_tsv(dir + "/split/train.tsv").pairs)
    tokens += static_cast<int64_t>(target->encode(p.target).size()) + 1;
  CHECK_MESSAGE(r.output.find("100 s on 1 thread, less ") != std::string::npos, r.output);
  CHECK_MESSAGE(
      r.output.find(fmt::format(" epochs of {} target tokens", tokens)) != std::string::npos,
      r.output);
}

// Measuring the sizes trains throwaway models before the run seeds its own: the model a run
// trains is the same, bit for bit, with a budget (which measures) as without one (which does
// not). Measuring on the run's own model, or after its seeding (dropout draws from the same
// generator), would change it.
TEST_CASE("measuring the sizes leaves the model a corpus run trains as it is without measuring") {
  const std::string measured = fresh_dir("corpus_measured"), plain = fresh_dir("corpus_plain");
  const std::string tsv = write_corpus(measured + "_pairs.tsv", 300);
  const std::string args = " --epochs 2 --threads 1 --vocab-size 40 --average 0 --corpus " + tsv;
  auto a = run("train --time-budget 1000 --out " + measured + args);
  REQUIRE_MESSAGE(a.code == 0, a.output);
  REQUIRE_MESSAGE(a.output.find("plan: small, ") != std::string::npos, a.output);
  auto b = run("train --out " + plain + args);
  REQUIRE_MESSAGE(b.code == 0, b.output);
  CHECK(b.output.find("plan: ") == std::string::npos);
  CHECK(!nlohmann::json::parse(bytes(plain + "/run.json")).contains("plan"));
  CHECK(bytes(measured + "/last/model.safetensors") == bytes(plain + "/last/model.safetensors"));
}

// A corpus run with a time budget measures what its size costs here and plans its epochs from
// that: run.json's `plan` says what it measured and planned, the log says it in a line, and the
// run trains about the epochs it planned. On two threads, so that the measuring trains
// data-parallel as the run does. The epochs are short (2,000 pairs of a few words), so measuring
// takes longer than the first epoch: the first evaluation's time shows whether the budget
// counted it. Its second of measuring can fall in a lull of what else the machine runs (the other
// tests), so a run that trains outside the bound gets two more tries before the test gives up; a
// plan off by a factor, as from a rate scaled by the threads, is off every time.
TEST_CASE("a corpus run plans its epochs from its own measured speed" *
          doctest::test_suite("end-to-end")) {
  const std::string dir = fresh_dir("corpus_plan");
  const std::string tsv = write_corpus(dir + "_pairs.tsv", 2000);
  const double budget = 12;
  CommandResult r;
  nlohmann::json meta;
  auto trained_of = [](const nlohmann::json& m) {
    return static_cast<double>(m["step"].get<int64_t>()) /
           static_cast<double>(std::max<int64_t>(m["plan"]["steps_per_epoch"].get<int64_t>(), 1));
  };
  for (int attempt = 0; attempt < 3; ++attempt) {
    std::filesystem::remove_all(dir);
    r = run(fmt::format("train --corpus {} --time-budget {} --threads 2 --vocab-size 40 --out {}",
                        tsv, budget, dir));
    REQUIRE_MESSAGE(r.code == 0, r.output);
    meta = nlohmann::json::parse(bytes(dir + "/run.json"));
    REQUIRE(meta.contains("plan"));
    const double ratio = trained_of(meta) / meta["plan"]["epochs"].get<double>();
    if (ratio >= 0.6 && ratio <= 1.6) break;
  }
  REQUIRE(meta.contains("plan"));
  const auto& plan = meta["plan"];
  CAPTURE(plan.dump());
  CHECK(plan["size"] == "small");  // 2000 pairs are too few target tokens for medium
  CHECK(plan["size"] == meta["preset"]);
  CHECK(plan["threads"] == 2);
  CHECK(plan["time_budget"] == budget);
  const double rate = plan["tokens_per_second"].get<double>();
  CHECK(rate > 0);
  CHECK(plan["measured"]["small"].get<double>() == rate);
  CHECK(plan["epoch_overhead"].get<double>() > 0);
  // Measuring took part of the budget, and run.json's seconds count it.
  const double measuring = plan["measure_seconds"].get<double>();
  CHECK(measuring > 0);
  CHECK(measuring < budget / 2);
  REQUIRE(!meta["history"].empty());
  CHECK(meta["history"][0]["seconds"].get<double>() > measuring);
  CHECK(meta["seconds"].get<double>() <= budget + 5);
  const int64_t steps_per_epoch = plan["steps_per_epoch"].get<int64_t>();
  REQUIRE(steps_per_epoch > 0);
  const double planned = plan["epochs"].get<double>();
  const double trained = trained_of(meta);
  CAPTURE(trained);
  REQUIRE(planned >= 3);
  CHECK(trained >= planned * 0.6);
  CHECK(trained <= planned * 1.6);
  const std::regex line(fmt::format(
      R"re(plan: small, [\d.]+k? tok/s measured on 2 threads, about {:.0f} epochs in 0:12\n)re",
      planned));
  CHECK_MESSAGE(std::regex_search(r.output, line), r.output);
  CHECK_MESSAGE(r.output.find(fmt::format("trained {:.1f} epochs; the plan was about {:.0f}",
                                          trained, planned)) != std::string::npos,
                r.output);
  // A resume (here with no budget left) keeps the plan, and says what it was.
  auto again = run(fmt::format("train --corpus {} --out {} --resume", tsv, dir));
  REQUIRE_MESSAGE(again.code == 0, again.output);
  CHECK_MESSAGE(again.output.find(fmt::format("plan (as the run first made it): small, about "
                                              "{:.0f} epochs",
                                              planned)) != std::string::npos,
                again.output);
  CHECK(nlohmann::json::parse(bytes(dir + "/run.json"))["plan"] == plan);
}

// A corpus run's positions leave room for inputs half as long again as the longest it trains or
// validates on, rounded up to a multiple of 32 and kept within 64 and 512. A target counts with
// its [BOS] (the decoder reads [BOS] and the target, and predicts the target and [EOS]). Five
// long pairs, of other sources each so that some land in training, have targets of 85 tokens:
// with its [BOS] one needs 86 positions, which round to 160 where 85 would round to 128. The
// lengths are counted here from the splits the run wrote and its tokenizers.
TEST_CASE("a corpus run's positions are 1.5 times its longest sentence, in steps of 32" *
          doctest::test_suite("end-to-end")) {
  const std::string dir = fresh_dir("corpus_positions");
  const std::string tsv = dir + "_pairs.tsv";
  {
    std::ofstream f(tsv);
    for (int i = 0; i < 100; ++i)
      f << "w" << i % 7 << " x" << i % 5 << " a" << i % 3 << "\tv" << i % 7 << " y" << i % 5
        << "\n";
    for (int k = 0; k < 5; ++k) {
      for (int w = 0; w < 60 + 4 * k; ++w) f << (w ? " " : "") << "w" << (w + k) % 7;
      f << "\t";
      for (int w = 0; w < 85; ++w) f << (w ? " " : "") << "v" << (w * 3 + k) % 7;
      f << "\n";
    }
  }
  auto r = run("train --corpus " + tsv + " --epochs 1 --threads 1 --vocab-size 40 --out " + dir +
               " " + kQuick);
  REQUIRE_MESSAGE(r.code == 0, r.output);
  const auto source = text::load_tokenizer(dir + "/source_tokenizer");
  const auto target = text::load_tokenizer(dir + "/target_tokenizer");
  int64_t longest_source = 0, longest_target = 0;
  for (const char* split : {"train", "valid"})
    for (const auto& p : data::read_tsv(dir + "/split/" + split + ".tsv").pairs) {
      longest_source =
          std::max(longest_source, static_cast<int64_t>(source->encode(p.source).size()));
      longest_target =
          std::max(longest_target, static_cast<int64_t>(target->encode(p.target).size()));
    }
  auto rounded = [](int64_t n) { return std::clamp<int64_t>((n * 3 / 2 + 31) / 32 * 32, 64, 512); };
  const int64_t longest = std::max(longest_source, longest_target + 1);
  REQUIRE(longest_target + 1 > longest_source);
  REQUIRE(rounded(longest_target + 1) != rounded(longest_target));  // the [BOS] decides
  std::ifstream config_file(dir + "/config.json");
  CHECK(nlohmann::json::parse(config_file)["max_position_embeddings"] == rounded(longest));
}

TEST_SUITE_END();
