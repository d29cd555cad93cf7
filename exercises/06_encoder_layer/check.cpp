// Checker of exercise 06.
#include "common/checker.hpp"
#include "exercise.hpp"

using namespace anatomy;

int main() {
  exercise::Checker c("06_encoder_layer");
  const auto config = exercise::golden_layer_config();
  EncoderLayer layer(config);
  c.load_golden_weights(layer);
  const Tensor mask = c.golden("mask"), want = c.golden("out");
  Tensor x = c.golden("x").requires_grad_(), out;
  if (!c.run("forward runs", [&] { out = layer.forward(x, mask); })) return c.finish();
  if (!c.check(exercise::close(out, want), "the output equals the book's PyTorch layer",
               exercise::compare(out, want))) {
    NoGradGuard no_grad;
    const Tensor x0 = x.detach();
    const Tensor n = layer.layer_norm_1->forward(x0);
    const Tensor a = layer.attention->forward(n, n, mask);
    const Tensor post = layer.layer_norm_1->forward(x0 + layer.attention->forward(x0, x0, mask));
    if (exercise::close(out, a + layer.feed_forward->forward(layer.layer_norm_2->forward(a)),
                        1e-3f))
      c.diagnose(
          "your output does not carry the layer's input: the skip connection around "
          "attention is missing (h = x + attention(layer_norm_1(x)))");
    else if (const Tensor h = x0 + a; exercise::close(
                 out, h + layer.feed_forward->forward(layer.layer_norm_1->forward(h)), 1e-3f))
      c.diagnose(
          "your feed-forward reads layer_norm_1(h): each sublayer has its own norm, "
          "h + feed_forward(layer_norm_2(h))");
    else if (exercise::close(
                 out, layer.layer_norm_2->forward(post + layer.feed_forward->forward(post)), 1e-3f))
      c.diagnose(
          "you normalize after adding: that is the paper's post-LN. The book's layer "
          "normalizes each sublayer's input: x + attention(layer_norm_1(x))");
    return c.finish();
  }
  if (!c.run("backward runs", [&] { (out * c.golden("grad_out")).sum().backward(); }))
    return c.finish();
  c.check(exercise::close(x.grad(), c.golden("grad_x")), "dL/dx equals PyTorch's",
          exercise::compare(x.grad(), c.golden("grad_x")));
  c.check_parameter_grads(layer);
  return c.finish();
}
