#include "models/config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "autograd/tensor.hpp"
#include "io/input_file.hpp"
#include "io/json_limits.hpp"
#include "models/registry.hpp"
#include "platform/platform.hpp"

namespace anatomy::models {

namespace {

// --- the checks named in ANATOMY_CONFIG_FIELDS: "" when the value passes, else what it must be ---
std::string any(const auto&) { return ""; }
std::string positive(const auto& v) { return v > 0 ? "" : "must be positive"; }
std::string non_negative(const auto& v) { return v >= 0 ? "" : "must be >= 0"; }
std::string probability(double p) { return p >= 0.0 && p < 1.0 ? "" : "must be in [0, 1)"; }
std::string activation(const std::string& v) {
  return v == "gelu" || v == "gelu_new" || v == "relu" ? "" : "must be gelu, gelu_new or relu";
}
template <typename R>
std::string registered(const R& registry, const std::string& v) {
  // A name this program does not know is most likely a part registered by another program (a
  // project of one's own built on anatomy::cli): that program reads the run.
  return registry.contains(v)
             ? ""
             : fmt::format(
                   "must be one of: {}; a part registered by a program of your own is "
                   "read by that program (e.g. ./build/my_anatomy, docs/extending.md)",
                   fmt::join(registry.names(), ", "));
}
std::string norm(const std::string& v) { return registered(norms(), v); }
std::string ffn(const std::string& v) { return registered(feed_forwards(), v); }
std::string attention(const std::string& v) { return registered(attentions(), v); }
std::string position(const std::string& v) { return registered(positions(), v); }

std::string shown(const auto& v) {
  if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::string>)
    return "'" + v + "'";
  else if constexpr (std::is_same_v<std::decay_t<decltype(v)>, bool>)
    return v ? "true" : "false";
  else
    return fmt::format("{}", v);
}

// --- reading one value, from JSON or from text, with the field's type ---
void read_json(int64_t& field, const nlohmann::json& v, const std::string& where) {
  if (!v.is_number_integer())
    throw Error(fmt::format("{} must be an integer (got {})", where, v.dump()));
  field = v.get<int64_t>();
}
void read_json(double& field, const nlohmann::json& v, const std::string& where) {
  if (!v.is_number()) throw Error(fmt::format("{} must be a number (got {})", where, v.dump()));
  field = v.get<double>();
}
void read_json(bool& field, const nlohmann::json& v, const std::string& where) {
  if (!v.is_boolean())
    throw Error(fmt::format("{} must be true or false (got {})", where, v.dump()));
  field = v.get<bool>();
}
void read_json(std::string& field, const nlohmann::json& v, const std::string& where) {
  if (!v.is_string()) throw Error(fmt::format("{} must be a string (got {})", where, v.dump()));
  field = v.get<std::string>();
}

// Text as JSON would read it (256, 0.1, true), or else as a plain string (rms_norm).
nlohmann::json parse_value(const std::string& text) {
  try {
    return nlohmann::json::parse(text, json_depth_limit("--set"));
  } catch (const nlohmann::json::exception&) {
    return text;
  }
}

// Hugging Face keys that carry nothing this project uses.
const std::set<std::string> kIgnoredKeys = {"architectures",
                                            "model_type",
                                            "use_cache",
                                            "gradient_checkpointing",
                                            "transformers_version",
                                            "classifier_dropout",
                                            "torch_dtype",
                                            "bos_token_id",
                                            "eos_token_id",
                                            "id2label",
                                            "label2id",
                                            "_name_or_path",
                                            "problem_type",
                                            "dtype",
                                            "tie_word_embeddings"};

// Hugging Face keys this project reads only at their default, false: a model that sets one
// (a BERT made a decoder, with cross-attention) is not the one this config builds.
const std::set<std::string> kFalseOnlyKeys = {"is_decoder", "add_cross_attention"};

// Sets the field called `key` from a JSON value; false if no field has that name.
bool set_field(TransformerConfig& c, const std::string& key, const nlohmann::json& value,
               const std::string& where) {
#define ANATOMY_CONFIG_READ(type, name, default_value, check, help) \
  if (key == #name) {                                               \
    read_json(c.name, value, where);                                \
    return true;                                                    \
  }
  ANATOMY_CONFIG_FIELDS(ANATOMY_CONFIG_READ)
#undef ANATOMY_CONFIG_READ
  // Written by earlier versions: one bool where attention_type now names the layout.
  if (key == "fused_attention") {
    bool fused = true;
    read_json(fused, value, where);
    c.attention_type = fused ? "fused" : "book";
    return true;
  }
  return false;
}

}  // namespace

namespace {
double limit_bytes = 0;  // 0: the machine's physical memory
std::string human_bytes(double b) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  int u = 0;
  while (b >= 1024 && u < 5) b /= 1024, ++u;
  return fmt::format("{:.1f} {}", b, units[u]);
}
}  // namespace

double TransformerConfig::memory_limit() {
  if (limit_bytes > 0) return limit_bytes;
  // Where the system does not say how much memory there is, no size is refused for it.
  const double bytes = platform::usable_memory();
  return bytes > 0 ? bytes : std::numeric_limits<double>::infinity();
}

void TransformerConfig::set_memory_limit(double bytes) { limit_bytes = bytes; }

double TransformerConfig::parameter_count() const {
  const double E = static_cast<double>(hidden_size), I = static_cast<double>(intermediate_size);
  const double layer = 4 * E * E + 2 * E * I + 4 * E;  // attention, feed-forward, two norms
  const double tables =
      (static_cast<double>(vocab_size) + static_cast<double>(target_vocab()) +
       static_cast<double>(max_position_embeddings) + static_cast<double>(type_vocab_size)) *
      E;
  const double decoder = num_decoder_layers > 0
                             ? static_cast<double>(num_decoder_layers) * (layer + 4 * E * E)
                             : 0.0;  // each decoder layer adds cross-attention
  // The output layer of a language model or translator, untied.
  return static_cast<double>(num_hidden_layers) * layer + decoder + tables +
         static_cast<double>(target_vocab()) * E;
}

double TransformerConfig::training_bytes(int64_t batch_tokens, int64_t sequence_length) const {
  const double E = static_cast<double>(hidden_size), I = static_cast<double>(intermediate_size);
  const double H = static_cast<double>(num_attention_heads);
  const double T = static_cast<double>(std::max<int64_t>(1, sequence_length));
  const double encoder_layer = 12 * E + 2 * I + 2 * H * T;
  const double decoder_layer = encoder_layer + 6 * E + 2 * H * T;  // and cross-attention
  const double per_token = static_cast<double>(num_hidden_layers) * encoder_layer +
                           static_cast<double>(num_decoder_layers) * decoder_layer +
                           3 * static_cast<double>(target_vocab());
  return 4 * (4 * parameter_count() + static_cast<double>(batch_tokens) * per_token);
}

double TransformerConfig::decoding_bytes(int64_t rows, int64_t source_length,
                                         int64_t output_length) const {
  const double per_row = static_cast<double>(decoder_layers()) * 2 *
                             static_cast<double>(hidden_size) *
                             static_cast<double>(source_length + output_length) +
                         3 * static_cast<double>(target_vocab());
  return 4 * static_cast<double>(rows) * per_row;
}

void TransformerConfig::check_training_memory(int64_t batch_tokens, int64_t sequence_length,
                                              const std::string& batch_option) const {
  const double bytes = training_bytes(batch_tokens, sequence_length);
  if (bytes <= memory_limit()) return;
  throw Error(fmt::format(
      "train: about {} to train: {} for the weights, their gradients and AdamW's moments, and {} "
      "of activations for {} tokens a batch ({}) in sequences of up to {}: more than the {} a run "
      "may take here (lower {} or the model's sizes, or raise the limit with --max-memory GB)",
      human_bytes(bytes), human_bytes(16 * parameter_count()),
      human_bytes(bytes - 16 * parameter_count()), batch_tokens, batch_option, sequence_length,
      human_bytes(memory_limit()), batch_option));
}

void TransformerConfig::validate() const {
#define ANATOMY_CONFIG_CHECK(type, name, default_value, check, help) \
  if (const std::string problem = check(name); !problem.empty())     \
    throw Error(fmt::format("config: {} {} (got {})", #name, problem, shown(name)));
  ANATOMY_CONFIG_FIELDS(ANATOMY_CONFIG_CHECK)
#undef ANATOMY_CONFIG_CHECK
  // Checks that involve two fields.
  if (hidden_size % num_attention_heads != 0)
    throw Error(
        fmt::format("config: hidden_size ({}) must be divisible by num_attention_heads ({})",
                    hidden_size, num_attention_heads));
  if (pad_token_id >= vocab_size)
    throw Error(fmt::format("config: pad_token_id {} is outside the vocabulary of {}", pad_token_id,
                            vocab_size));
  if (share_embeddings && target_vocab() != vocab_size)
    throw Error(
        fmt::format("config: share_embeddings needs one vocabulary (vocab_size {} vs "
                    "target_vocab_size {})",
                    vocab_size, target_vocab_size));
  const PositionScheme& scheme = positions().at(position_embedding_type);
  if (scheme.check) scheme.check(*this);
  if (scheme.attention && attention_type == "book")
    throw Error(fmt::format(
        "config: position_embedding_type '{}' acts inside attention, which the book's per-head "
        "layout (attention_type \"book\") does not support; use attention_type \"fused\"",
        position_embedding_type));
  // Sizes that are each valid can together be more than the machine holds: refused before a
  // single tensor is allocated, rather than ending in std::bad_alloc or the kernel's OOM killer.
  const double bytes = 4 * parameter_count();
  if (bytes > memory_limit())
    throw Error(fmt::format(
        "config: about {:.2g} parameters ({} as float32) from hidden_size {}, "
        "intermediate_size {}, num_hidden_layers {}, num_decoder_layers {}, vocab_size {}, "
        "max_position_embeddings {}: more than the {} of memory a model may take here "
        "(--max-memory GB raises the limit)",
        parameter_count(), human_bytes(bytes), hidden_size, intermediate_size, num_hidden_layers,
        num_decoder_layers, vocab_size, max_position_embeddings, human_bytes(memory_limit())));
}

TransformerConfig TransformerConfig::from_json(const std::string& text, const std::string& source) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text, json_depth_limit("config: " + source));
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("config: {} is not valid JSON ({})", source, e.what()));
  }
  if (!j.is_object()) throw Error(fmt::format("config: {} must hold a JSON object", source));
  TransformerConfig c;
  for (const auto& [key, value] : j.items()) {
    if (kFalseOnlyKeys.count(key)) {
      if (value != false)
        throw Error(fmt::format("config: {}: '{}' is {}; only false is supported", source, key,
                                value.dump()));
      continue;
    }
    if (!set_field(c, key, value, fmt::format("config: {}: '{}'", source, key)) &&
        !kIgnoredKeys.count(key))
      throw Error(fmt::format("config: {}: unknown key '{}'", source, key));
  }
  // Hugging Face derives num_labels from id2label; a config that gives both must agree.
  if (j.contains("id2label") && j["id2label"].is_object()) {
    const auto labels = static_cast<int64_t>(j["id2label"].size());
    if (j.contains("num_labels") && c.num_labels != labels)
      throw Error(fmt::format("config: {}: num_labels is {} but id2label names {} labels", source,
                              c.num_labels, labels));
    c.num_labels = labels;
  }
  try {
    c.validate();
  } catch (const Error& e) {
    throw Error(fmt::format("{} (in {})", e.what(), source));
  }
  return c;
}

TransformerConfig TransformerConfig::from_json_file(const std::string& path) {
  std::ifstream f = open_input("config", path);
  std::stringstream ss;
  ss << f.rdbuf();
  return from_json(ss.str(), path);
}

std::string TransformerConfig::to_json(Model model) const {
  nlohmann::ordered_json j;
#define ANATOMY_CONFIG_WRITE(type, name, default_value, check, help) j[#name] = name;
  ANATOMY_CONFIG_FIELDS(ANATOMY_CONFIG_WRITE)
#undef ANATOMY_CONFIG_WRITE
  // What each model leaves unread: a classification head's size outside a classifier, the
  // decoder's fields outside a model with one, the pooler where no head reads it.
  auto drop = [&](std::initializer_list<const char*> names) {
    for (const char* name : names) j.erase(name);
  };
  if (model != Model::All && model != Model::Classifier) {
    drop({"num_labels"});
    if (!add_pooling_layer) drop({"add_pooling_layer"});
  }
  switch (model) {
    case Model::All:
      break;
    case Model::Seq2Seq:
      j["num_decoder_layers"] = decoder_layers();
      j["target_vocab_size"] = target_vocab();
      break;
    case Model::CausalLM:  // a decoder alone: its layers are the model's layers
      j["num_hidden_layers"] = decoder_layers();
      drop({"num_decoder_layers", "target_vocab_size", "share_embeddings"});
      break;
    case Model::Classifier:  // an encoder and a head: no decoder, no output layer over tokens
      drop({"num_decoder_layers", "target_vocab_size", "share_embeddings", "tie_word_embeddings"});
      break;
  }
  return j.dump(2) + "\n";
}

void TransformerConfig::set(const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw Error(
        fmt::format("--set: expected name=value (e.g. hidden_size=256), got '{}'", assignment));
  const std::string key = assignment.substr(0, eq);
  if (!set_field(*this, key, parse_value(assignment.substr(eq + 1)), "--set " + key))
    throw Error(fmt::format("--set: unknown config field '{}' (anatomy config lists them)", key));
}

std::string TransformerConfig::architecture(bool encoder, bool decoder) const {
  const std::string layers = encoder && decoder
                                 ? fmt::format("{}+{} layers", num_hidden_layers, decoder_layers())
                             : decoder ? fmt::format("{} layers", decoder_layers())
                                       : fmt::format("{} layers", num_hidden_layers);
  return fmt::format(
      "hidden {}, {} heads, {}; norm {} ({}{}{}); positions {}; feed-forward {} {} ({}); "
      "attention {}; {}embeddings{}; dropout {:g}{}",
      hidden_size, num_attention_heads, layers, norm_type, pre_layer_norm ? "pre-LN" : "post-LN",
      final_layer_norm ? ", a final norm" : "",
      embedding_layer_norm ? ", one after the embeddings" : "", position_embedding_type, ffn_type,
      intermediate_size, hidden_act, attention_type,
      encoder && decoder && share_embeddings ? "shared source-target " : "",
      tie_word_embeddings ? " tied to the output layer" : "", hidden_dropout_prob,
      bias ? "" : "; no biases");
}

std::vector<std::string> TransformerConfig::describe() {
  std::vector<std::string> out;
#define ANATOMY_CONFIG_DESCRIBE(type, name, default_value, check, help) \
  out.push_back(fmt::format("{:30} {:12} {}", #name, shown(type(default_value)), help));
  ANATOMY_CONFIG_FIELDS(ANATOMY_CONFIG_DESCRIBE)
#undef ANATOMY_CONFIG_DESCRIBE
  return out;
}

std::vector<std::string> TransformerConfig::preset_names() {
  return {"tiny", "small", "medium", "base", "bert-base", "nanogpt", "gpt-small"};
}

TransformerConfig TransformerConfig::preset(const std::string& name) {
  TransformerConfig c;  // the defaults are bert-base-uncased's sizes, the book's config
  auto sizes = [&](int64_t hidden, int64_t heads, int64_t layers, int64_t ffn) {
    c.hidden_size = hidden;
    c.num_attention_heads = heads;
    c.num_hidden_layers = layers;
    c.intermediate_size = ffn;
    c.layer_norm_eps = 1e-5;
  };
  // GPT's layout: no norm right after the embeddings, one after the last layer, nanoGPT's
  // bias-free layers, the output layer tied to the token table.
  auto gpt = [&](int64_t block, double dropout) {
    c.max_position_embeddings = block;
    c.hidden_dropout_prob = c.attention_probs_dropout_prob = dropout;
    c.embedding_layer_norm = false;
    c.final_layer_norm = true;
    c.bias = false;
    c.tie_word_embeddings = true;
  };
  if (name == "tiny")
    sizes(64, 4, 2, 256);
  else if (name == "small")
    sizes(128, 4, 2, 512);
  else if (name == "medium")
    sizes(256, 4, 2, 1024);
  else if (name == "base")
    sizes(256, 8, 3, 1024);
  else if (name == "bert-base")
    ;
  else if (name == "nanogpt")
    sizes(128, 4, 4, 512), gpt(64, 0.0);
  else if (name == "gpt-small")
    sizes(192, 6, 6, 768), gpt(128, 0.1);
  else
    throw Error(fmt::format("unknown preset '{}' ({})", name, fmt::join(preset_names(), ", ")));
  return c;
}

}  // namespace anatomy::models
