// Tutorial 09: the decoder layer, the chapter's homework. It has three sublayers: masked
// self-attention over the target so far, encoder-decoder (cross) attention whose queries come
// from the target and whose keys and values come from the encoder's output, and the
// feed-forward layer. Cross-attention is how the decoder reads the source sentence.
#include "chapter.hpp"
#include "viz/attention_view.hpp"

using namespace anatomy;

int main(int argc, char** argv) {
  tutorial::Tutorial t(
      argc, argv, "09 - The decoder and encoder-decoder attention",
      "TransformerDecoderLayer: masked self-attention, cross-attention, feed-forward.");
  manual_seed(0);
  const auto config = tutorial::bert_config();
  NoGradGuard no_grad;

  t.section("An encoder output (the memory) and a target prefix");
  Tensor memory = randn({1, 5, 768});  // the encoder's view of 5 source tokens
  Tensor target = randn({1, 3, 768});  // 3 target tokens decoded so far
  fmt::print("memory: {}   target: {}\n", memory.sizes(), target.sizes());

  t.section("TransformerDecoderLayer(config)");
  models::TransformerDecoderLayer decoder_layer(config, true);
  decoder_layer.eval();
  models::set_output_attentions(decoder_layer, true);  // keep the weights, for the pictures below
  fmt::print("{}\n\n", decoder_layer);
  Tensor causal = models::causal_mask(3);
  Tensor out = decoder_layer.forward(target, memory, causal, Tensor());
  fmt::print("decoder_layer(target, memory).size()\n{}\n", out.sizes());
  t.check(out.sizes() == Shape{1, 3, 768}, "one vector per target token: [1, 3, 768]");

  t.section("Cross-attention: every target token over every source token");
  Tensor cross = decoder_layer.cross_attention->last_attention;  // [B, H, T_target, T_source]
  fmt::print("cross-attention weights: {}\n", cross.sizes());
  t.check(cross.sizes() == Shape{1, 12, 3, 5}, "[batch, heads, target, source] = [1, 12, 3, 5]");
  fmt::print("head 0:\n{}",
             viz::terminal_heatmap(cross.select(0, 0).select(0, 0), {"t0", "t1", "t2"},
                                   {"s0", "s1", "s2", "s3", "s4"}));
  Tensor self = decoder_layer.self_attention->last_attention;
  fmt::print("\nmasked self-attention, head 0 (no weight on later target tokens):\n{}",
             viz::terminal_heatmap(self.select(0, 0).select(0, 0), {"t0", "t1", "t2"},
                                   {"t0", "t1", "t2"}));
  t.check(triu(self.select(0, 0).select(0, 0), 1).abs().sum().item() == 0.0f,
          "self-attention is causal");

  t.section("Changing a later target token changes no earlier output");
  Tensor changed = target.clone();
  changed.select(1, 2).copy_(randn({768}));
  Tensor out2 = decoder_layer.forward(changed, memory, causal, Tensor());
  fmt::print("outputs 0 and 1 change by {:.1e}; output 2 by {:.2f}\n",
             (out2.narrow(1, 0, 2) - out.narrow(1, 0, 2)).abs().max().item(),
             (out2.select(1, 2) - out.select(1, 2)).abs().max().item());
  t.check((out2.narrow(1, 0, 2) - out.narrow(1, 0, 2)).abs().max().item() < 1e-5f,
          "earlier outputs unchanged");
  return t.finish();
}
