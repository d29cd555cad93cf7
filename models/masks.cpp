#include "models/masks.hpp"
#include <fmt/format.h>

namespace anatomy::models {

Tensor causal_mask(int64_t Tq, int64_t Tk) {
  if (Tk < 0) Tk = Tq;
  return tril(ones({Tq, Tk}), Tk - Tq);
}

Tensor padding_mask(const Tensor& ids, int64_t pad_id) {
  if (ids.dtype() != kInt64 || ids.dim() != 2)
    throw Error(
        fmt::format("padding_mask: expected int64 ids [batch, seq], got {}", ids.shape().str()));
  return ne(ids.to(kFloat32), full({}, static_cast<float>(pad_id))).unsqueeze(1);
}

Tensor combine_masks(const Tensor& a, const Tensor& b) {
  if (!a.defined()) return b;
  if (!b.defined()) return a;
  return mul(a, b);
}

}  // namespace anatomy::models
