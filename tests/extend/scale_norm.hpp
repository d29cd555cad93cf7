// ScaleNorm (Nguyen & Salazar, 2019, "Transformers without Tears"): each hidden vector scaled to
// length g, one learned scalar for the whole layer (initialized to √E, the length a vector of
// unit-variance entries has). Cheaper than LayerNorm: one reduction and one parameter.
#pragma once

#include <cmath>
#include <models/models.hpp>

class ScaleNorm : public anatomy::nn::Module {
 public:
  explicit ScaleNorm(const anatomy::models::TransformerConfig& config)
      : eps(static_cast<float>(config.layer_norm_eps)) {
    g = register_parameter("g", anatomy::full({1}, std::sqrt(float(config.hidden_size))));
  }
  // x [B, T, E] -> g · x / sqrt(‖x‖² + eps)
  anatomy::Tensor forward(const anatomy::Tensor& x) override {
    return x * anatomy::rsqrt(anatomy::sum(x * x, {-1}, true) + eps) * g;
  }
  float eps;
  anatomy::Tensor g;
};

// The one registration line: `"norm_type": "scale_norm"` in a config.json now builds it.
// (inline: one registration however many files include this header)
inline const bool scale_norm_registered = anatomy::models::norms().add(
    "scale_norm", [](const auto& config) { return std::make_shared<ScaleNorm>(config); });
