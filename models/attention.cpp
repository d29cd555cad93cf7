#include "models/attention.hpp"

namespace anatomy::models {

void check_attention_inputs(const std::string& who, const Tensor& q, const Tensor& kv, int64_t E) {
  for (const Tensor* t : {&q, &kv})
    if (t->dim() != 3 || t->size(-1) != E)
      throw Error(fmt::format("{}: expected hidden states [batch, seq, {}], got {}", who, E,
                              t->shape().str()));
  if (q.size(0) != kv.size(0))
    throw Error(fmt::format("{}: query batch {} and key/value batch {} differ", who, q.size(0),
                            kv.size(0)));
}

Tensor per_head(const Tensor& mask) {
  return mask.defined() && mask.dim() == 3 ? mask.unsqueeze(1) : mask;
}

}  // namespace anatomy::models
