#include "models/init_weights.hpp"

#include <cmath>

namespace anatomy::models {

void init_weights(nn::Module& module, double std, int64_t num_layers) {
  for (auto& [name, p] : module.named_parameters()) {
    Tensor t = p;
    const bool is_norm = name.find("layer_norm") != std::string::npos;
    if (name.ends_with(".bias") || name == "bias")
      nn::init::zeros_(t);
    else if (is_norm)
      nn::init::ones_(t);
    else if (num_layers > 0 &&
             (name.ends_with("output_linear.weight") || name.ends_with("linear_2.weight")))
      nn::init::normal_(t, 0.0f,
                        static_cast<float>(std / std::sqrt(2.0 * static_cast<double>(num_layers))));
    else
      nn::init::normal_(t, 0.0f, static_cast<float>(std));
  }
  // A padding row stays zero, as nn::Embedding(padding_idx) keeps it.
}

}  // namespace anatomy::models
