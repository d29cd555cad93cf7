// Exercise 05: fill in forward (see 05_multi_head.md beside this file).
// Check with
//   make exercise NAME=05_multi_head DIR=<the folder holding this file>
#include "exercise.hpp"

using namespace anatomy;

Tensor MultiHeadAttention::forward(const Tensor& query_states, const Tensor& key_value_states,
                                   const Tensor& mask) {
  // TODO: each head's output [B, Tq, head_dim]; concatenate them to [B, Tq, E]; output_linear.
  (void)query_states, (void)key_value_states, (void)mask;
  throw Error("not implemented yet: MultiHeadAttention::forward");
}
