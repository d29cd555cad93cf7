// Tutorial 04: the position-wise feed-forward layer. After attention has mixed information
// between tokens, each token's vector goes alone through the same two-layer network
// (768 -> 3072 -> 768 with GELU): most of a Transformer's parameters live here.
#include "chapter.hpp"

using namespace anatomy;

int main(int argc, char** argv) {
  tutorial::Tutorial t(argc, argv, "04 - The feed-forward layer",
                       "linear_1 (768 -> 3072), GELU, linear_2 (3072 -> 768), dropout.");
  manual_seed(0);
  const auto config = tutorial::bert_config();

  t.section("FeedForward(config)");
  models::FeedForward feed_forward(config);
  fmt::print("{}\n\nparameters: {}\n", feed_forward, feed_forward.num_parameters());
  t.check(feed_forward.num_parameters() == 768 * 3072 + 3072 + 3072 * 768 + 768,
          "2 x 768 x 3072 weights plus biases");

  t.section("Applied to attention outputs of shape [1, 5, 768]");
  Tensor attn_outputs = randn({1, 5, 768});
  feed_forward.eval();
  Tensor ff_outputs = feed_forward.forward(attn_outputs);
  fmt::print("ff_outputs.size()\n{}\n", ff_outputs.sizes());
  t.check(ff_outputs.sizes() == Shape{1, 5, 768}, "the feed-forward output has shape [1, 5, 768]");

  t.section("Position-wise: each token is transformed on its own");
  Tensor alone = feed_forward.forward(attn_outputs.narrow(1, 2, 1));
  fmt::print("token 2 alone vs in the sequence: largest difference {:.2e}\n",
             (alone.select(1, 0) - ff_outputs.select(1, 2)).abs().max().item());
  t.check((alone.select(1, 0) - ff_outputs.select(1, 2)).abs().max().item() < 1e-5f,
          "a token's output does not depend on the other tokens");

  t.section("GELU, the smooth ReLU");
  Tensor x = arange(-3, 3.5, 1, kFloat32);
  fmt::print("x       = {}\ngelu(x) = {}\nrelu(x) = {}\n", x, gelu(x), relu(x));
  t.check(std::abs(gelu(full({}, 1.0f)).item() - 0.8413f) < 1e-4f, "gelu(1) = Φ(1) = 0.8413");
  return t.finish();
}
