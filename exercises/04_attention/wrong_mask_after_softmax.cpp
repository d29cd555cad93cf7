// expect: you applied the mask after the softmax
#include "exercise.hpp"

#include <cmath>

using namespace anatomy;

std::pair<Tensor, Tensor> scaled_dot_product_attention(const Tensor& q, const Tensor& k,
                                                       const Tensor& v, const Tensor& mask) {
  const float d_k = static_cast<float>(q.size(-1));
  Tensor scores = matmul(q, k.transpose(-2, -1)) / std::sqrt(d_k);
  Tensor weights = softmax(scores, -1);
  if (mask.defined()) weights = masked_fill(weights, eq(mask, 0.0f), 0.0f);
  return {matmul(weights, v), weights};
}
