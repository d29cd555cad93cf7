// expect: apply output_linear
#include "exercise.hpp"

using namespace anatomy;

Tensor MultiHeadAttention::forward(const Tensor& query_states, const Tensor& key_value_states,
                                   const Tensor& mask) {
  std::vector<Tensor> outputs;
  for (size_t h = 0; h < heads->size(); ++h)
    outputs.push_back(
        heads->at<models::AttentionHead>(h)->forward(query_states, key_value_states, mask));
  return cat(outputs, -1);
}
