// ALiBi (Press et al., 2022): no position embeddings at all; instead each head h adds
// -slope_h · |i - j| to the score of query i and key j, so attention fades with distance at a
// rate that differs per head. It acts inside attention, so it is an AttentionPositions.
#pragma once

#include <cmath>
#include <models/models.hpp>

class ALiBi : public anatomy::models::AttentionPositions {
 public:
  explicit ALiBi(const anatomy::models::TransformerConfig& config)
      : slopes(head_slopes(config.num_attention_heads)) {}

  // The bias [1, H, Tq, Tk]; query i sits at position q_start + i (a KV cache holds the rest).
  anatomy::Tensor bias(const anatomy::Tensor& q, const anatomy::Tensor& k,
                       int64_t q_start) override {
    const int64_t H = q.size(1), Tq = q.size(2), Tk = k.size(2);
    anatomy::Tensor b = anatomy::empty({1, H, Tq, Tk});
    float* p = b.data();
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Tq; ++i)
        for (int64_t j = 0; j < Tk; ++j)
          *p++ = -slopes[h] * static_cast<float>(std::abs(q_start + i - j));
    return b;
  }
  std::string name() const override { return "alibi"; }

  // The paper's slopes: for H a power of 2, 2^(-8/H), 2^(-16/H), ..., 2^(-8); otherwise those
  // of the nearest smaller power of 2, then every other slope of the next power of 2.
  static std::vector<float> head_slopes(int64_t H) {
    auto power_of_2 = [](int64_t n) {
      std::vector<float> s;
      for (int64_t h = 1; h <= n; ++h)
        s.push_back(static_cast<float>(std::pow(2.0, -8.0 * static_cast<double>(h) / n)));
      return s;
    };
    int64_t n = 1;
    while (n * 2 <= H) n *= 2;
    std::vector<float> s = power_of_2(n), extra = power_of_2(2 * n);
    for (int64_t i = 0; static_cast<int64_t>(s.size()) < H; i += 2) s.push_back(extra[i]);
    return s;
  }
  std::vector<float> slopes;
};

// The one registration line: `"position_embedding_type": "alibi"` now builds it.
inline const bool alibi_registered = anatomy::models::positions().add(
    "alibi", {.attention = [](const auto& config) { return std::make_shared<ALiBi>(config); }});
