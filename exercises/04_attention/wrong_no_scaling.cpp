// expect: did you divide by sqrt(d_k)?
#include "exercise.hpp"

#include <cmath>

using namespace anatomy;

std::pair<Tensor, Tensor> scaled_dot_product_attention(const Tensor& q, const Tensor& k,
                                                       const Tensor& v, const Tensor& mask) {
  Tensor scores = matmul(q, k.transpose(-2, -1));
  if (mask.defined()) scores = masked_fill(scores, eq(mask, 0.0f), -INFINITY);
  Tensor weights = softmax(scores, -1);
  return {matmul(weights, v), weights};
}
