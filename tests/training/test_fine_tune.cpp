// anatomy train --task classify: the chapter's classification head on a real pretrained BERT
// (the test environment's all-MiniLM-L6-v2), fine-tuned on a labelled set made from the shared
// Tatoeba corpus: English sentences, their final "?" or "." removed, labelled question or
// statement (the same rule as docs/models.md's awk command).
#include <doctest/doctest.h>

#include <fstream>
#include <regex>

#include "checkpoints/checkpoints.hpp"
#include "io/io.hpp"
#include "tokenizers/tokenizers.hpp"
#include "training/training_fixtures.hpp"

using namespace anatomy;
using namespace anatomy::testing;

namespace {

// Every 40th line of the corpus whose English side ends in "?" or ".".
void write_questions(const std::string& path) {
  std::ifstream in(shared_data("tatoeba/eng-deu.tsv"));
  std::ofstream out(path);
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    if (number % 40 != 0) continue;
    std::string english = line.substr(0, line.find('\t'));
    if (english.empty() || (english.back() != '?' && english.back() != '.')) continue;
    const bool question = english.back() == '?';
    english.pop_back();
    out << english << '\t' << (question ? "question" : "statement") << '\n';
  }
}

double best_accuracy(const Result& r) {
  std::smatch m;
  REQUIRE_MESSAGE(std::regex_search(r.output, m, std::regex("best held-out accuracy ([0-9.]+)%")),
                  r.output);
  return std::stod(m[1]);
}

}  // namespace

TEST_SUITE("end-to-end") {
  TEST_CASE(
      "anatomy train --task classify: a pretrained BERT beats the same model from random "
      "weights") {
    const std::string model = test_venv_bert();
    if (model.empty() || !have_shared_data("tatoeba/eng-deu.tsv")) return;
    const TempDir tmp;
    const std::string data = tmp / "questions.tsv";
    write_questions(data);
    // 200 training lines: little data, where what the body learned before counts. In 3 epochs
    // the pretrained body passes 90% while the random one stays at the commoner label's share.
    const std::string args = fmt::format(
        "train --task classify --model-dir {} --data {} --limit 200 --threads 1 --seed 3", model,
        data);
    // The pretrained run takes --epochs' default, 3 (Hugging Face's Trainer's num_train_epochs).
    const Result pretrained = run(args + " --out " + (tmp / "pretrained"));
    REQUIRE_MESSAGE(pretrained.code == 0, pretrained.output);
    const Result scratch = run(args + " --epochs 3 --random-weights --out " + (tmp / "scratch"));
    REQUIRE_MESSAGE(scratch.code == 0, scratch.output);
    const double with = best_accuracy(pretrained), without = best_accuracy(scratch);
    CAPTURE(with);
    CAPTURE(without);
    CHECK(with > without + 3.0);
    const auto run_json = nlohmann::json::parse(bytes(tmp / "pretrained/run.json"));
    CHECK(run_json["labels"] == nlohmann::json({"question", "statement"}));
    CHECK(run_json["pretrained"] == true);
    CHECK(run_json["epochs"] == 3);
    CHECK(run_json["task"] == "classify");
    CHECK(run_json["model_dir"] == model);
    CHECK(run_json["freeze_body"] == false);
    // The rate it trained at: fine-tuning's usual 5e-5, as run.json records it.
    CHECK(run_json["options"]["lr"].get<double>() == 5e-5);
    CHECK(nlohmann::json::parse(bytes(tmp / "scratch/run.json"))["pretrained"] == false);
    // Every fifth line is held out; --limit then cuts the rest to 200.
    size_t lines = 0;
    {
      std::ifstream f(data);
      for (std::string line; std::getline(f, line);) ++lines;
    }
    REQUIRE(lines * 4 / 5 > 200);
    CHECK_MESSAGE(
        pretrained.output.find(fmt::format("(200 train, {} held out, labels: question, statement)",
                                           lines / 5)) != std::string::npos,
        pretrained.output);

    // Fine-tuning changed the body; --freeze-body trains the head and leaves every body tensor
    // as the folder has it.
    const Result frozen = run(args + " --freeze-body --epochs 1 --out " + (tmp / "frozen"));
    REQUIRE_MESSAGE(frozen.code == 0, frozen.output);
    // A head trained alone starts from nothing, at the larger rate 1e-3.
    const auto frozen_json = nlohmann::json::parse(bytes(tmp / "frozen/run.json"));
    CHECK(frozen_json["freeze_body"] == true);
    CHECK(frozen_json["options"]["lr"].get<double>() == 1e-3);
    const auto folder = checkpoints::load_bert_folder(model);
    const auto body = folder.model->state_dict();
    const auto tuned = load_safetensors(tmp / "pretrained/last/model.safetensors").tensors;
    const auto kept = load_safetensors(tmp / "frozen/last/model.safetensors").tensors;
    float tuned_moved = 0, frozen_moved = 0;
    for (const auto& entry : body) {  // (not a structured binding: clang's CAPTURE)
      const std::string& name = entry.first;
      const Tensor& tensor = entry.second;
      CAPTURE(name);
      REQUIRE(kept.count("encoder." + name));
      tuned_moved =
          std::max(tuned_moved, (tuned.at("encoder." + name) - tensor).abs().max().item<float>());
      frozen_moved =
          std::max(frozen_moved, (kept.at("encoder." + name) - tensor).abs().max().item<float>());
    }
    CHECK(tuned_moved > 1e-4f);
    CHECK(frozen_moved == 0.0f);
    CHECK((kept.at("classifier.weight") - tuned.at("classifier.weight")).abs().max().item<float>() >
          0.0f);
    // Each run says how many parameters it trains: every saved tensor's, or the head's alone.
    auto said = [](const Result& r) {
      std::smatch m;
      REQUIRE_MESSAGE(std::regex_search(r.output, m, std::regex(" (\\d+) parameters trained")),
                      r.output);
      return std::stoll(m[1]);
    };
    int64_t all = 0, head = 0;
    for (const auto& entry : kept) {
      all += entry.second.numel();
      if (entry.first.rfind("classifier.", 0) == 0) head += entry.second.numel();
    }
    CHECK(head > 0);
    CHECK(said(pretrained) == all);
    CHECK(said(frozen) == head);
  }

  TEST_CASE("anatomy train --task classify: missing or malformed input is refused by name") {
    const TempDir tmp;
    const std::string bad = tmp / "bad.tsv";
    std::ofstream(bad) << "a sentence\tlabel\nno tab here\n";
    // Each clause of the line check on its own, after a blank line (skipped, but counted).
    const std::string no_text = tmp / "no_text.tsv";
    std::ofstream(no_text) << "a sentence\tlabel\n\n\tlabel\n";
    const std::string no_label = tmp / "no_label.tsv";
    std::ofstream(no_label) << "a sentence\tlabel\n\nanother sentence\t\n";
    const std::string one = tmp / "one.tsv";
    std::ofstream(one) << "a\tx\nb\tx\nc\tx\nd\tx\ne\tx\n";
    const std::string folder = test_path("parity/golden/bert");
    struct Case {
      std::string args, says;
    };
    const std::vector<Case> cases = {
        {"--data " + bad, "needs --model-dir DIR"},
        {"--model-dir " + folder, "needs --data FILE.tsv"},
        {"--model-dir " + folder + " --data " + bad,
         "line 2: expected text<TAB>label, got 'no tab here'"},
        {"--model-dir " + folder + " --data " + no_text,
         "no_text.tsv line 3: expected text<TAB>label, got '\tlabel'"},
        {"--model-dir " + folder + " --data " + no_label,
         "no_label.tsv line 3: expected text<TAB>label, got 'another sentence\t'"},
        {"--model-dir " + folder + " --data " + one, "gives 1 label(s)"},
        {"--model-dir " + folder + " --data " + (tmp / "absent.tsv"), "absent.tsv"},
    };
    for (const auto& c : cases) {
      CAPTURE(c.args);
      const Result r = run("train --task classify --out " + (tmp / "run") + " " + c.args);
      CHECK(r.code != 0);
      CHECK_MESSAGE(r.output.find(c.says) != std::string::npos, r.output);
      CHECK_FALSE(std::filesystem::exists(tmp / "run"));
    }
    const Result stray = run("train --task majority --data " + bad + " --out " + (tmp / "run"));
    CHECK(stray.code != 0);
    CHECK_MESSAGE(stray.output.find("go with --task classify") != std::string::npos, stray.output);
  }

  // The memory check reads the batch at its longest text as the model reads it: the text's
  // tokens, and [CLS] and [SEP] around them. A limit below what that takes is refused with the
  // length, before the run folder exists.
  TEST_CASE("anatomy train --task classify: the memory check counts [CLS] and [SEP]") {
    const TempDir tmp;
    const std::string folder = test_path("parity/golden/bert");
    const std::string longest = "the cat sat on the mat with a hat";
    const std::string data = tmp / "labels.tsv";
    {
      std::ofstream f(data);
      for (int i = 0; i < 10; ++i) f << (i ? "a dog" : longest) << '\t' << "xy"[i % 2] << '\n';
    }
    const auto tokens =
        static_cast<int64_t>(text::load_folder_tokenizer(folder)->encode(longest).size());
    REQUIRE(tokens > 2);
    const Result r = run("train --task classify --max-memory 0.001 --model-dir " + folder +
                         " --data " + data + " --out " + (tmp / "run"));
    CHECK(r.code != 0);
    const int64_t read = tokens + 2;
    CHECK_MESSAGE(r.output.find(fmt::format("for {} tokens a batch (the batch: 16 texts, the "
                                            "longest of {} tokens) in sequences of up to {}",
                                            16 * read, read, read)) != std::string::npos,
                  r.output);
    CHECK_FALSE(std::filesystem::exists(tmp / "run"));
  }
}
