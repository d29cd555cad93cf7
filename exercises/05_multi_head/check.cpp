// Checker of exercise 05.
#include "common/checker.hpp"
#include "exercise.hpp"

using namespace anatomy;

int main() {
  exercise::Checker c("05_multi_head");
  MultiHeadAttention mha(32, 4);
  c.load_golden_weights(mha);
  const Tensor want = c.golden("out"), r = c.golden("grad_out");
  Tensor q = c.golden("query").requires_grad_(), kv = c.golden("key_value").requires_grad_(), out;
  if (!c.run("forward runs", [&] { out = mha.forward(q, kv); })) return c.finish();
  if (!c.check(exercise::close(out, want), "the output equals the book's PyTorch code",
               exercise::compare(out, want))) {
    if (out.defined() && out.dim() == 3 && out.size(1) != want.size(1))
      c.diagnose(
          fmt::format("your output has shape {} for queries {}: concatenate the heads along "
                      "the last dimension, so that {} heads of {} make {} again",
                      out.shape().str(), q.shape().str(), mha.heads->size(),
                      want.size(2) / static_cast<int64_t>(mha.heads->size()), want.size(2)));
    else if (out.defined()) {
      NoGradGuard no_grad;
      std::vector<Tensor> outputs;
      for (size_t h = 0; h < mha.heads->size(); ++h)
        outputs.push_back(mha.heads->at<models::AttentionHead>(h)->forward(q, kv));
      std::vector<Tensor> self_outputs;  // each head attending to the queries themselves
      for (size_t h = 0; h < mha.heads->size(); ++h)
        self_outputs.push_back(mha.heads->at<models::AttentionHead>(h)->forward(q, q));
      if (exercise::close(out, cat(outputs, -1)))
        c.diagnose(
            "your output is the heads' outputs side by side: apply output_linear to mix "
            "them (each head only saw its own slice)");
      else if (exercise::close(out, mha.output_linear->forward(cat(self_outputs, -1))))
        c.diagnose(
            "your heads attend to query_states only: pass key_value_states to each head as its "
            "keys and values (they differ in cross-attention)");
    }
    return c.finish();
  }
  if (!c.run("backward runs", [&] { (out * r).sum().backward(); })) return c.finish();
  c.check(exercise::close(q.grad(), c.golden("grad_query")), "dL/dquery equals PyTorch's",
          exercise::compare(q.grad(), c.golden("grad_query")));
  c.check(exercise::close(kv.grad(), c.golden("grad_key_value")), "dL/dkey_value equals PyTorch's",
          exercise::compare(kv.grad(), c.golden("grad_key_value")));
  c.check_parameter_grads(mha);
  return c.finish();
}
