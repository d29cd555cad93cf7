// RMSNorm (Zhang & Sennrich, 2019; LLaMA's norm): scale each hidden vector by the reciprocal of
// its root mean square, then by a learned gain. No mean is subtracted and there is no shift.
#pragma once

#include <models/models.hpp>

class RMSNorm : public anatomy::nn::Module {
 public:
  explicit RMSNorm(const anatomy::models::TransformerConfig& config)
      : eps(static_cast<float>(config.layer_norm_eps)) {
    weight = register_parameter("weight", anatomy::ones({config.hidden_size}));
  }
  // x [B, T, E] -> x / sqrt(mean(x²) + eps) * weight
  anatomy::Tensor forward(const anatomy::Tensor& x) override {
    return x * anatomy::rsqrt(anatomy::mean(x * x, {-1}, true) + eps) * weight;
  }
  float eps;
  anatomy::Tensor weight;
};

// The one registration line: `"norm_type": "rms_norm"` in a config.json now builds it.
// (inline: one registration however many files include this header)
inline const bool rms_norm_registered = anatomy::models::norms().add(
    "rms_norm", [](const auto& config) { return std::make_shared<RMSNorm>(config); });
