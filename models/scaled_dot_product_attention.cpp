#include "models/scaled_dot_product_attention.hpp"

#include <cmath>
#include <limits>

namespace anatomy::models {

AttentionOutput scaled_dot_product_attention(const Tensor& query, const Tensor& key,
                                             const Tensor& value, const Tensor& mask,
                                             float dropout_p, bool training) {
  if (query.dim() < 2 || key.dim() < 2 || value.dim() < 2)
    throw Error(
        fmt::format("scaled_dot_product_attention: query, key and value need at least 2 "
                    "dims (got {}, {}, {})",
                    query.shape().str(), key.shape().str(), value.shape().str()));
  if (query.size(-1) != key.size(-1))
    throw Error(
        fmt::format("scaled_dot_product_attention: query {} and key {} must have the same "
                    "last dim",
                    query.shape().str(), key.shape().str()));
  if (key.size(-2) != value.size(-2))
    throw Error(
        fmt::format("scaled_dot_product_attention: key {} and value {} must have the same "
                    "number of positions",
                    key.shape().str(), value.shape().str()));
  const float scale = std::sqrt(static_cast<float>(query.size(-1)));
  // (..., Tq, D) x (..., D, Tk) -> (..., Tq, Tk)
  Tensor scores = matmul(query, key.transpose(-2, -1)) / scale;
  Tensor masked_out;  // 1 where the key is hidden
  if (mask.defined()) {
    Shape want = scores.shape();
    if (broadcast_shapes("scaled_dot_product_attention", mask.shape(), want) != want)
      throw Error(
          fmt::format("scaled_dot_product_attention: mask {} does not broadcast to the "
                      "scores {}",
                      mask.shape().str(), want.str()));
    masked_out = eq(mask.to(kFloat32), 0.0f);
    scores = scores.masked_fill(masked_out, -std::numeric_limits<float>::infinity());
  }
  Tensor weights = softmax(scores, -1);
  if (mask.defined()) {
    // A row with every key masked is all -inf, which softmax turns into NaN; make it zeros.
    Tensor visible = sum(expand(rsub(1.0f, masked_out), weights.shape()), {-1}, true);
    Tensor dead = eq(visible, 0.0f);
    if (dead.sum().item() > 0) weights = weights.masked_fill(dead, 0.0f);
  }
  if (training && dropout_p > 0.0f) weights = dropout(weights, dropout_p, true);
  // (..., Tq, Tk) x (..., Tk, Dv) -> (..., Tq, Dv)
  return {matmul(weights, value), weights};
}

}  // namespace anatomy::models
