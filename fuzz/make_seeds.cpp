// Writes the seed corpora under fuzz/corpus/ (committed): one valid input of each kind a
// harness reads, made by the library's own writers, so libFuzzer starts from files that load
// and mutates from there. Run again after a format changes: build/sanitize/fuzz/make_seeds
// fuzz/corpus
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "io/safetensors.hpp"
#include "models/config.hpp"
#include "nn/nn.hpp"
#include "tokenizers/tokenizers.hpp"

namespace fs = std::filesystem;
using namespace anatomy;

std::string read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void put(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fmt::print(stderr, "usage: make_seeds DIR\n");
    return 2;
  }
  const fs::path out = argv[1];
  const fs::path tmp = fs::temp_directory_path() / "anatomy-make-seeds";
  fs::create_directories(tmp);

  // safetensors: float32 and int64 tensors, with metadata
  save_safetensors((tmp / "a.safetensors").string(),
                   {{"weight", arange(6).to(kFloat32).reshape({2, 3})}, {"ids", arange(4)}},
                   {{"format", "pt"}});
  put(out / "safetensors" / "two_tensors", read((tmp / "a.safetensors").string()));

  // config.json: every preset
  for (const auto& name : models::TransformerConfig::preset_names())
    put(out / "config" / name, models::TransformerConfig::preset(name).to_json());

  // tokenizer files of each kind, then a text to encode
  const std::vector<std::string> texts = {"Time flies like an arrow.", "Fruit flies like a banana!",
                                          "Zeit vergeht wie im Flug\\n"};
  auto seed_tokenizer = [&](const text::Tokenizer& t, const std::string& name) {
    const std::string base = (tmp / name).string();
    t.save(base);
    std::string merges = fs::exists(base + ".merges.txt") ? read(base + ".merges.txt") : "";
    put(out / "tokenizer" / name, read(base + ".json") + "\n----\n" + read(base + ".vocab.txt") +
                                      "\n----\n" + merges + "\n----\ntime flies like an arrow");
  };
  seed_tokenizer(text::CharTokenizer::train(texts), "char");
  seed_tokenizer(text::WordTokenizer::train(texts, 1, 0, true), "word");
  seed_tokenizer(text::BpeTokenizer::train(texts, 60, false, 1), "bpe");
  seed_tokenizer(
      text::BertTokenizer(text::Vocabulary({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "time",
                                            "flies", "like", "an", "arrow", "##s", "fl", "##ies"})),
      "bert");

  // corpus.tsv
  put(out / "tsv" / "pairs", "Hello!\tHallo!\nI see.\tIch verstehe.\tCC-BY 2.0\nRun.\tLauf!\n");

  // run.json, as a translation run writes it
  put(out / "run_json" / "translation",
      R"({"kind": "translation", "seed": 7, "preset": "tiny", "schedule": "noam",
  "data": {"task": "reverse"}, "description": "task reverse", "epochs": 2, "step": 20,
  "options": {"lr": 0.0, "warmup": 0, "max_tokens": 0, "label_smoothing": 0.1, "clip": 1.0,
              "limit": 600, "early_stop": true},
  "best": {"valid_loss": 3.1, "bleu": 0.0, "exact_match": 0.0},
  "history": [{"epoch": 1, "step": 10, "train_loss": 3.2, "valid_loss": 3.1, "bleu": 0.0,
               "exact_match": 0.0, "seconds": 0.8, "complete": true}],
  "curve": [[5, 3.3, 0.001], [10, 3.2, 0.002]],
  "recipe": {"max_tokens": 512, "bos": 2, "eos": 3}}
)");

  // training.safetensors of the training-state harness's model (keep the two in step)
  auto model = std::make_shared<nn::Sequential>(std::vector<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(4, 3), std::make_shared<nn::LayerNorm>(Shape{3})});
  nn::AdamW optimizer(model->parameters(), {});
  nn::NoamSchedule schedule(optimizer, 16, 4, 1.0);
  model->forward(randn({2, 4})).sum().backward();
  optimizer.step();
  schedule.step();
  nn::save_checkpoint((tmp / "training.safetensors").string(), *model, optimizer, &schedule, 1,
                      {{"epoch", "0"}, {"batch", "1"}});
  put(out / "training_state" / "one_step", read((tmp / "training.safetensors").string()));

  fs::remove_all(tmp);
  fmt::print("seeds written under {}\n", out.string());
}
