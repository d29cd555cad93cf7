#include "models/init_weights.hpp"

#include <cmath>
#include <set>

#include "models/feed_forward.hpp"
#include "models/fused_multi_head_attention.hpp"
#include "models/multi_head_attention.hpp"
#include "models/relative_positions.hpp"
#include "models/swiglu_feed_forward.hpp"

namespace anatomy::models {

void init_weights(nn::Module& module, double std, int64_t num_layers) {
  const auto normal_std = static_cast<float>(std);
  const auto residual_std =
      num_layers > 0 ? static_cast<float>(std / std::sqrt(2.0 * static_cast<double>(num_layers)))
                     : normal_std;
  // The Linear layers that write into the residual stream, found by the type of their owner.
  std::set<const nn::Module*> residual;
  module.apply([&](nn::Module& m) {
    if (auto* a = dynamic_cast<MultiHeadAttention*>(&m)) residual.insert(a->output_linear.get());
    if (auto* a = dynamic_cast<FusedMultiHeadAttention*>(&m))
      residual.insert(a->output_linear.get());
    if (auto* f = dynamic_cast<FeedForward*>(&m)) residual.insert(f->linear_2.get());
    if (auto* f = dynamic_cast<SwiGLUFeedForward*>(&m)) residual.insert(f->down_proj.get());
  });
  std::set<const TensorImpl*> done;  // tied weights: the first holder initializes them
  auto first_time = [&](const Tensor& t) { return t.defined() && done.insert(t.impl()).second; };
  module.apply([&](nn::Module& m) {
    if (auto* linear = dynamic_cast<nn::Linear*>(&m)) {
      if (first_time(linear->weight))
        nn::init::normal_(linear->weight, 0.0f, residual.count(linear) ? residual_std : normal_std);
      if (first_time(linear->bias)) nn::init::zeros_(linear->bias);
    } else if (auto* embedding = dynamic_cast<nn::Embedding*>(&m)) {
      if (first_time(embedding->weight)) {
        nn::init::normal_(embedding->weight, 0.0f, normal_std);
        if (embedding->padding_idx) {  // the padding row stays zero, as torch's Embedding keeps it
          NoGradGuard no_grad;
          embedding->weight.select(0, *embedding->padding_idx).fill_(0.0f);
        }
      }
    } else if (auto* norm = dynamic_cast<nn::LayerNorm*>(&m)) {
      if (first_time(norm->weight)) nn::init::ones_(norm->weight);
      if (first_time(norm->bias)) nn::init::zeros_(norm->bias);
    } else if (auto* rms = dynamic_cast<nn::RMSNorm*>(&m)) {
      if (first_time(rms->weight)) nn::init::ones_(rms->weight);
    } else if (auto* relative = dynamic_cast<RelativePositions*>(&m)) {
      if (first_time(relative->weight)) nn::init::normal_(relative->weight, 0.0f, normal_std);
    }
  });
}

}  // namespace anatomy::models
