#include "models/rotary_positions.hpp"

#include <cmath>

namespace anatomy::models {

RotaryPositions::RotaryPositions(const TransformerConfig& config)
    : head_dim(config.head_dim()), theta(config.rope_theta) {
  for (int64_t d = 0; d < head_dim / 2; ++d)
    inv_freq.push_back(
        std::pow(theta, -2.0 * static_cast<double>(d) / static_cast<double>(head_dim)));
}

Tensor RotaryPositions::encode(const Tensor& x, int64_t start) {
  const int64_t T = x.size(-2), D = x.size(-1), half = D / 2;
  if (D != head_dim || D % 2 != 0)
    throw Error(fmt::format("RotaryPositions: expected an even head size {}, got vectors of {}",
                            head_dim, D));
  // cos and sin of the angles [T, D]: position p, dimension d (and d + D/2) turn by
  // p · inv_freq[d]. Computed in double, as constants: no gradient flows into them.
  Tensor cos_t = empty({T, D}), sin_t = empty({T, D});
  float *c = cos_t.data(), *s = sin_t.data();
  for (int64_t t = 0; t < T; ++t)
    for (int64_t d = 0; d < half; ++d) {
      const double angle = static_cast<double>(start + t) * inv_freq[static_cast<size_t>(d)];
      c[t * D + d] = c[t * D + d + half] = static_cast<float>(std::cos(angle));
      s[t * D + d] = s[t * D + d + half] = static_cast<float>(std::sin(angle));
    }
  const Tensor rotated = cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
  return x * cos_t + rotated * sin_t;
}

std::string RotaryPositions::extra_repr() const {
  return fmt::format("head_dim={}, theta={}", head_dim, theta);
}

}  // namespace anatomy::models
