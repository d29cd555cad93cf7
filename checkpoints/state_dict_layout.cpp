#include "checkpoints/state_dict_layout.hpp"

#include <fmt/format.h>

#include <cmath>

#include "checkpoints/bert_checkpoint.hpp"

namespace anatomy::checkpoints {

using namespace anatomy::models;

namespace {

bool ends_with(const std::string& s, const std::string& suffix) { return s.ends_with(suffix); }

}  // namespace

nn::StateDict to_fused_layout(const nn::StateDict& state, int64_t H) {
  nn::StateDict out;
  const std::string marker = "heads.0.q.weight";
  std::vector<std::string> prefixes;
  for (const auto& [k, t] : state)
    if (ends_with(k, marker)) prefixes.push_back(k.substr(0, k.size() - marker.size()));
  for (const auto& [k, t] : state) {
    bool per_head = false;
    for (const auto& p : prefixes) per_head = per_head || (k.starts_with(p + "heads."));
    if (!per_head) out[k] = t;
  }
  for (const auto& p : prefixes)
    for (const std::string kind : {"weight", "bias"}) {
      if (kind == "bias" && !state.contains(p + "heads.0.q.bias")) continue;  // bias-free layers
      std::vector<Tensor> rows;
      for (const std::string proj : {"q", "k", "v"})
        for (int64_t h = 0; h < H; ++h) {
          const std::string key = fmt::format("{}heads.{}.{}.{}", p, h, proj, kind);
          auto it = state.find(key);
          if (it == state.end())
            throw Error(
                fmt::format("to_fused_layout: '{}' is missing (expected {} heads)", key, H));
          rows.push_back(it->second);
        }
      out[p + "qkv." + kind] = cat(rows, 0);
    }
  return out;
}

nn::StateDict to_book_layout(const nn::StateDict& state, int64_t H) {
  nn::StateDict out;
  for (const auto& [k, t] : state) {
    const bool w = ends_with(k, "qkv.weight"), b = ends_with(k, "qkv.bias");
    if (!w && !b) {
      out[k] = t;
      continue;
    }
    const std::string prefix = k.substr(0, k.size() - (w ? 10 : 8));
    const int64_t E = t.size(0) / 3, D = E / H;
    if (t.size(0) != 3 * E || E % H != 0)
      throw Error(fmt::format("to_book_layout: '{}' of shape {} does not split into 3 x {} heads",
                              k, t.shape().str(), H));
    const char* projections[] = {"q", "k", "v"};
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t h = 0; h < H; ++h)
        out[fmt::format("{}heads.{}.{}.{}", prefix, h, projections[j], w ? "weight" : "bias")] =
            t.narrow(0, j * E + h * D, D).contiguous();
  }
  return out;
}

nn::LoadResult load_state(nn::Module& model, nn::StateDict state, const TransformerConfig& config,
                          bool strict) {
  if (is_bert_checkpoint(state)) {
    if (config.pre_layer_norm)
      throw Error(
          "load_state: these are Hugging Face BERT weights, whose layers normalize after the "
          "residual sum; build the model from bert_architecture(config, weights) (post-LN, "
          "pooler), not a pre-LN config");
    state = from_bert_checkpoint(state, config).state;
  }
  bool file_fused = false, file_book = false;
  for (const auto& [k, t] : state) {
    file_fused = file_fused || ends_with(k, "qkv.weight");
    file_book = file_book || ends_with(k, "heads.0.q.weight");
  }
  const bool fused = config.attention_type == "fused";
  if (fused && file_book) state = to_fused_layout(state, config.num_attention_heads);
  if (config.attention_type == "book" && file_fused)
    state = to_book_layout(state, config.num_attention_heads);
  return model.load_state_dict(state, strict);
}

namespace {
bool nonfinite_allowed = false;
}

void allow_nonfinite(bool allow) { nonfinite_allowed = allow; }

void check_finite(const nn::StateDict& state, const std::string& source) {
  if (nonfinite_allowed) return;
  for (const auto& [name, t] : state) {
    if (t.dtype() != Dtype::Float32) continue;
    const Tensor values = t.contiguous();
    const float* p = values.data();
    const int64_t n = values.numel();  // counted once: every load walks every weight
    int64_t bad = 0;
    for (int64_t i = 0; i < n; ++i) bad += std::isfinite(p[i]) ? 0 : 1;
    if (bad > 0)
      throw Error(fmt::format(
          "{}: the tensor '{}' holds {} NaN or infinite value(s) of {}: such weights compute "
          "garbage (--allow-nonfinite loads them anyway)",
          source, name, bad, n));
  }
}

nn::LoadResult load_weights(nn::Module& model, const std::string& path,
                            const TransformerConfig& config, bool strict) {
  nn::StateDict state = load_safetensors(path).tensors;
  check_finite(state, path);
  return load_state(model, std::move(state), config, strict);
}

}  // namespace anatomy::checkpoints
