// Checker of exercise 07.
#include "common/checker.hpp"
#include "exercise.hpp"

using namespace anatomy;

int main() {
  exercise::Checker c("07_decoder_layer");
  const auto config = exercise::golden_layer_config();
  DecoderLayer layer(config);
  c.load_golden_weights(layer);
  const Tensor causal = c.golden("causal"), memory_mask = c.golden("memory_mask");
  const Tensor want = c.golden("out");
  Tensor x = c.golden("x").requires_grad_(), memory = c.golden("memory").requires_grad_(), out;
  if (!c.run("forward runs", [&] { out = layer.forward(x, memory, causal, memory_mask); }))
    return c.finish();
  // A later target token must not change an earlier output.
  Tensor changed = x.detach().clone();
  {
    NoGradGuard no_grad;
    changed.narrow(1, 3, 1).copy_(randn({2, 1, 32}));
    Tensor later = layer.forward(changed, memory.detach(), causal, memory_mask);
    if (!c.check(exercise::close(later.narrow(1, 0, 3), out.detach().narrow(1, 0, 3), 1e-5f),
                 "no output depends on a later target token"))
      c.diagnose(
          "a future token changed an earlier output: pass the causal mask to "
          "self-attention (self_mask), so each position sees only the past");
    // And every output must depend on the source: memory reaches it through cross-attention.
    Tensor other = layer.forward(x.detach(), randn(memory.shape()), causal, memory_mask);
    if (!c.check(!exercise::close(other, out.detach(), 1e-3f),
                 "the output depends on the encoder's output (memory)"))
      c.diagnose(
          "your output does not depend on memory at all: cross-attention takes its "
          "queries from the decoder, but its keys and values come from the encoder's "
          "output");
  }
  if (!c.check(exercise::close(out, want), "the output equals the book-style PyTorch layer",
               exercise::compare(out, want))) {
    NoGradGuard no_grad;
    const Tensor x0 = x.detach(), m = memory.detach();
    const Tensor n = layer.layer_norm_1->forward(x0);
    Tensor h = x0 + layer.self_attention->forward(n, n, causal);
    h = h + layer.cross_attention->forward(layer.layer_norm_2->forward(h), m, Tensor());
    if (exercise::close(out, h + layer.feed_forward->forward(layer.layer_norm_3->forward(h)),
                        1e-3f))
      c.diagnose(
          "your cross-attention ignores memory_mask: it gives weight to the source's padding. "
          "Pass memory_mask to cross_attention");
    return c.finish();
  }
  if (!c.run("backward runs", [&] { (out * c.golden("grad_out")).sum().backward(); }))
    return c.finish();
  c.check(exercise::close(x.grad(), c.golden("grad_x")), "dL/dx equals PyTorch's",
          exercise::compare(x.grad(), c.golden("grad_x")));
  c.check(exercise::close(memory.grad(), c.golden("grad_memory")), "dL/dmemory equals PyTorch's",
          exercise::compare(memory.grad(), c.golden("grad_memory")));
  c.check_parameter_grads(layer);
  return c.finish();
}
