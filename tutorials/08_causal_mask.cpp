// Tutorial 08: the causal mask. A decoder generates left to right, so while training on whole
// sentences each position must not see the positions after it. A lower-triangular matrix of
// ones marks what each query may see; scores where the mask is 0 become -inf, so softmax gives
// them weight 0.
#include <cmath>

#include "chapter.hpp"

using namespace anatomy;

int main(int argc, char** argv) {
  tutorial::Tutorial t(argc, argv, "08 - The causal mask",
                       "tril, masked_fill with -inf, and softmax.", {"--vocab"});
  manual_seed(0);
  bool real = false;
  const auto tokenizer = tutorial::bert_tokenizer(t, real);
  const auto config = tutorial::bert_config();
  nn::Embedding token_emb(real ? config.vocab_size : tokenizer.vocab().size(), config.hidden_size);
  Tensor inputs_embeds = token_emb.forward(from_vector(tokenizer.encode(tutorial::kText), {1, 5}));
  Tensor scores = bmm(inputs_embeds, inputs_embeds.transpose(1, 2)) / std::sqrt(768.0f);

  t.section("The mask: position i may see positions 0..i");
  const int64_t seq_len = 5;
  Tensor mask = tril(ones({seq_len, seq_len})).unsqueeze(0);
  fmt::print("mask[0]\n{}\n", mask[0]);
  t.check(mask[0].sum().item() == 15.0f, "15 of the 25 query-key pairs are allowed");

  t.section("Scores above the diagonal become -inf");
  Tensor masked = scores.masked_fill(eq(mask, 0.0f), -INFINITY);
  fmt::print("scores.masked_fill(mask == 0, -float(\"inf\"))\n{}\n", masked);

  t.section("After softmax, the future gets exactly zero weight");
  Tensor weights = softmax(masked, -1);
  fmt::print("{}\n", weights);
  t.check(triu(weights.select(0, 0), 1).abs().sum().item() == 0.0f, "no weight above the diagonal");
  t.check((weights.sum({-1}) - ones({1, 5})).abs().max().item() < 1e-5f,
          "each row still sums to 1");
  t.check(weights.select(1, 0).select(1, 0).item() == 1.0f,
          "the first token can only attend to itself");
  return t.finish();
}
