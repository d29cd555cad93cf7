#include "models/scaled_dot_product_attention.hpp"

#include <fmt/format.h>
#include <cmath>
#include <limits>

namespace anatomy::models {

namespace {

void check_broadcast(const char* what, const Tensor& t, const Shape& scores) {
  bool fits = false;
  try {
    fits = broadcast_shapes("scaled_dot_product_attention", t.shape(), scores) == scores;
  } catch (const Error&) {
  }
  if (!fits)
    throw Error(
        fmt::format("scaled_dot_product_attention: {} {} does not broadcast to the "
                    "scores {}",
                    what, t.shape().str(), scores.str()));
}

}  // namespace

AttentionOutput scaled_dot_product_attention(const Tensor& query, const Tensor& key,
                                             const Tensor& value, const AttentionOptions& o) {
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
  if (o.bias.defined() && o.bias.dtype() != kFloat32)
    throw Error(fmt::format("scaled_dot_product_attention: the bias must be float32 (got {})",
                            dtype_name(o.bias.dtype())));
  const Shape lead(query.shape().begin(), query.shape().end() - 2);
  Shape scores_shape = broadcast_shapes("scaled_dot_product_attention", lead,
                                        Shape(key.shape().begin(), key.shape().end() - 2));
  scores_shape.insert(scores_shape.end(), {query.size(-2), key.size(-2)});
  if (o.bias.defined()) check_broadcast("bias", o.bias, scores_shape);
  if (o.mask.defined()) check_broadcast("mask", o.mask, scores_shape);
  auto same_lead = [&](const Tensor& t) {
    return Shape(t.shape().begin(), t.shape().end() - 2) == lead;
  };
  if (!o.need_weights && same_lead(key) && same_lead(value))
    return {flash_attention(query, key, value, {o.bias, o.mask, o.dropout_p, o.training}),
            Tensor()};

  const float scale = std::sqrt(static_cast<float>(query.size(-1)));
  // (..., Tq, D) x (..., D, Tk) -> (..., Tq, Tk)
  Tensor scores = matmul(query, key.transpose(-2, -1)) / scale;
  if (o.bias.defined()) scores = scores + o.bias;
  if (o.mask.defined())
    scores =
        scores.masked_fill(eq(o.mask.to(kFloat32), 0.0f), -std::numeric_limits<float>::infinity());
  Tensor dead;  // rows whose every score is -inf: they attend to nothing
  if (o.mask.defined() || o.bias.defined()) {
    dead = eq(amax(scores.detach(), {-1}, true), -std::numeric_limits<float>::infinity());
    if (dead.sum().item() > 0)
      // softmax of all -inf is NaN, and so would be its gradient: give those rows finite scores
      // (no gradient flows back through masked_fill's filled places), then zero their weights.
      scores = scores.masked_fill(dead, 0.0f);
    else
      dead = Tensor();
  }
  Tensor weights = softmax(scores, -1);
  if (dead.defined()) weights = weights.masked_fill(dead, 0.0f);
  if (o.training && o.dropout_p > 0.0f) weights = dropout(weights, o.dropout_p, true);
  // (..., Tq, Tk) x (..., Tk, Dv) -> (..., Tq, Dv)
  return {matmul(weights, value), weights};
}

}  // namespace anatomy::models
