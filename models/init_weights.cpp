#include "models/init_weights.hpp"

namespace anatomy::models {

void init_weights(nn::Module& module, double std) {
  for (auto& [name, p] : module.named_parameters()) {
    Tensor t = p;
    const bool is_norm = name.find("layer_norm") != std::string::npos;
    if (name.ends_with(".bias") || name == "bias")
      nn::init::zeros_(t);
    else if (is_norm)
      nn::init::ones_(t);
    else
      nn::init::normal_(t, 0.0f, static_cast<float>(std));
  }
  // A padding row stays zero, as nn::Embedding(padding_idx) keeps it.
}

}  // namespace anatomy::models
