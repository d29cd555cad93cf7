#include "models/alibi.hpp"

#include <cmath>

namespace anatomy::models {

ALiBi::ALiBi(const TransformerConfig& config) : slopes(head_slopes(config.num_attention_heads)) {}

std::vector<float> ALiBi::head_slopes(int64_t H) {
  auto power_of_2 = [](int64_t n) {
    std::vector<float> s;
    for (int64_t h = 1; h <= n; ++h)
      s.push_back(static_cast<float>(std::pow(2.0, -8.0 * static_cast<double>(h) / n)));
    return s;
  };
  int64_t n = 1;
  while (n * 2 <= H) n *= 2;
  std::vector<float> s = power_of_2(n), extra = power_of_2(2 * n);
  for (size_t i = 0; static_cast<int64_t>(s.size()) < H; i += 2) s.push_back(extra[i]);
  return s;
}

Tensor ALiBi::bias(const Tensor& q, const Tensor& k, int64_t q_start) {
  const int64_t H = q.size(1), Tq = q.size(2), Tk = k.size(2);
  if (H != static_cast<int64_t>(slopes.size()))
    throw Error(fmt::format("ALiBi: built for {} heads, got queries with {}", slopes.size(), H));
  Tensor b = empty({1, H, Tq, Tk});
  float* p = b.data();
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < Tq; ++i)
      for (int64_t j = 0; j < Tk; ++j)
        *p++ = -slopes[h] * static_cast<float>(std::abs(q_start + i - j));
  return b;
}

std::string ALiBi::extra_repr() const { return fmt::format("num_heads={}", slopes.size()); }

}  // namespace anatomy::models
