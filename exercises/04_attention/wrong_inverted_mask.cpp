// expect: mask == 0 means hidden
#include "exercise.hpp"

#include <cmath>

using namespace anatomy;

std::pair<Tensor, Tensor> scaled_dot_product_attention(const Tensor& q, const Tensor& k,
                                                       const Tensor& v, const Tensor& mask) {
  const float d_k = static_cast<float>(q.size(-1));
  Tensor scores = matmul(q, k.transpose(-2, -1)) / std::sqrt(d_k);
  if (mask.defined()) scores = masked_fill(scores, eq(mask, 1.0f), -INFINITY);
  Tensor weights = softmax(scores, -1);
  return {matmul(weights, v), weights};
}
