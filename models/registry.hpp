// The registry: the parts a Transformer layer is built from, chosen by name. A config names
// each part (norm_type, ffn_type, attention_type, position_embedding_type; see config.hpp), the
// layers ask the registry for it, and so config.json, the C++ API and `anatomy train --set`
// all reach a part registered here, the built-in ones and yours alike.
//
// Adding a part is one class and one registration line, from any source file:
//
//   static const bool registered = anatomy::models::norms().add(
//       "rms_norm", [](const TransformerConfig& c) { return std::make_shared<RMSNorm>(c); });
//
// (A library's own built-in parts are registered in registry.cpp, so the linker keeps them.)
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "models/attention.hpp"
#include "models/attention_positions.hpp"
#include "models/config.hpp"

namespace anatomy::models {

template <typename Entry>
class Registry {
 public:
  explicit Registry(std::string field) : field_(std::move(field)) {}
  // Registers `name`. Returns true, so that registering can initialize a static variable.
  bool add(const std::string& name, Entry entry) {
    if (name.empty()) throw Error(fmt::format("{}: a registered name must not be empty", field_));
    if (entries_.count(name))
      throw Error(fmt::format("{}: '{}' is registered already", field_, name));
    entries_.emplace(name, std::move(entry));
    return true;
  }
  bool contains(const std::string& name) const { return entries_.count(name) > 0; }
  const Entry& at(const std::string& name) const {
    auto it = entries_.find(name);
    if (it == entries_.end())
      throw Error(fmt::format("{}: unknown name '{}' (registered: {})", field_, name,
                              fmt::join(names(), ", ")));
    return it->second;
  }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& [name, _] : entries_) out.push_back(name);
    return out;
  }

 private:
  std::string field_;
  std::map<std::string, Entry> entries_;
};

// A norm or a feed-forward part: a module mapping [B, T, E] to [B, T, E].
using PartFactory = std::function<std::shared_ptr<nn::Module>(const TransformerConfig&)>;
// An attention part; `positions` is the scheme acting inside attention (null for none, and for
// cross-attention).
using AttentionFactory = std::function<std::shared_ptr<Attention>(
    const TransformerConfig&, std::shared_ptr<AttentionPositions> positions)>;

// A position scheme: where it acts, and what it needs of the config.
struct PositionScheme {
  // Added to the token embeddings: a module mapping position ids [1, T] to [1, T, E]
  // (absolute: an Embedding). Empty for schemes that act inside attention.
  PartFactory embedding;
  // Held by each self-attention module (rotary, ALiBi, relative). Empty for none.
  std::function<std::shared_ptr<AttentionPositions>(const TransformerConfig&)> attention;
  // Throws if the config cannot use this scheme (e.g. an odd hidden_size for sinusoidal).
  std::function<void(const TransformerConfig&)> check;
};

Registry<PartFactory>& norms();            // norm_type: layer_norm
Registry<PartFactory>& feed_forwards();    // ffn_type: feed_forward
Registry<AttentionFactory>& attentions();  // attention_type: book, fused
Registry<PositionScheme>& positions();     // position_embedding_type: absolute, sinusoidal

// The parts a config names.
std::shared_ptr<nn::Module> make_norm(const TransformerConfig& config);
std::shared_ptr<nn::Module> make_feed_forward(const TransformerConfig& config);
// Self-attention gets the config's in-attention position scheme, cross-attention none.
std::shared_ptr<Attention> make_attention(const TransformerConfig& config,
                                          bool self_attention = true);
// The module adding positions to the token embeddings, or null.
std::shared_ptr<nn::Module> make_position_embedding(const TransformerConfig& config);

}  // namespace anatomy::models
