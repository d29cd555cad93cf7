#include "run_dir.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>

#include "data/data.hpp"

namespace anatomy::cli {

namespace fs = std::filesystem;

void RunDir::create() const {
  std::error_code ec;
  fs::create_directories(file("best"), ec);
  if (!ec) fs::create_directories(file("last"), ec);
  if (ec) throw Error(fmt::format("cannot create the output folder {} ({})", path, ec.message()));
  // Fail now, not after an hour of training, if the folder is not writable.
  const std::string probe = file(".write-test");
  if (!std::ofstream(probe)) throw Error(fmt::format("the output folder {} is not writable", path));
  fs::remove(probe, ec);
}

nlohmann::json RunDir::read_run() const {
  std::ifstream f(file("run.json"));
  if (!f)
    throw Error(
        fmt::format("{} is not a training run folder (no run.json); train one with "
                    "anatomy train --out {}",
                    path, path));
  try {
    return nlohmann::json::parse(f);
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{}: run.json is not valid JSON ({})", path, e.what()));
  }
}

void RunDir::write_run(const nlohmann::json& run) const {
  write_file_atomically(file("run.json"), run.dump(2) + "\n");
}

models::TransformerConfig RunDir::read_config() const {
  return models::TransformerConfig::from_json_file(file("config.json"));
}

std::string RunDir::weights() const {
  if (fs::exists(file("best/model.safetensors"))) return file("best/model.safetensors");
  if (fs::exists(file("last/model.safetensors"))) return file("last/model.safetensors");
  throw Error(fmt::format("{} holds no weights yet (best/ and last/ are empty)", path));
}

Translator Translator::load(const std::string& dir) {
  RunDir run{dir};
  const auto meta = run.read_run();
  if (meta.value("kind", "") != "translation")
    throw Error(
        fmt::format("{} holds a {} model, not a translation model", dir, meta.value("kind", "?")));
  Translator t;
  t.config = run.read_config();
  t.source = text::load_tokenizer(run.file("source_tokenizer"));
  t.target = text::load_tokenizer(run.file("target_tokenizer"));
  if (t.source->vocab().size() != t.config.vocab_size ||
      t.target->vocab().size() != t.config.target_vocab())
    throw Error(
        fmt::format("{}: the tokenizers ({} and {} tokens) do not match config.json ({} and {})",
                    dir, t.source->vocab().size(), t.target->vocab().size(), t.config.vocab_size,
                    t.config.target_vocab()));
  t.model = std::make_shared<models::Seq2SeqTransformer>(t.config);
  t.model->load(run.weights());
  t.model->eval();
  t.bos = t.target->vocab().id("[BOS]");
  t.eos = t.target->vocab().id("[EOS]");
  return t;
}

std::vector<int64_t> Translator::encode_source(const std::string& text) const {
  auto ids = source->encode(text);
  if (ids.empty()) ids.push_back(source->vocab().id("[UNK]"));
  if (static_cast<int64_t>(ids.size()) > config.max_position_embeddings)
    throw Error(fmt::format("the input \"{}\" is {} tokens long; this model reads at most {}",
                            text.size() > 40 ? text.substr(0, 40) + "..." : text, ids.size(),
                            config.max_position_embeddings));
  return ids;
}

std::vector<std::string> Translator::translate(const std::vector<std::string>& texts, int64_t beam,
                                               float length_penalty, int64_t max_length) const {
  std::vector<std::string> out(texts.size());
  std::vector<std::vector<int64_t>> ids;
  for (const auto& t : texts) ids.push_back(encode_source(t));
  auto limit = [&](size_t i) {
    const int64_t want = max_length > 0 ? max_length : static_cast<int64_t>(ids[i].size()) * 2 + 10;
    return std::min<int64_t>(want, config.max_position_embeddings - 1);
  };
  if (beam <= 1) {
    // Greedy, in batches of sentences of similar length.
    std::vector<size_t> order(texts.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return ids[a].size() < ids[b].size(); });
    for (size_t start = 0; start < order.size(); start += 64) {
      const size_t end = std::min(order.size(), start + 64);
      std::vector<std::vector<int64_t>> rows;
      int64_t max_len = 0;
      for (size_t k = start; k < end; ++k) {
        rows.push_back(ids[order[k]]);
        max_len = std::max(max_len, limit(order[k]));
      }
      auto results = models::greedy_decode(*model, data::pad_batch(rows, config.pad_token_id), bos,
                                           eos, max_len);
      for (size_t k = start; k < end; ++k)
        out[order[k]] = target->decode(results[k - start].tokens);
    }
    return out;
  }
  for (size_t i = 0; i < texts.size(); ++i) {
    const auto g =
        models::beam_search(*model, from_vector(ids[i], {1, static_cast<int64_t>(ids[i].size())}),
                            bos, eos, limit(i), beam, length_penalty);
    out[i] = target->decode(g.tokens);
  }
  return out;
}

std::string human(double x) {
  if (x >= 1e6) return fmt::format("{:.1f}M", x / 1e6);
  if (x >= 1e3) return fmt::format("{:.1f}k", x / 1e3);
  return fmt::format("{:.0f}", x);
}

std::string clock(double s) {
  const auto t = static_cast<int64_t>(s + 0.5);
  if (t >= 3600) return fmt::format("{}:{:02}:{:02}", t / 3600, t / 60 % 60, t % 60);
  return fmt::format("{}:{:02}", t / 60, t % 60);
}

}  // namespace anatomy::cli
