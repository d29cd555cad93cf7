#include "models/embeddings.hpp"

#include "models/registry.hpp"

namespace anatomy::models {

Embeddings::Embeddings(const TransformerConfig& c, int64_t vocab)
    : vocab_size(vocab > 0 ? vocab : c.vocab_size), max_positions(c.max_position_embeddings) {
  token_embeddings = register_module("token_embeddings",
                                     std::make_shared<nn::Embedding>(vocab_size, c.hidden_size));
  if (auto p = make_position_embedding(c))
    position_embeddings = register_module("position_embeddings", p);
  if (c.type_vocab_size > 0)
    token_type_embeddings = register_module(
        "token_type_embeddings", std::make_shared<nn::Embedding>(c.type_vocab_size, c.hidden_size));
  if (c.embedding_layer_norm) layer_norm = register_module("layer_norm", make_norm(c));
  dropout = register_module(
      "dropout", std::make_shared<nn::Dropout>(static_cast<float>(c.hidden_dropout_prob)));
}

Tensor Embeddings::forward(const Tensor& input_ids, int64_t start, const Tensor& token_type_ids) {
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
  if (token_type_ids.defined() && !token_type_embeddings)
    throw Error(
        "Embeddings: token_type_ids were given, but the model has no token types "
        "(type_vocab_size 0)");
  if (token_type_embeddings) {
    Tensor types = token_type_ids.defined() ? token_type_ids : zeros(input_ids.shape(), kInt64);
    if (types.dtype() != kInt64 || types.shape() != input_ids.shape())
      throw Error(
          fmt::format("Embeddings: token_type_ids must be int64 {} like input_ids, got {} {}",
                      input_ids.shape().str(), dtype_name(types.dtype()), types.shape().str()));
    for (int64_t t : types.to_int_vector())
      if (t < 0 || t >= token_type_embeddings->num_embeddings)
        throw Error(fmt::format("Embeddings: token type {} is out of range for type_vocab_size {}",
                                t, token_type_embeddings->num_embeddings));
    x = x + token_type_embeddings->forward(types);  // + (B, T, E)
  }
  return dropout->forward(layer_norm ? layer_norm->forward(x) : x);
}

}  // namespace anatomy::models
