#include "models/sinusoidal_positional_embedding.hpp"

#include <cmath>

namespace anatomy::models {

Tensor sinusoidal_positions(int64_t max_positions, int64_t dim) {
  Tensor pe = empty({max_positions, dim});
  float* p = pe.data();
  for (int64_t pos = 0; pos < max_positions; ++pos)
    for (int64_t i = 0; i < dim; i += 2) {
      // Computed in double, like the Annotated Transformer's float64 div_term before its cast.
      const double angle = static_cast<double>(pos) /
                           std::pow(10000.0, static_cast<double>(i) / static_cast<double>(dim));
      p[pos * dim + i] = static_cast<float>(std::sin(angle));
      if (i + 1 < dim) p[pos * dim + i + 1] = static_cast<float>(std::cos(angle));
    }
  return pe;
}

SinusoidalPositionalEmbedding::SinusoidalPositionalEmbedding(int64_t max_positions, int64_t dim)
    : table(sinusoidal_positions(max_positions, dim)) {}

Tensor SinusoidalPositionalEmbedding::forward(const Tensor& position_ids) {
  return embedding(position_ids, table);
}

std::string SinusoidalPositionalEmbedding::extra_repr() const {
  return fmt::format("{}, {}", table.size(0), table.size(1));
}

}  // namespace anatomy::models
