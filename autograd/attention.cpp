// flash_attention: softmax(Q Kᵀ / √D + bias, masked) V, composed from the ops a student already
// knows, so its gradients come from theirs. The name is the fast kernel's (kernels/
// flash_attention.cpp), which computes the same in one node without holding the [..., Tq, Tk]
// weights, forward or backward.
//
// Dimension letters: Tq queries, Tk keys, D the size of a query and key, Dv of a value.
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "autograd/dispatch.hpp"
#include "autograd/engine.hpp"
#include "autograd/fused_kernels.hpp"
#include "autograd/ops.hpp"

namespace anatomy {

Tensor flash_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                       const FlashAttentionOptions& o) {
  for (const Tensor* t : {&query, &key, &value})
    if (!t->defined() || t->dtype() != Dtype::Float32 || t->dim() < 2)
      throw Error(
          "flash_attention: query, key and value must be float32 tensors of at least 2 dims");
  Shape lead(query.shape().begin(), query.shape().end() - 2);
  auto lead_of = [](const Tensor& t) { return Shape(t.shape().begin(), t.shape().end() - 2); };
  if (lead_of(key) != lead || lead_of(value) != lead || query.size(-1) != key.size(-1) ||
      key.size(-2) != value.size(-2))
    throw Error(fmt::format(
        "flash_attention: expected query [..., Tq, D], key [..., Tk, D] and value [..., Tk, Dv] "
        "with the same batch dims (got {}, {}, {})",
        query.shape().str(), key.shape().str(), value.shape().str()));
  if (o.dropout_p < 0.0f || o.dropout_p > 1.0f)
    throw Error(fmt::format(
        "flash_attention: dropout probability has to be between 0 and 1, but got {}", o.dropout_p));
  Shape scores_shape = lead;
  scores_shape.push_back(query.size(-2));
  scores_shape.push_back(key.size(-2));
  for (auto [what, t] : {std::pair{"bias", &o.bias}, std::pair{"mask", &o.mask}}) {
    if (!t->defined()) continue;
    bool fits = false;
    try {
      fits = broadcast_shapes("flash_attention", t->shape(), scores_shape) == scores_shape;
    } catch (const Error&) {
    }
    if (!fits)
      throw Error(fmt::format("flash_attention: {} {} does not broadcast to the scores {}", what,
                              t->shape().str(), scores_shape.str()));
  }
  if (o.bias.defined() && o.bias.dtype() != Dtype::Float32)
    throw Error("flash_attention: the bias must be float32");
  auto fast = fast_kernel<FlashAttentionKernel>("flash_attention");
  auto fast_backward = fast_kernel<FlashAttentionBackward>("flash_attention_backward");
  if (fast && fast_backward) {
    FlashAttentionSaved s = fast(query, key, value, o);
    return record(s.out, "ScaledDotProductFlashAttentionForCpuBackward0",
                  {query, key, value, o.bias},
                  [lse = s.lse, plan = s.plan, bias = o.bias, fast_backward](const Tensor& g) {
                    const bool db = bias.defined() && bias.requires_grad();
                    std::vector<Tensor> grads = fast_backward(g, lse, plan, db);
                    if (db) grads[3] = sum_to(grads[3], bias.shape());  // from the scores' shape
                    return grads;
                  });
  }

  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const float scale = 1.0f / std::sqrt(static_cast<float>(query.size(-1)));
  Tensor scores = mul(matmul(query, transpose(key, -2, -1)), scale);  // (..., Tq, D) x (..., D, Tk)
  if (o.bias.defined()) scores = add(scores, o.bias);
  if (o.mask.defined()) scores = masked_fill(scores, eq(o.mask, 0.0f), kNegInf);
  // A query whose every key is hidden has no distribution to take: its row of weights is 0. Its
  // scores become 0 first, so that softmax meets no row of -inf alone (which would give NaN).
  Tensor hidden = eq(amax(scores.detach(), {-1}, true), kNegInf);  // (..., Tq, 1)
  scores = where(hidden, zeros({}), scores);
  Tensor weights = masked_fill(softmax(scores, -1), hidden, 0.0f);
  weights = dropout(weights, o.dropout_p, o.training);
  return matmul(weights, value);  // (..., Tq, Tk) x (..., Tk, Dv)
}

}  // namespace anatomy
