#include "models/embeddings.hpp"

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

Embeddings::Embeddings(const TransformerConfig& c, int64_t vocab)
    : vocab_size(vocab > 0 ? vocab : c.vocab_size), max_positions(c.max_position_embeddings) {
  token_embeddings = register_module("token_embeddings",
                                     std::make_shared<nn::Embedding>(vocab_size, c.hidden_size));
  if (c.position_embedding_type == "sinusoidal")
    sinusoidal = sinusoidal_positions(max_positions, c.hidden_size);
  else
    position_embeddings = register_module(
        "position_embeddings", std::make_shared<nn::Embedding>(max_positions, c.hidden_size));
  if (c.embedding_layer_norm)
    layer_norm = register_module(
        "layer_norm",
        std::make_shared<nn::LayerNorm>(Shape{c.hidden_size}, static_cast<float>(c.layer_norm_eps),
                                        true, c.bias));
  dropout = register_module(
      "dropout", std::make_shared<nn::Dropout>(static_cast<float>(c.hidden_dropout_prob)));
}

Tensor Embeddings::forward(const Tensor& input_ids, int64_t start) {
  if (input_ids.dtype() != kInt64 || input_ids.dim() != 2)
    throw Error(fmt::format("Embeddings: expected int64 token ids [batch, seq], got {} {}",
                            dtype_name(input_ids.dtype()), input_ids.shape().str()));
  const int64_t T = input_ids.size(1);
  if (start + T > max_positions)
    throw Error(
        fmt::format("Embeddings: a sequence of {} tokens (from position {}) is longer than "
                    "max_position_embeddings {}",
                    T, start, max_positions));
  for (int64_t id : input_ids.to_int_vector())
    if (id < 0 || id >= vocab_size)
      throw Error(
          fmt::format("Embeddings: token id {} is out of range for vocab_size {}", id, vocab_size));
  Tensor tokens = token_embeddings->forward(input_ids);  // (B, T, hidden)
  Tensor positions;
  if (position_embeddings) {
    Tensor position_ids =
        arange(static_cast<double>(start), static_cast<double>(start + T)).unsqueeze(0);
    positions = position_embeddings->forward(position_ids);  // (1, T, hidden)
  } else {
    positions = sinusoidal.narrow(0, start, T).unsqueeze(0);
  }
  Tensor sum = tokens + positions;
  return dropout->forward(layer_norm ? layer_norm->forward(sum) : sum);
}

}  // namespace anatomy::models
