// expect: the paper's post-LN
#include "exercise.hpp"

using namespace anatomy;

Tensor EncoderLayer::forward(const Tensor& x, const Tensor& mask) {
  const Tensor h = layer_norm_1->forward(x + attention->forward(x, x, mask));
  return layer_norm_2->forward(h + feed_forward->forward(h));
}
