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

void set_output_attentions(nn::Module& model, bool on) {
  model.apply([on](nn::Module& m) {
    if (auto* a = dynamic_cast<Attention*>(&m)) a->output_attentions = on;
  });
}

Tensor kept_attention(const Attention& attention, const std::string& who) {
  if (!attention.last_attention.defined())
    throw Error(fmt::format(
        "{}: no attention weights were kept; call set_output_attentions(model, true) before the "
        "forward (Hugging Face's output_attentions)",
        who));
  return attention.last_attention;
}

Tensor per_head(const Tensor& mask) {
  return mask.defined() && mask.dim() == 3 ? mask.unsqueeze(1) : mask;
}

}  // namespace anatomy::models
