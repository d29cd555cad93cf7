#include "models/relative_positions.hpp"

#include <cmath>

namespace anatomy::models {

RelativePositions::RelativePositions(const TransformerConfig& config, bool key_query_)
    : max_positions(config.max_position_embeddings), key_query(key_query_) {
  // nn.Embedding's default init, N(0, 1); init_weights() makes it N(0, initializer_range).
  weight = register_parameter("weight", empty({2 * max_positions - 1, config.head_dim()}));
  nn::init::normal_(weight);
}

Tensor RelativePositions::distance_vectors(int64_t q_start, int64_t Tq, int64_t Tk) const {
  if (q_start + Tq > max_positions || Tk > max_positions)
    throw Error(fmt::format(
        "RelativePositions: positions up to {} and {} keys, but distance_embedding holds "
        "distances for max_position_embeddings = {}",
        q_start + Tq, Tk, max_positions));
  std::vector<int64_t> rows;
  for (int64_t i = 0; i < Tq; ++i)
    for (int64_t j = 0; j < Tk; ++j) rows.push_back(q_start + i - j + max_positions - 1);
  return embedding(from_vector(rows, {Tq, Tk}), weight);
}

Tensor RelativePositions::bias(const Tensor& q, const Tensor& k, int64_t q_start) {
  const int64_t B = q.size(0), H = q.size(1), Tq = q.size(2), Tk = k.size(2), D = q.size(3);
  const Tensor r = distance_vectors(q_start, Tq, Tk);  // [Tq, Tk, D]
  // q_i · r_(i-j) for every head at once, as one batched product over the query positions:
  // [Tq, B·H, D] x [Tq, D, Tk] -> [Tq, B·H, Tk] -> [B, H, Tq, Tk]
  Tensor scores = matmul(q.permute({2, 0, 1, 3}).reshape({Tq, B * H, D}), r.transpose(1, 2))
                      .reshape({Tq, B, H, Tk})
                      .permute({1, 2, 0, 3});
  if (key_query)  // k_j · r_(i-j): [Tk, B·H, D] x [Tk, D, Tq] -> [Tk, B·H, Tq] -> [B, H, Tq, Tk]
    scores = scores + matmul(k.permute({2, 0, 1, 3}).reshape({Tk, B * H, D}), r.permute({1, 2, 0}))
                          .reshape({Tk, B, H, Tq})
                          .permute({1, 2, 3, 0});
  return scores / std::sqrt(static_cast<float>(D));
}

std::string RelativePositions::extra_repr() const {
  return fmt::format("{}, {}, {}", weight.size(0), weight.size(1),
                     key_query ? "relative_key_query" : "relative_key");
}

}  // namespace anatomy::models
