#include "nn/embedding.hpp"

#include "nn/init.hpp"

namespace anatomy::nn {

Embedding::Embedding(int64_t num, int64_t dim, std::optional<int64_t> pad)
    : num_embeddings(num), embedding_dim(dim), padding_idx(pad) {
  if (padding_idx) {
    if (*padding_idx < -num || *padding_idx >= num)
      throw Error(fmt::format("Embedding: padding_idx {} must be within num_embeddings {}",
                              *padding_idx, num));
    if (*padding_idx < 0) *padding_idx += num;
  }
  weight = register_parameter("weight", empty({num, dim}));
  init::normal_(weight);
  if (padding_idx) {
    NoGradGuard no_grad;
    weight.select(0, *padding_idx).zero_();
  }
}

Tensor Embedding::forward(const Tensor& ids) { return embedding(ids, weight, padding_idx); }

std::string Embedding::extra_repr() const {
  std::string s = fmt::format("{}, {}", num_embeddings, embedding_dim);
  if (padding_idx) s += fmt::format(", padding_idx={}", *padding_idx);
  return s;
}

}  // namespace anatomy::nn
