// The trainer end to end through the `anatomy` program, on small runs: a model that learns,
// exact resume, Ctrl-C, the time budget, and bad input.
#include <algorithm>
#include <cmath>
#include <regex>
#include <sstream>

#include "data/corpus.hpp"
#include "training/training.hpp"
#include "training/translation_data.hpp"
#include "training_fixtures.hpp"

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

TEST_CASE("the majority task trains an encoder with a classification head") {
  const std::string dir = fresh_dir("majority");
  auto r = run("train --task majority --epochs 2 --out " + dir);
  REQUIRE_MESSAGE(r.code == 0, r.output);
  // Its 12,000 sequences: the first 1,000 held out, every other one trained on.
  CHECK_MESSAGE(r.output.find("(11000 train, 1000 valid)") != std::string::npos, r.output);
  std::ifstream meta_file(dir + "/run.json");
  const auto meta = nlohmann::json::parse(meta_file);
  REQUIRE(meta["history"].size() == 2);
  // Well above chance (three classes: 33%) after two epochs.
  CHECK(meta["best"]["accuracy"].get<double>() > 60.0);
  // run.json records the rate it trained at (the default, 1e-3), which --resume takes back.
  CHECK(meta["options"]["lr"].get<double>() == 1e-3);
  // The folder loads as a TextClassifier. Its accuracy on no texts is 0%, not 0 / 0.
  const auto classifier = training::TextClassifier::load(dir);
  const double none = classifier.accuracy({}, {});
  CHECK(none == 0.0);
  // Its validation loss, which the hooks compute 64 texts at a time, is the mean cross-entropy
  // over every held-out text: here 130 (two batches of 64 and one of 2), against each text's
  // -log softmax worked out from one forward pass over all of them.
  training::LabelledTexts valid, train{{"a b"}, {0}};
  const std::vector<std::string> letters = {"a", "b", "c", "d", "e", "f", "g", "h"};
  for (int i = 0; i < 130; ++i) {
    std::string text;
    for (int j = 0; j <= i % 7; ++j) text += (j ? " " : "") + letters[(i * 5 + j * 3) % 8];
    valid.texts.push_back(text);
    valid.labels.push_back(i % 3);
  }
  nn::SGD unused(classifier.model->parameters(), {.lr = 0.0});
  training::Trainer trainer(*classifier.model, unused, nullptr, {.epochs = 1, .quiet = true});
  training::set_classifier_hooks(trainer, classifier, train, valid, 0, 32);
  const double hooks_loss = trainer.evaluate(false)["valid_loss"].get<double>();
  classifier.model->eval();
  auto [ids, mask] = classifier.batch(valid.texts);
  const Tensor logits = classifier.model->forward(ids, mask);
  REQUIRE(logits.shape() == Shape{130, 3});
  const std::vector<float> flat = logits.to_vector();
  double expected = 0;
  for (size_t i = 0; i < 130; ++i) {
    const std::vector<double> row(flat.begin() + 3 * i, flat.begin() + 3 * i + 3);
    const double top = *std::max_element(row.begin(), row.end());
    double total = 0;
    for (double v : row) total += std::exp(v - top);
    expected += top + std::log(total) - row[valid.labels[i]];
  }
  expected /= 130;
  CHECK(hooks_loss == doctest::Approx(expected).epsilon(1e-5));
  // Its accuracy, which classify() computes 128 texts at a time, is the share of texts whose
  // largest logit is their label's, in the same forward pass.
  int64_t right = 0;
  std::vector<int64_t> predicted;
  for (size_t i = 0; i < 130; ++i) {
    const auto row = flat.begin() + 3 * static_cast<int64_t>(i);
    predicted.push_back(std::max_element(row, row + 3) - row);
    right += predicted.back() == valid.labels[i];
  }
  CHECK(classifier.classify(valid.texts) == predicted);
  CHECK(trainer.evaluate(false)["accuracy"].get<double>() ==
        doctest::Approx(100.0 * static_cast<double>(right) / 130));
  // An epoch of the 130 texts in batches of 32: five batches, the last of 2 texts, each text once
  // in some order, so the batches' losses weighted by their texts average to the whole's.
  training::Trainer batches(*classifier.model, unused, nullptr, {.epochs = 1, .quiet = true});
  training::set_classifier_hooks(batches, classifier, valid, valid, 7, 32);
  REQUIRE(batches.batches(0) == 5);
  double weighted = 0;
  int64_t texts = 0;
  for (int64_t b = 0; b < 5; ++b) {
    const training::BatchLoss part = batches.loss(0, b);
    weighted += part.loss.item<double>() * static_cast<double>(part.tokens);
    texts += part.tokens;
  }
  CHECK(batches.loss(0, 4).tokens == 2);
  CHECK(texts == 130);
  CHECK(weighted / 130 == doctest::Approx(expected).epsilon(1e-5));
}

// With the paper's schedule, whose value at a step does not depend on the planned number of
// epochs; a linear or cosine decay spans the planned epochs, so extending them changes it.
TEST_CASE("resume: 1 epoch, then --resume to 2, equals 2 epochs in one go, bit for bit") {
  const std::string a = fresh_dir("resume_a"), b = fresh_dir("resume_b");
  auto ra =
      run("train --task copy --epochs 2 --schedule noam --no-early-stop --out " + a + " " + kQuick);
  REQUIRE_MESSAGE(ra.code == 0, ra.output);
  auto rb1 =
      run("train --task copy --epochs 1 --schedule noam --no-early-stop --out " + b + " " + kQuick);
  REQUIRE_MESSAGE(rb1.code == 0, rb1.output);
  auto rb2 = run("train --task copy --epochs 2 --no-early-stop --resume --out " + b + " " + kQuick);
  REQUIRE_MESSAGE(rb2.code == 0, rb2.output);
  CHECK(rb2.output.find("resuming") != std::string::npos);
  CHECK(bytes(a + "/last/model.safetensors") == bytes(b + "/last/model.safetensors"));
}

// A run started with a non-default value of every option that shapes training, resumed with
// none of them on the command line: it must continue exactly, equal to the same run in one go.
// An option that --resume forgot would train the second epoch differently.
TEST_CASE("--resume keeps every option the run was started with, bit for bit" *
          doctest::test_suite("end-to-end")) {
  const std::string a = fresh_dir("resume_options_a"), b = fresh_dir("resume_options_b");
  const std::string options =
      " --preset tiny --limit 800 --lr 0.003 --warmup 9 --max-tokens 256 --label-smoothing 0.05 "
      "--clip 0.5 --seed 7 --select loss --average 2 --schedule noam --no-early-stop";
  auto ra = run("train --task copy --epochs 2 --out " + a + options);
  REQUIRE_MESSAGE(ra.code == 0, ra.output);
  auto rb1 = run("train --task copy --epochs 1 --out " + b + options);
  REQUIRE_MESSAGE(rb1.code == 0, rb1.output);
  auto rb2 = run("train --task copy --epochs 2 --resume --out " + b);
  REQUIRE_MESSAGE(rb2.code == 0, rb2.output);
  CHECK(rb2.output.find("resuming") != std::string::npos);
  CHECK(bytes(a + "/last/model.safetensors") == bytes(b + "/last/model.safetensors"));
  const auto ja = nlohmann::json::parse(bytes(a + "/run.json")),
             jb = nlohmann::json::parse(bytes(b + "/run.json"));
  for (const char* field : {"options", "seed", "preset", "schedule", "recipe", "data"}) {
    CAPTURE(field);
    CHECK(ja[field] == jb[field]);
  }
  // And the runs took each option as given: one the command line dropped would leave both runs
  // at its default, alike.
  const nlohmann::json given = {
      {"lr", 0.003}, {"warmup", 9},  {"max_tokens", 256},   {"label_smoothing", 0.05},
      {"clip", 0.5}, {"limit", 800}, {"early_stop", false}, {"select", "loss"},
      {"average", 2}};
  for (const auto& item : given.items()) {
    const std::string name = item.key();
    CAPTURE(name);
    CHECK(jb["options"][name] == item.value());
  }
  CHECK(jb["seed"] == 7);
  CHECK(jb["schedule"] == "noam");
  CHECK(jb["preset"] == "tiny");
}

TEST_CASE("Ctrl-C saves a checkpoint that resumes, and the time budget stops with the best saved") {
  const std::string dir = fresh_dir("interrupt");
  // Ctrl-C once the training loop runs: its first epoch line is printed inside the loop, after
  // the Ctrl-C handler is in place. (run.json appears before that; a background job ignores
  // SIGINT until the handler is installed, so a signal sent then would be lost.)
  Background training("train --task toylang --epochs 50 --out " + dir + " --preset tiny",
                      dir + "_training");
  REQUIRE(wait_until(
      [&] { return bytes(dir + "_training.log").find("epoch 1/50") != std::string::npos; }, 300));
  kill(training.pid, SIGINT);
  const Result r = training.finish();
  CHECK_MESSAGE(r.code == 130, r.output);
  CHECK(r.output.find("interrupted") != std::string::npos);
  CHECK(std::filesystem::exists(dir + "/last/training.safetensors"));
  auto resumed = run("train --task toylang --epochs 1 --resume --out " + dir + " --preset tiny");
  CHECK_MESSAGE(resumed.code == 0, resumed.output);

  const std::string budget = fresh_dir("budget");
  // 2 seconds: about a third of one epoch of `dates` with the small preset on two threads of a
  // 2-core machine (on one thread, a sixth), so the budget ends inside the first epochs.
  auto rb =
      run("train --task dates --epochs 50 --time-budget 2 --out " + budget + " --preset small");
  CHECK_MESSAGE(rb.code == 0, rb.output);
  CHECK(rb.output.find("time budget") != std::string::npos);
  // Stopped by the budget, far short of the 50 epochs asked for (no wall-clock assertion: that
  // would fail under a sanitizer or a loaded machine, not because the budget is ignored).
  std::ifstream meta_file(budget + "/run.json");
  const auto meta = nlohmann::json::parse(meta_file);
  CHECK(meta["history"].size() < 5);
  CHECK_FALSE(meta["history"].back()["complete"].get<bool>());
  CHECK(std::filesystem::exists(budget + "/best/model.safetensors"));
  CHECK(meta["options"]["time_budget"].get<double>() == 2);
  CHECK(meta["seconds"].get<double>() > 0);
  // --resume keeps the budget and the seconds spent: with run.json saying that 2.5 of its 2
  // seconds are spent, the resumed run trains no further. (One that forgot the budget, or the
  // seconds, would train on towards the 3 epochs asked for here.)
  auto spent = meta;
  spent["seconds"] = 2.5;
  std::ofstream(budget + "/run.json") << spent.dump();
  auto again = run("train --task dates --epochs 3 --resume --out " + budget);
  CHECK_MESSAGE(again.code == 0, again.output);
  CHECK_MESSAGE(again.output.find("time budget of") != std::string::npos, again.output);
  const auto after = nlohmann::json::parse(bytes(budget + "/run.json"));
  CHECK(after["history"].size() == meta["history"].size());
  CHECK(after["options"]["time_budget"].get<double>() == 2);
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

// A toy corpus in Tatoeba's layout: `n` pairs over 35 sources, each source with several targets.
std::string write_corpus(const std::string& path, int n, const std::string& tail = "") {
  std::ofstream f(path);
  for (int i = 0; i < n; ++i)
    f << "w" << i % 7 << " x" << i % 5 << "\tv" << i % 7 << " y" << i % 5 << (i % 2 ? " z" : "")
      << "\n";
  f << tail;
  return path;
}

int64_t lines_of(const std::string& path) {
  std::ifstream f(path);
  int64_t n = 0;
  for (std::string line; std::getline(f, line);) ++n;
  return n;
}

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

// The language model validates on the text's last tenth, in windows of the block and the
// character after each (the window's last target): a tenth of block characters holds no such
// window and is refused before anything is written; one of block + 1 trains. The tiny preset's
// block is 32: texts of 320 and 330 characters.
TEST_CASE("language model: the validation tenth must hold a window and one character more") {
  auto text_of = [](const std::string& name, size_t chars) {
    const std::string path = fresh_dir(name) + ".txt";
    std::string text;
    while (text.size() < chars) text += "Whether 'tis nobler in the mind to suffer. ";
    std::ofstream(path, std::ios::binary) << text.substr(0, chars);
    return path;
  };
  const std::string refused = fresh_dir("lm_tenth_short");
  auto r = run("train --task lm --preset tiny --iters 1 --threads 1 --text " +
               text_of("lm_tenth_short", 320) + " --out " + refused);
  CHECK(r.code != 0);
  CHECK_MESSAGE(r.output.find("too short for blocks of 32 characters") != std::string::npos,
                r.output);
  CHECK_FALSE(std::filesystem::exists(refused));
  const std::string trained = fresh_dir("lm_tenth_enough");
  auto t = run("train --task lm --preset tiny --iters 1 --threads 1 --text " +
               text_of("lm_tenth_enough", 330) + " --out " + trained);
  CHECK_MESSAGE(t.code == 0, t.output);
}

// A run shorter than its warmup (the tiny preset warms up for 50 steps) warms up through all of
// it, as the translation schedules and Hugging Face's do, instead of stopping with an error after
// its folder was made.
TEST_CASE(
    "language model: --iters shorter than the preset's warmup trains, warming up throughout") {
  const std::string text = fresh_dir("lm_short_run") + ".txt";
  {
    std::ofstream f(text);
    for (int i = 0; i < 100; ++i) f << "Whether 'tis nobler in the mind to suffer\n";
  }
  const std::string dir = fresh_dir("lm_short_run");
  auto r = run("train --task lm --preset tiny --iters 5 --threads 1 --lr 1e-3 --text " + text +
               " --out " + dir);
  REQUIRE_MESSAGE(r.code == 0, r.output);
  // What it trains, as printed: 4,200 characters of 22 kinds, and the tiny preset's decoder of 2
  // layers, with nanoGPT's layout. Its parameters: the token table (22 x 64, tied to the output
  // layer) and positions (32 x 64), 2 layers of attention (4 x 64 x 64) and feed-forward
  // (2 x 64 x 256) with two norms' weights (2 x 64), and the final norm's 64.
  CHECK_MESSAGE(
      r.output.find(
          " (4200 characters, vocabulary 22): 102080 parameters, block 32, batch 16\n"
          "  hidden 64, 4 heads, 2 layers; norm layer_norm (pre-LN, a final norm); positions "
          "absolute; feed-forward feed_forward 256 (gelu); attention fused; embeddings tied to the "
          "output layer; dropout 0; no biases\n") != std::string::npos,
      r.output);
  std::ifstream meta_file(dir + "/run.json");
  const auto meta = nlohmann::json::parse(meta_file);
  const auto& schedule = meta["recipe"]["schedule"];
  CHECK(schedule["warmup"] == 50);
  // run.json's options are what the run used: the rate given, the preset's warmup, and tokens per
  // batch as the tiny preset's 16 windows of 32.
  CHECK(meta["options"]["lr"].get<double>() == 1e-3);
  CHECK(meta["options"]["warmup"] == 50);
  CHECK(meta["options"]["max_tokens"] == 16 * 32);
  CHECK(schedule["total_steps"] == 50);  // what `anatomy export` hands on to PyTorch
  // The cosine's floor keeps the preset's tenth of the peak given (nanoGPT's min_lr = lr / 10).
  CHECK(schedule["min_lr"].get<double>() == doctest::Approx(1e-4).epsilon(1e-12));
}

TEST_SUITE_END();

// average --last M on a run that keeps more than M checkpoints: the M newest, averaged as a mean
// computed here from the files. A best that any average beats makes average write it.
TEST_CASE("average --last 2 of 3 kept checkpoints averages the two newest" *
          doctest::test_suite("end-to-end")) {
  const std::string dir = fresh_dir("average_last");
  const std::string tsv = write_corpus(dir + "_train.tsv", 200);
  auto r =
      run("train --corpus " + tsv + " --average 3 --epochs 4 --no-early-stop --vocab-size 40 " +
          "--out " + dir + " " + kQuick);
  REQUIRE_MESSAGE(r.code == 0, r.output);
  CHECK_MESSAGE(r.output.find("model selection: validation BLEU; the last 3 evaluated models "
                              "averaged at the end\n") != std::string::npos,
                r.output);
  std::vector<std::string> kept;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/checkpoints"))
    kept.push_back(e.path().string());
  std::sort(kept.begin(), kept.end());
  REQUIRE(kept.size() == 3);
  nlohmann::json meta = nlohmann::json::parse(bytes(dir + "/run.json"));
  for (const char* metric : {"bleu", "exact_match", "chrf"})
    if (meta["best"].contains(metric)) meta["best"][metric] = -1.0;
  meta["best"]["valid_loss"] = 1e9;
  std::ofstream(dir + "/run.json") << meta.dump(2);
  auto a = run("average --checkpoint " + dir + " --last 2");
  REQUIRE_MESSAGE(a.code == 0, a.output);
  CHECK_MESSAGE(a.output.find("averaged 2 checkpoints (" + kept[1] + " ... " + kept[2] + ")") !=
                    std::string::npos,
                a.output);
  const auto newer = load_safetensors(kept[1]).tensors, newest = load_safetensors(kept[2]).tensors;
  const auto best = load_safetensors(dir + "/best/model.safetensors").tensors;
  REQUIRE(best.size() == newest.size());
  for (const auto& entry : best) {
    const std::string& name = entry.first;
    CAPTURE(name);
    const Tensor want = mul(add(newer.at(name), newest.at(name)), full({}, 0.5f));
    CHECK_CLOSE(entry.second, want, 1e-6, 0);
  }
}

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

// The language model's validation text is held out: the last tenth of the text, which the
// training windows never read. Trained on "abab..." and validated on "aabb...", the model is
// sure of the wrong next letter half the time: its validation loss stays high while its training
// loss falls to near zero. Validation windows drawn from the training text would score as low.
TEST_CASE("the language model validates on text it does not train on" *
          doctest::test_suite("end-to-end")) {
  const std::string dir = fresh_dir("lm_held_out");
  const std::string text = dir + "_text.txt";
  {
    std::ofstream f(text);
    for (int i = 0; i < 4500; ++i) f << "ab";
    for (int i = 0; i < 250; ++i) f << "aabb";
  }
  auto r = run("train --task lm --preset tiny --iters 60 --text " + text + " --out " + dir);
  REQUIRE_MESSAGE(r.code == 0, r.output);
  const auto at = r.output.find("step 60/60  train loss ");
  REQUIRE_MESSAGE(at != std::string::npos, r.output);
  const double train_loss = std::stod(r.output.substr(at + 23));
  const double valid_loss =
      nlohmann::json::parse(bytes(dir + "/run.json"))["best"]["valid_loss"].get<double>();
  CHECK(train_loss < 0.2);
  CHECK(valid_loss > 1.0);
  // The sample starts from a letter of the text (it has no line break), not from [UNK].
  CHECK_MESSAGE(r.output.find("sample:\na") != std::string::npos, r.output);
}

// The progress bar draws on a terminal only: under `script` (a pseudo-terminal) the epoch's bar
// ends full with its ETA at 0:00; in a log (the plain run of every other test) it is absent.
TEST_CASE("training draws a progress bar on a terminal, and none in a log" *
          doctest::test_suite("end-to-end")) {
  const std::string dir = fresh_dir("progress_bar");
  const std::string train =
      fmt::format("{} train --task copy --epochs 1 --out {} {}", ANATOMY_CLI, dir, kQuick);
  const Result tty = testing::run_command(fmt::format("script -qec '{}' /dev/null", train));
  REQUIRE_MESSAGE(tty.code == 0, tty.output);
  CHECK_MESSAGE(tty.output.find("[============================] 100% loss ") != std::string::npos,
                tty.output);
  CHECK_MESSAGE(tty.output.find("ETA 0:00") != std::string::npos, tty.output);
  const Result log = run("train --task copy --epochs 1 --out " + dir + "_log " + kQuick);
  REQUIRE_MESSAGE(log.code == 0, log.output);
  CHECK(log.output.find("ETA") == std::string::npos);
  CHECK(log.output.find('\r') == std::string::npos);
}
