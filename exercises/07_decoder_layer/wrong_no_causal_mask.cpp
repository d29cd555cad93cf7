// expect: pass the causal mask to self-attention
#include "exercise.hpp"

using namespace anatomy;

Tensor DecoderLayer::forward(const Tensor& x, const Tensor& memory, const Tensor& self_mask,
                             const Tensor& memory_mask) {
  (void)self_mask;
  Tensor n = layer_norm_1->forward(x);
  Tensor h = x + self_attention->forward(n, n, Tensor());
  h = h + cross_attention->forward(layer_norm_2->forward(h), memory, memory_mask);
  return h + feed_forward->forward(layer_norm_3->forward(h));
}
