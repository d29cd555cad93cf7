#include "models/config.hpp"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "autograd/tensor.hpp"

namespace anatomy::models {

void TransformerConfig::validate() const {
  auto positive = [](const char* name, int64_t v) {
    if (v <= 0) throw Error(fmt::format("config: {} must be positive (got {})", name, v));
  };
  positive("vocab_size", vocab_size);
  positive("hidden_size", hidden_size);
  positive("num_attention_heads", num_attention_heads);
  positive("num_hidden_layers", num_hidden_layers);
  positive("intermediate_size", intermediate_size);
  positive("max_position_embeddings", max_position_embeddings);
  positive("num_labels", num_labels);
  if (hidden_size % num_attention_heads != 0)
    throw Error(
        fmt::format("config: hidden_size ({}) must be divisible by num_attention_heads ({})",
                    hidden_size, num_attention_heads));
  for (auto [name, p] : {std::pair{"hidden_dropout_prob", hidden_dropout_prob},
                         std::pair{"attention_probs_dropout_prob", attention_probs_dropout_prob}})
    if (p < 0.0 || p >= 1.0)
      throw Error(fmt::format("config: {} must be in [0, 1) (got {})", name, p));
  if (initializer_range <= 0)
    throw Error(
        fmt::format("config: initializer_range must be positive (got {})", initializer_range));
  if (layer_norm_eps <= 0)
    throw Error(fmt::format("config: layer_norm_eps must be positive (got {})", layer_norm_eps));
  if (hidden_act != "gelu" && hidden_act != "gelu_new" && hidden_act != "relu")
    throw Error(
        fmt::format("config: hidden_act must be gelu, gelu_new or relu (got '{}')", hidden_act));
  if (position_embedding_type != "absolute" && position_embedding_type != "sinusoidal")
    throw Error(
        fmt::format("config: position_embedding_type must be absolute or sinusoidal (got "
                    "'{}')",
                    position_embedding_type));
  if (position_embedding_type == "sinusoidal" && hidden_size % 2 != 0)
    throw Error(
        fmt::format("config: sinusoidal positions need an even hidden_size (got {})", hidden_size));
  if (pad_token_id < 0 || pad_token_id >= vocab_size)
    throw Error(fmt::format("config: pad_token_id {} is outside the vocabulary of {}", pad_token_id,
                            vocab_size));
  if (num_decoder_layers < 0 || target_vocab_size < 0)
    throw Error("config: num_decoder_layers and target_vocab_size must be >= 0");
  if (share_embeddings && target_vocab() != vocab_size)
    throw Error(
        fmt::format("config: share_embeddings needs one vocabulary (vocab_size {} vs "
                    "target_vocab_size {})",
                    vocab_size, target_vocab_size));
}

TransformerConfig TransformerConfig::from_json(const std::string& text, const std::string& source) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("config: {} is not valid JSON ({})", source, e.what()));
  }
  if (!j.is_object()) throw Error(fmt::format("config: {} must hold a JSON object", source));
  // Hugging Face keys that carry nothing this project uses.
  static const std::set<std::string> ignored = {
      "architectures",          "model_type",           "type_vocab_size",    "use_cache",
      "gradient_checkpointing", "transformers_version", "classifier_dropout", "torch_dtype",
      "bos_token_id",           "eos_token_id",         "id2label",           "label2id",
      "_name_or_path",          "problem_type"};
  TransformerConfig c;
  for (const auto& [key, value] : j.items()) {
    auto get_int = [&](int64_t& field) {
      if (!value.is_number_integer())
        throw Error(
            fmt::format("config: {}: '{}' must be an integer (got {})", source, key, value.dump()));
      field = value.get<int64_t>();
    };
    auto get_double = [&](double& field) {
      if (!value.is_number())
        throw Error(
            fmt::format("config: {}: '{}' must be a number (got {})", source, key, value.dump()));
      field = value.get<double>();
    };
    auto get_bool = [&](bool& field) {
      if (!value.is_boolean())
        throw Error(fmt::format("config: {}: '{}' must be true or false (got {})", source, key,
                                value.dump()));
      field = value.get<bool>();
    };
    auto get_string = [&](std::string& field) {
      if (!value.is_string())
        throw Error(
            fmt::format("config: {}: '{}' must be a string (got {})", source, key, value.dump()));
      field = value.get<std::string>();
    };
    if (key == "vocab_size")
      get_int(c.vocab_size);
    else if (key == "hidden_size")
      get_int(c.hidden_size);
    else if (key == "num_attention_heads")
      get_int(c.num_attention_heads);
    else if (key == "num_hidden_layers")
      get_int(c.num_hidden_layers);
    else if (key == "intermediate_size")
      get_int(c.intermediate_size);
    else if (key == "hidden_dropout_prob")
      get_double(c.hidden_dropout_prob);
    else if (key == "attention_probs_dropout_prob")
      get_double(c.attention_probs_dropout_prob);
    else if (key == "max_position_embeddings")
      get_int(c.max_position_embeddings);
    else if (key == "layer_norm_eps")
      get_double(c.layer_norm_eps);
    else if (key == "num_labels")
      get_int(c.num_labels);
    else if (key == "hidden_act")
      get_string(c.hidden_act);
    else if (key == "pad_token_id")
      get_int(c.pad_token_id);
    else if (key == "position_embedding_type")
      get_string(c.position_embedding_type);
    else if (key == "tie_word_embeddings")
      get_bool(c.tie_word_embeddings);
    else if (key == "initializer_range")
      get_double(c.initializer_range);
    else if (key == "pre_layer_norm")
      get_bool(c.pre_layer_norm);
    else if (key == "final_layer_norm")
      get_bool(c.final_layer_norm);
    else if (key == "embedding_layer_norm")
      get_bool(c.embedding_layer_norm);
    else if (key == "fused_attention")
      get_bool(c.fused_attention);
    else if (key == "num_decoder_layers")
      get_int(c.num_decoder_layers);
    else if (key == "target_vocab_size")
      get_int(c.target_vocab_size);
    else if (key == "share_embeddings")
      get_bool(c.share_embeddings);
    else if (key == "bias")
      get_bool(c.bias);
    else if (!ignored.count(key))
      throw Error(fmt::format("config: {}: unknown key '{}'", source, key));
  }
  if (j.contains("id2label") && !j.contains("num_labels") && j["id2label"].is_object())
    c.num_labels = static_cast<int64_t>(j["id2label"].size());
  try {
    c.validate();
  } catch (const Error& e) {
    throw Error(fmt::format("{} (in {})", e.what(), source));
  }
  return c;
}

TransformerConfig TransformerConfig::from_json_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw Error(fmt::format("config: cannot open {}", path));
  std::stringstream ss;
  ss << f.rdbuf();
  return from_json(ss.str(), path);
}

std::string TransformerConfig::to_json() const {
  nlohmann::ordered_json j;
  j["vocab_size"] = vocab_size;
  j["hidden_size"] = hidden_size;
  j["num_attention_heads"] = num_attention_heads;
  j["num_hidden_layers"] = num_hidden_layers;
  j["intermediate_size"] = intermediate_size;
  j["hidden_dropout_prob"] = hidden_dropout_prob;
  j["attention_probs_dropout_prob"] = attention_probs_dropout_prob;
  j["max_position_embeddings"] = max_position_embeddings;
  j["layer_norm_eps"] = layer_norm_eps;
  j["num_labels"] = num_labels;
  j["hidden_act"] = hidden_act;
  j["pad_token_id"] = pad_token_id;
  j["position_embedding_type"] = position_embedding_type;
  j["tie_word_embeddings"] = tie_word_embeddings;
  j["initializer_range"] = initializer_range;
  j["pre_layer_norm"] = pre_layer_norm;
  j["final_layer_norm"] = final_layer_norm;
  j["embedding_layer_norm"] = embedding_layer_norm;
  j["fused_attention"] = fused_attention;
  j["num_decoder_layers"] = num_decoder_layers;
  j["target_vocab_size"] = target_vocab_size;
  j["share_embeddings"] = share_embeddings;
  j["bias"] = bias;
  return j.dump(2) + "\n";
}

}  // namespace anatomy::models
