#include "models/embeddings.hpp"

#include "models/registry.hpp"

namespace anatomy::models {

Embeddings::Embeddings(const TransformerConfig& c, int64_t vocab)
    : vocab_size(vocab > 0 ? vocab : c.vocab_size), max_positions(c.max_position_embeddings) {
  token_embeddings = register_module("token_embeddings",
                                     std::make_shared<nn::Embedding>(vocab_size, c.hidden_size));
  if (auto p = make_position_embedding(c))
    position_embeddings = register_module("position_embeddings", p);
  if (c.embedding_layer_norm) layer_norm = register_module("layer_norm", make_norm(c));
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
  Tensor x = token_embeddings->forward(input_ids);  // (B, T, E)
  if (position_embeddings) {
    Tensor position_ids =
        arange(static_cast<double>(start), static_cast<double>(start + T)).unsqueeze(0);
    x = x + position_embeddings->forward(position_ids);  // + (1, T, E)
  }
  return dropout->forward(layer_norm ? layer_norm->forward(x) : x);
}

}  // namespace anatomy::models
