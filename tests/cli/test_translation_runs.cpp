// A translation run end to end through the `anatomy` program: a model that learns, writes its
// folder and translates; bad input; the validation loss and BLEU it reports, checked against
// their definitions; how it chooses its decoding; translating within a memory limit and in batches.
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

TEST_CASE("a short training run learns, writes its folder, and translates") {
  const std::string dir = fresh_dir("reverse");
  auto r = run("train --task reverse --epochs 3 --no-early-stop --log-every 4 --average 1 --out " +
               dir + " " + kQuick);
  REQUIRE_MESSAGE(r.code == 0, r.output);
  // --average 1 averages nothing, and the log does not say it would.
  CHECK_MESSAGE(r.output.find("model selection: validation exact match\n") != std::string::npos,
                r.output);
  // A log (not a terminal) gets a line every 4 steps inside the epochs, and the label-smoothed
  // train loss comes with the plain NLL that the validation loss measures.
  CHECK_MESSAGE(r.output.find("epoch 1/3, batch 4/") != std::string::npos, r.output);
  CHECK_MESSAGE(r.output.find("epoch 1/3, batch 8/") != std::string::npos, r.output);
  CHECK_MESSAGE(r.output.find("epoch 3/3, batch ") != std::string::npos, r.output);
  CHECK(r.output.find("(nll ") != std::string::npos);
  // Each line's throughput is tokens over the seconds since the line before: a rate a CPU
  // reaches, never tokens over a vanishing time (a step of 1e-9 s gives 1e11 and more).
  const std::regex rate_re(R"(\((\d+(?:\.\d+)?)([kM]?) tok/s)");
  int rates = 0;
  for (std::sregex_iterator it(r.output.begin(), r.output.end(), rate_re), end; it != end; ++it) {
    const std::string unit = (*it)[2];
    const double rate = std::stod((*it)[1]) * (unit == "M" ? 1e6 : unit == "k" ? 1e3 : 1.0);
    CHECK_MESSAGE(rate > 0, it->str());
    CHECK_MESSAGE(rate < 1e9, it->str());
    ++rates;
  }
  CHECK(rates >= 3);
  // Every rate is one: the epochs' lines too, whose count runs from the epoch's start (a
  // negative count would print "(-1234 tok/s" and not match above).
  size_t shown = 0;
  for (size_t at = r.output.find(" tok/s"); at != std::string::npos;
       at = r.output.find(" tok/s", at + 1))
    ++shown;
  CHECK(static_cast<size_t>(rates) == shown);
  // A run that was neither stopped nor out of time says neither.
  CHECK_MESSAGE(r.output.find("interrupted") == std::string::npos, r.output);
  CHECK_MESSAGE(r.output.find("time budget of") == std::string::npos, r.output);
  for (const char* f :
       {"config.json", "run.json", "source_tokenizer.json", "target_tokenizer.vocab.txt",
        "best/model.safetensors", "last/model.safetensors", "last/training.safetensors", "loss.csv",
        "loss.svg"})
    CHECK_MESSAGE(std::filesystem::exists(dir + "/" + f), f);
  std::ifstream meta_file(dir + "/run.json");
  const auto meta = nlohmann::json::parse(meta_file);
  const auto& h = meta["history"];
  REQUIRE(h.size() == 3);
  CHECK(h[2]["train_loss"].get<double>() < h[0]["train_loss"].get<double>());  // the loss falls
  CHECK(h[2]["valid_loss"].get<double>() < h[0]["valid_loss"].get<double>());
  // Smoothing 0.1 spreads probability over every token: the smoothed loss sits above the NLL.
  CHECK(h[2]["train_nll"].get<double>() < h[2]["train_loss"].get<double>());
  CHECK(bytes(dir + "/loss.svg").find("<svg") == 0);
  // The log names every architecture choice, not only the sizes.
  for (const char* choice : {"norm layer_norm (pre-LN", "positions absolute",
                             "feed-forward feed_forward", "attention fused", "dropout 0.1"})
    CHECK_MESSAGE(r.output.find(choice) != std::string::npos, choice);
  // run.json's options are the values the run used (reverse's preset is tiny: lr 2e-3, batches
  // of 512 tokens), the same the recipe spelled out for PyTorch; never 0 for "the preset's".
  const auto& used = meta["options"];
  CHECK(used["lr"].get<double>() == 2e-3);
  CHECK(used["max_tokens"].get<int64_t>() == 512);
  CHECK(used["warmup"].get<int64_t>() > 0);
  CHECK(used["warmup"] == meta["recipe"]["schedule"]["warmup"]);
  CHECK(used["lr"] == meta["recipe"]["optimizer"]["lr"]);
  // The schedule, from the steps an epoch took: warmup over half the first epoch, between 20 and
  // the tiny preset's 400 steps, then a linear decay (a symbol task's) ending at the third
  // epoch's last step.
  const int64_t per_epoch = h[0]["step"].get<int64_t>();
  CHECK(h[2]["step"].get<int64_t>() == 3 * per_epoch);
  const auto& schedule = meta["recipe"]["schedule"];
  CHECK(schedule["name"] == "linear");
  CHECK(schedule["warmup"].get<int64_t>() == std::clamp<int64_t>(per_epoch / 2, 20, 400));
  CHECK(schedule["total_steps"].get<int64_t>() ==
        std::max(schedule["warmup"].get<int64_t>(), 3 * per_epoch));
  CHECK(meta["epochs"] == 3);
  // config.json holds what a translator reads: the decoder's layers as a number, no
  // classification head.
  const auto config = nlohmann::json::parse(bytes(dir + "/config.json"));
  CHECK(config["num_decoder_layers"].get<int64_t>() == 2);
  CHECK(config["num_decoder_layers"] == config["num_hidden_layers"]);
  CHECK_FALSE(config.contains("num_labels"));
  CHECK_FALSE(config.contains("add_pooling_layer"));
  // loss.csv: its columns say what they hold, and its rows go by step, one row per step.
  {
    std::istringstream csv(bytes(dir + "/loss.csv"));
    std::string line;
    std::getline(csv, line);
    CHECK(line == "step,train_loss,lr,valid_loss,valid_bleu,valid_exact_match");
    int64_t last = -1, evaluations = 0;
    while (std::getline(csv, line)) {
      const int64_t step = std::stoll(line.substr(0, line.find(',')));
      CHECK_MESSAGE(step > last, line);
      last = step;
      evaluations += std::count(line.begin(), line.end(), ',') == 5 && line.back() != ',';
    }
    CHECK(evaluations == 3);  // one row per epoch's evaluation, with its BLEU and exact match
  }
  auto t = run("translate --checkpoint " + dir + " \"a b c d\"");
  CHECK_MESSAGE(t.code == 0, t.output);
  auto e = run("evaluate --checkpoint " + dir + " --split valid --format json");
  REQUIRE_MESSAGE(e.code == 0, e.output);
  const auto j = nlohmann::json::parse(e.output);
  CHECK(j.contains("bleu"));
  CHECK(j["sentences"].get<int>() == 500);
  CHECK(j["split"] == "valid");  // what was scored, by name
  // The run's best exact match is the share of the 500 validation sentences that evaluate,
  // another path through the same pairs, finds translated exactly by the best model.
  CHECK(meta["best"]["exact_match"].get<double>() ==
        doctest::Approx(j["exact_match"].get<double>()));
  CHECK(j["beam"] == 1);  // a task's run decodes greedily unless told otherwise
  auto et = run("evaluate --checkpoint " + dir + " --split valid --beam 1");
  CHECK_MESSAGE(et.output.find("valid split (500 sentences, greedy)") == 0, et.output);
  // beam size 1 is greedy
  auto g = run("translate --checkpoint " + dir + " \"c d e f g\" \"t s r\"");
  auto b = run("translate --checkpoint " + dir + " --beam 1 \"c d e f g\" \"t s r\"");
  CHECK(g.output == b.output);
  CHECK(run("translate --checkpoint " + dir + " --beam 4 \"c d e f g\"").code == 0);
  // --file: one translation per line, the same as the arguments.
  std::ofstream(dir + "/inputs.txt") << "c d e f g\nt s r\n";
  auto f = run("translate --checkpoint " + dir + " --beam 1 --file " + dir + "/inputs.txt");
  REQUIRE_MESSAGE(f.code == 0, f.output);
  CHECK(f.output == b.output);
  // Exact match counts the sentences translated exactly: here two of three (with one of two,
  // counting the misses instead would give the same 50%).
  const std::string first = b.output.substr(0, b.output.find('\n'));
  std::ofstream(dir + "/exact.tsv")
      << "c d e f g\t" << first << "\nt s r\tq q q q q q\nc d e f g\t" << first << "\n";
  auto em = run("evaluate --checkpoint " + dir + " --corpus " + dir +
                "/exact.tsv --beam 1 --format json");
  REQUIRE_MESSAGE(em.code == 0, em.output);
  const auto em_json = nlohmann::json::parse(em.output);
  CHECK(em_json["sentences"].get<int>() == 3);
  CHECK(em_json["corpus"] == dir + "/exact.tsv");
  CHECK_FALSE(em_json.contains("split"));
  CHECK(em_json["exact_match"].get<double>() == doctest::Approx(200.0 / 3).epsilon(1e-9));
  // The attention page of the trained model: a self-contained HTML file with the tokens.
  auto a = run("attention --checkpoint " + dir + " --out " + dir + "/attention.html \"c d e\"");
  REQUIRE_MESSAGE(a.code == 0, a.output);
  // The page draws the translation `translate` gives, with the same search: greedy here (a
  // task's default), and beam 4 when asked, the same as translate --beam 4.
  for (const char* beam : {"1", "4"}) {
    CAPTURE(beam);
    const auto drawn = run("attention --checkpoint " + dir + " --beam " + beam + " --out " + dir +
                           "/beam.html \"c d e f g h\"");
    REQUIRE_MESSAGE(drawn.code == 0, drawn.output);
    const auto said = run("translate --checkpoint " + dir + " --beam " + beam + " \"c d e f g h\"");
    const std::string translation = said.output.substr(0, said.output.find('\n'));
    CHECK_MESSAGE(drawn.output.find("): " + translation + "\n") != std::string::npos, drawn.output);
    CHECK(drawn.output.find(std::string(beam) == "1" ? "(greedy)" : "(beam 4)") !=
          std::string::npos);
  }
  const std::string page = bytes(dir + "/attention.html");
  CHECK(page.find("<html") != std::string::npos);
  CHECK(page.find("<script") != std::string::npos);
  for (const char* token : {"\"▁c\"", "\"▁d\"", "\"▁e\""})  // the input, as the model reads it
    CHECK_MESSAGE(page.find(token) != std::string::npos, token);
  {
    // The decoder's rows are labelled with the token each predicts: the translation, then the
    // end token; its self-attention is causal (the neuron view shows keys up to the query).
    std::string json = page.substr(page.find("application/json\">") + 18);
    json = json.substr(0, json.find("</script>"));
    for (size_t p = 0; (p = json.find("<\\/", p)) != std::string::npos;) json.erase(p + 1, 1);
    const auto sections = nlohmann::json::parse(json)["sections"];
    REQUIRE(sections.size() == 3);
    const auto translated = sections[1]["left"];  // [BOS], then the translation's tokens
    std::vector<std::string> next(translated.begin() + 1, translated.end());
    next.push_back("[EOS]");
    CHECK(sections[1]["predicts"] == nlohmann::json(next));
    CHECK(sections[2]["predicts"] == nlohmann::json(next));
    CHECK(sections[0]["predicts"].empty());
    CHECK(sections[1]["causal"] == true);
    CHECK(sections[0]["causal"] == false);
    CHECK(sections[2]["causal"] == false);
    for (const auto& sec : sections) {  // every layer's q and k: [heads, tokens, 16]
      REQUIRE(sec["queries"].size() == 2);
      CHECK(sec["queries"][1].size() == 4);
      CHECK(sec["queries"][1][0].size() == sec["left"].size());
      CHECK(sec["keys"][1][0].size() == sec["right"].size());
      CHECK(sec["keys"][1][0][0].size() == 16);
    }
  }
  // The page's translation is the one `translate` gives (greedy, the same length limit).
  const auto greedy_cde = run("translate --checkpoint " + dir + " --beam 1 \"c d e\"");
  CHECK_MESSAGE(a.output.find("translation (greedy): " + greedy_cde.output) != std::string::npos,
                a.output << " / " << greedy_cde.output);
  // --svg without --layer/--head: the last of the preset's two layers, head 0; --layer 0 is the
  // first layer, not "the last".
  for (const auto& flags_title : std::vector<std::pair<std::string, std::string>>{
           {"", "layer 1, head 0"}, {"--layer 0", "layer 0, head 0"}}) {
    const std::string flags = flags_title.first;
    auto s = run("attention --checkpoint " + dir + " --out " + dir + "/s.html --svg " + dir +
                 "/s.svg " + flags + " \"c d e\"");
    REQUIRE_MESSAGE(s.code == 0, s.output);
    CHECK_MESSAGE(bytes(dir + "/s.svg").find(flags_title.second) != std::string::npos, flags);
  }
  // Windows line ends in --file translate as the same lines.
  std::ofstream(dir + "/crlf.txt") << "c d e f g\r\nt s r\r\n";
  auto crlf = run("translate --checkpoint " + dir + " --beam 1 --file " + dir + "/crlf.txt");
  CHECK(crlf.output == b.output);
  // The unknown-token warning is for inputs mostly unknown: half is not; a long input is cut.
  auto half = run("translate --checkpoint " + dir + " \"X Y a b\"");
  CHECK_MESSAGE(half.output.find("unknown") == std::string::npos, half.output);
  auto most = run("translate --checkpoint " + dir + " \"X Y Z W V U T S R Q P O N M L K J a\"");
  CHECK_MESSAGE(most.output.find("17 of the 18 tokens of \"X Y Z W V U T S R Q P O N M L K J "
                                 "a\" are") != std::string::npos,
                most.output);
  auto long_input = run("translate --checkpoint " + dir +
                        " \"X Y Z W V U T S R Q P O N M L K J I H G F E D C B A\"");
  CHECK_MESSAGE(
      long_input.output.find("tokens of \"X Y Z W V U T S R Q P O N M L K J I H G ...\"") !=
          std::string::npos,
      long_input.output);
}

TEST_CASE("training and translating: bad input gets a clear message and a non-zero exit") {
  const std::string dir = fresh_dir("bad");
  auto expect = [](const Result& r, const std::string& fragment) {
    CHECK_MESSAGE(r.code != 0, r.output);
    CHECK_MESSAGE(r.output.find(fragment) != std::string::npos, r.output);
  };
  expect(run("train --task klingon --out " + dir), "unknown task 'klingon'");
  expect(run("train --corpus /nonexistent.tsv --out " + dir), "cannot open");
  expect(run("train --task lm --text /nonexistent.txt --out " + dir), "cannot open the text");
  CHECK_FALSE(std::filesystem::exists(dir));  // nothing is created for a run that cannot start
  const std::string short_text = dir + "_short.txt";
  std::ofstream(short_text) << "To be, or not to be\n";
  expect(run("train --task lm --text " + short_text + " --out " + dir),
         "too short for blocks of 64 characters");
  CHECK_FALSE(std::filesystem::exists(dir));  // found before the tokenizer and config are written
  const std::string empty = dir + "_empty.tsv";
  std::ofstream(empty) << "\n";
  expect(run("train --corpus " + empty + " --out " + dir), "no usable pairs");
  const std::string malformed = dir + "_bad.tsv";
  std::ofstream(malformed) << "a\tb\nno tab\n";
  expect(run("train --corpus " + malformed + " --out " + dir), "line 2 has no tab");
  // A folder that cannot be made, whoever runs the test (root writes past any permission): its
  // parent is a file.
  const std::string a_file = dir + "_a_file";
  std::ofstream(a_file) << "x";
  expect(run("train --task copy --out " + a_file + "/run"), "output folder");
  expect(run("train --task lm --out " + dir), "needs --text");
  expect(run("translate --checkpoint /nonexistent \"x\""), "not a training run folder");
  // A finished run refuses to be overwritten, and refuses a different task on resume.
  const std::string done = fresh_dir("done");
  REQUIRE(run("train --task copy --epochs 1 --out " + done + " " + kQuick).code == 0);
  expect(run("train --task copy --out " + done), "already holds a training run");
  expect(run("train --task reverse --resume --out " + done), "was trained on 'copy'");
  std::string long_input;
  for (int i = 0; i < 200; ++i) long_input += "a ";
  expect(run("translate --checkpoint " + done + " \"" + long_input + "\""),
         "this model reads at most");
  // Input the model cannot read is translated, with a warning on stderr.
  auto unknown = run("translate --checkpoint " + done + " \"X Y Z\"");
  CHECK(unknown.code == 0);
  CHECK_MESSAGE(
      unknown.output.find("3 of the 3 tokens of \"X Y Z\" are unknown") != std::string::npos,
      unknown.output);
  CHECK(run("--version").output == "anatomy 0.1.0\n");
}

TEST_SUITE_END();
// The validation loss a run reports is the negative log-likelihood per target token, the end
// token included and padding not: computed here pair by pair, without padding or batches, from
// the model's logits with a log-softmax written out. Dividing by sentences or batches, leaving
// out the end token or counting padding would each give another number.
TEST_CASE("the validation loss is the NLL per target token, as computed pair by pair" *
          doctest::test_suite("end-to-end")) {
  const std::string dir = fresh_dir("valid_nll");
  const std::string tsv = write_corpus(dir + "_train.tsv", 200);
  auto r = run("train --corpus " + tsv + " --epochs 1 --vocab-size 40 --out " + dir + " " + kQuick);
  REQUIRE_MESSAGE(r.code == 0, r.output);
  training::Translator tr = training::Translator::load(dir);
  const auto pairs = data::read_tsv(dir + "/split/valid.tsv").pairs;
  REQUIRE(pairs.size() >= 2);
  const training::Encoded valid = training::encode(pairs, *tr.source, *tr.target);
  const training::Metrics m = training::validate(tr, valid, 1536);

  NoGradGuard no_grad;
  tr.model->eval();
  double nll = 0;
  int64_t tokens = 0;
  for (size_t i = 0; i < valid.src.size(); ++i) {
    std::vector<int64_t> in{tr.bos}, out;
    for (int64_t id : valid.tgt[i]) {
      in.push_back(id);
      out.push_back(id);
    }
    out.push_back(tr.eos);
    const auto S = static_cast<int64_t>(valid.src[i].size()), T = static_cast<int64_t>(in.size());
    const Tensor logits =
        tr.model->forward(from_vector(valid.src[i], {1, S}), from_vector(in, {1, T})).contiguous();
    const int64_t V = logits.size(-1);
    const float* p = logits.data();
    for (int64_t t = 0; t < T; ++t) {
      const float* row = p + t * V;
      double most = row[0], sum = 0;
      for (int64_t v = 1; v < V; ++v) most = std::max<double>(most, row[v]);
      for (int64_t v = 0; v < V; ++v) sum += std::exp(row[v] - most);
      nll += most + std::log(sum) - row[out[static_cast<size_t>(t)]];
      ++tokens;
    }
  }
  CHECK(m["valid_loss"].get<double>() ==
        doctest::Approx(nll / static_cast<double>(tokens)).epsilon(1e-5));
  // Exact match is the share of sentences translated exactly as their reference: four sources
  // whose references are the model's own translations for the first three give 75%.
  REQUIRE(pairs.size() >= 4);
  std::vector<data::Pair> rigged(pairs.begin(), pairs.begin() + 4);
  std::vector<std::string> four;
  for (const auto& p : rigged) four.push_back(p.source);
  const auto own = tr.translate(four);
  for (size_t i = 0; i < 3; ++i) rigged[i].target = own[i];
  rigged[3].target = own[3].empty() ? "a" : own[3] + " " + own[3];  // anything else
  const auto exact = training::validate(tr, training::encode(rigged, *tr.source, *tr.target), 1536);
  CHECK(exact["exact_match"].get<double>() == doctest::Approx(75.0));
}

// The validation BLEU a run reports and keeps in run.json is `anatomy bleu` on the model's
// translations of the validation sources against their references. A model halfway trained, so
// that the score is neither 0 nor 100 and a wrong reference, order or tokenization shows.
TEST_CASE("the validation BLEU equals anatomy bleu on the same translations" *
          doctest::test_suite("end-to-end")) {
  const std::string dir = fresh_dir("valid_bleu");
  const std::string tsv = dir + "_train.tsv";
  {
    std::ofstream f(tsv);
    for (int i = 0; i < 300; ++i)
      f << "w" << i % 7 << " x" << i % 5 << " a" << i % 3 << " b" << i % 4 << " c" << i % 6 << "\tv"
        << i % 7 << " y" << i % 5 << " p" << i % 3 << " q" << i % 4 << " r" << i % 6 << "\n";
  }
  auto r = run("train --corpus " + tsv + " --epochs 9 --lr 0.005 --no-early-stop --vocab-size 60 " +
               "--out " + dir + " " + kQuick);
  REQUIRE_MESSAGE(r.code == 0, r.output);
  training::Translator tr = training::Translator::load(dir);
  const auto pairs = data::read_tsv(dir + "/split/valid.tsv").pairs;
  const training::Encoded valid = training::encode(pairs, *tr.source, *tr.target);
  const double reported = training::validate(tr, valid, 1536)["bleu"].get<double>();
  REQUIRE(reported > 0);
  REQUIRE(reported < 100);
  // run.json's best is the best checkpoint's score.
  const auto meta = nlohmann::json::parse(bytes(dir + "/run.json"));
  CHECK(meta["best"]["bleu"].get<double>() == doctest::Approx(reported).epsilon(1e-9));
  {
    std::ofstream hyps(dir + "/hyps.txt"), refs(dir + "/refs.txt");
    for (const auto& h : tr.translate(valid.sources)) hyps << h << "\n";
    for (const auto& p : pairs) refs << p.target << "\n";
  }
  auto b = run("bleu --format json " + dir + "/hyps.txt " + dir + "/refs.txt");
  REQUIRE_MESSAGE(b.code == 0, b.output);
  CHECK(nlohmann::json::parse(b.output)["score"].get<double>() ==
        doctest::Approx(reported).epsilon(1e-9));
}

// How a run chooses its decoding: beam 4 at the first length penalty that scores best, when that
// is at least greedy's BLEU, else greedy. The references are rigged from the model's own outputs
// so that each outcome is known: greedy's outputs as references give greedy 100, which beam
// outputs that differ cannot reach; beam 4's outputs at one penalty give that penalty 100. A
// model six short epochs into learning to copy is unsure enough that its beam searches find
// other outputs than greedy's; one of fresh weights writes nothing at all, whatever the
// decoding, so every candidate ties.
TEST_CASE("choose_decoding: beam 4 at its first best penalty, when at least greedy's BLEU" *
          doctest::test_suite("end-to-end")) {
  const std::string dir = fresh_dir("choose_decoding");
  // Two threads whatever the environment says: the run is deterministic for a thread count, and
  // the premises below are those of this one model.
  REQUIRE(run("train --task copy --epochs 6 --threads 2 --out " + dir + " " + kQuick).code == 0);
  training::Translator tr = training::Translator::load(dir);
  const std::vector<std::string> sources = {"a b c d",   "e f g h i",   "j k l m n o",
                                            "p q r s t", "a c e g i k", "b d f h"};
  auto pairs_to = [&](const std::vector<std::string>& refs) {
    std::vector<data::Pair> pairs;
    for (size_t i = 0; i < sources.size(); ++i) pairs.push_back({sources[i], refs[i]});
    return pairs;
  };
  auto bleu = [](const std::vector<std::string>& hyps, const std::vector<std::string>& refs) {
    return data::corpus_bleu(hyps, {refs}).score;
  };
  const std::vector<float> penalties = {0.6f, 1.0f, 2.0f};
  const auto greedy = tr.translate(sources, 1, 0.6f);
  std::vector<std::vector<std::string>> beams;
  for (const float p : penalties) beams.push_back(tr.translate(sources, 4, p));
  // The first penalty whose beam outputs score best against refs, and that score.
  auto best_beam = [&](const std::vector<std::string>& refs) {
    size_t best = 0;
    for (size_t i = 1; i < beams.size(); ++i)
      if (bleu(beams[i], refs) > bleu(beams[best], refs)) best = i;
    return std::pair{penalties[best], bleu(beams[best], refs)};
  };

  // Greedy's own outputs as references: greedy, with the best beam's penalty kept for --beam.
  for (const auto& b : beams) REQUIRE(bleu(b, greedy) < 100);
  const auto by_greedy = training::choose_decoding(tr, pairs_to(greedy), penalties);
  CHECK(by_greedy.beam == 1);
  CHECK(by_greedy.greedy_bleu == doctest::Approx(100));
  CHECK(by_greedy.length_penalty == best_beam(greedy).first);
  CHECK(by_greedy.beam_bleu == doctest::Approx(best_beam(greedy).second));
  // Every candidate, in the order tried: greedy, then beam 4 at each penalty.
  REQUIRE(by_greedy.tried.size() == 4);
  CHECK(std::get<0>(by_greedy.tried[0]) == 1);
  for (size_t i = 0; i < penalties.size(); ++i) {
    CHECK(std::get<0>(by_greedy.tried[i + 1]) == 4);
    CHECK(std::get<1>(by_greedy.tried[i + 1]) == penalties[i]);
    CHECK(std::get<2>(by_greedy.tried[i + 1]) == doctest::Approx(bleu(beams[i], greedy)));
  }

  // Beam 4's outputs at the last penalty as references: beam 4.
  REQUIRE(bleu(greedy, beams.back()) < 100);
  const auto by_beam = training::choose_decoding(tr, pairs_to(beams.back()), penalties);
  CHECK(by_beam.beam == 4);
  CHECK(by_beam.beam_bleu == doctest::Approx(100));
  CHECK(by_beam.length_penalty == best_beam(beams.back()).first);
  CHECK(by_beam.greedy_bleu == doctest::Approx(bleu(greedy, beams.back())));

  // No penalties to try: greedy, and a beam BLEU of 0 rather than the -1 it starts from.
  const auto alone = training::choose_decoding(tr, pairs_to(greedy), {});
  CHECK(alone.beam == 1);
  CHECK(alone.length_penalty == 0.6f);
  CHECK(alone.beam_bleu == 0);
  CHECK(alone.tried.size() == 1);

  // A tie goes to beam 4, at the first of the penalties that tie.
  manual_seed(7);
  tr.model = std::make_shared<models::Seq2SeqTransformer>(tr.config);
  tr.model->eval();
  REQUIRE(tr.translate(sources, 1, 0.6f) == std::vector<std::string>(sources.size()));
  for (const float p : penalties)
    REQUIRE(tr.translate(sources, 4, p) == std::vector<std::string>(sources.size()));
  const auto tie = training::choose_decoding(tr, pairs_to(sources), penalties);
  CHECK(tie.beam == 4);
  CHECK(tie.length_penalty == penalties[0]);
  CHECK(tie.beam_bleu == tie.greedy_bleu);
}

// Decoding is refused when its estimate (the weights, and the cached keys and values of every
// hypothesis at once) is more than the memory limit; a limit of exactly the estimate is enough,
// as for training's check.
TEST_CASE("translate decodes within a memory limit of exactly its estimate, not one byte less" *
          doctest::test_suite("end-to-end")) {
  const std::string dir = fresh_dir("translate_memory");
  REQUIRE(run("train --task copy --epochs 1 --out " + dir + " " + kQuick).code == 0);
  const training::Translator tr = training::Translator::load(dir);
  const std::string text = "a b c";
  const int64_t beam = 3, max_length = 9;
  const double estimate =
      4 * tr.config.parameter_count() +
      tr.config.decoding_bytes(beam, static_cast<int64_t>(tr.encode_source(text).size()),
                               max_length);
  struct RestoreLimit {
    ~RestoreLimit() { models::TransformerConfig::set_memory_limit(0); }
  } restore;
  models::TransformerConfig::set_memory_limit(estimate);
  CHECK(tr.translate({text}, beam, 0.6f, max_length).size() == 1);
  models::TransformerConfig::set_memory_limit(estimate - 1);
  check_error([&] { tr.translate({text}, beam, 0.6f, max_length); },
              {"translate: about 0.0 GB to decode 3 hypotheses at once (beam 3) of up to 9 tokens",
               "more than the 0.0 GB this process may use"});
  // A beam of 0 decodes greedily, as a beam of 1 does: one hypothesis a sentence, estimated so.
  const double greedy =
      4 * tr.config.parameter_count() +
      tr.config.decoding_bytes(1, static_cast<int64_t>(tr.encode_source(text).size()), max_length);
  models::TransformerConfig::set_memory_limit(greedy);
  CHECK(tr.translate({text}, 0, 0.6f, max_length) == tr.translate({text}, 1, 0.6f, max_length));
  models::TransformerConfig::set_memory_limit(greedy - 1);
  check_error([&] { tr.translate({text}, 0, 0.6f, max_length); },
              {"to decode 1 hypotheses at once (beam 0)"});
  // What the estimate counts. A beam of 3 decodes 256 / 3 = 85 sentences at once: 255
  // hypotheses. A sentence's output may be twice its source and 10 tokens longer, within the
  // model's positions; the longest source (here in the middle of 100) sets both lengths.
  models::TransformerConfig::set_memory_limit(1);
  std::vector<std::string> texts(100, "a b");
  texts[50] = "a b c d e f g";
  const auto longest = static_cast<int64_t>(tr.encode_source(texts[50]).size());
  REQUIRE(longest >= 7);
  const int64_t P = tr.config.max_position_embeddings;
  REQUIRE(2 * longest + 10 < P - 1);
  check_error([&] { tr.translate(texts, 3); },
              {fmt::format("to decode 255 hypotheses at once (beam 3) of up to {} tokens from "
                           "sources of up to {}",
                           2 * longest + 10, longest)});
  // A source of as many tokens as the model has positions is read, its output cut to the last
  // position; one token more is refused, the text shown by its first 40 characters.
  std::string at_limit = "a";
  while (static_cast<int64_t>(tr.encode_source(at_limit).size()) < P) at_limit += " a";
  REQUIRE(static_cast<int64_t>(tr.encode_source(at_limit).size()) == P);
  check_error([&] { tr.translate({at_limit}); },
              {fmt::format("of up to {} tokens from sources of up to {}", P - 1, P)});
  const std::string over = at_limit + " a";
  // No sentences decode to none, whatever the limit: there is nothing to hold.
  CHECK(tr.translate({}).empty());
  check_error([&] { (void)tr.encode_source(over); },
              {fmt::format("the input \"{}...\" is {} tokens long; this model reads at most {}",
                           over.substr(0, 40), P + 1, P)});
}

// Greedy decoding takes 256 sentences a batch: 512 make two full batches and nothing after them,
// and each sentence decodes as it does alone. No sentences decode to none.
TEST_CASE("translate: two full batches of sentences, and none" *
          doctest::test_suite("end-to-end")) {
  const std::string dir = fresh_dir("translate_batches");
  REQUIRE(run("train --task copy --epochs 1 --out " + dir + " " + kQuick).code == 0);
  const training::Translator tr = training::Translator::load(dir);
  CHECK(tr.translate({}).empty());
  const std::vector<std::string> words = {"a", "b", "c", "d", "e"};
  std::vector<std::string> texts;
  for (int i = 0; i < 512; ++i)
    texts.push_back(words[i % 5] + " " + words[(i / 5) % 5] + (i % 3 ? " " + words[i % 4] : ""));
  const auto together = tr.translate(texts);
  REQUIRE(together.size() == 512);
  for (const size_t i : {size_t{0}, size_t{255}, size_t{256}, size_t{511}})
    CHECK(together[i] == tr.translate({texts[i]})[0]);
}
