// The classifier and the language model trained through the `anatomy` program: the majority
// task's encoder and its hooks, the language model's held-out tenth and its warmup.
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
