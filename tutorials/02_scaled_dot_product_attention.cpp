// Tutorial 02: scaled dot-product attention, the chapter's core. Each token's new
// representation is a weighted average of all tokens' values; the weights come from how well
// its query matches every key: softmax(Q Kᵀ / √d_k). Here, as in the book, query = key = value =
// the embeddings, so each token attends most to itself.
#include <cmath>

#include "chapter.hpp"
#include "viz/attention_view.hpp"

using namespace anatomy;

int main(int argc, char** argv) {
  tutorial::Tutorial t(argc, argv, "02 - Scaled dot-product attention",
                       "Scores, softmax weights, and the weighted sum of values.", {"--vocab"});
  manual_seed(0);
  bool real = false;
  const auto tokenizer = tutorial::bert_tokenizer(t, real);
  const auto ids = tokenizer.encode(tutorial::kText);
  const auto config = tutorial::bert_config();
  nn::Embedding token_emb(real ? config.vocab_size : tokenizer.vocab().size(), config.hidden_size);
  Tensor inputs_embeds = token_emb.forward(from_vector(ids, {1, 5}));

  t.section("Scores: how well each query matches each key");
  // query = key = value = inputs_embeds; scores = bmm(query, key.transpose(1,2)) / sqrt(dim_k)
  Tensor query = inputs_embeds, key = inputs_embeds, value = inputs_embeds;
  const int64_t dim_k = key.size(-1);
  Tensor scores = bmm(query, key.transpose(1, 2)) / std::sqrt(static_cast<float>(dim_k));
  fmt::print("scores.size()\n{}\n\n{}\n", scores.sizes(), scores);
  t.check(scores.sizes() == Shape{1, 5, 5}, "scores have shape [1, 5, 5]");
  fmt::print(
      "\nDividing by √d_k = {:.1f} keeps the scores from growing with the vector size, where\n"
      "softmax would saturate and its gradients vanish.\n",
      std::sqrt(static_cast<float>(dim_k)));

  t.section("Softmax turns each row of scores into weights that sum to 1");
  Tensor weights = softmax(scores, -1);
  fmt::print("weights.sum(dim=-1)\n{}\n", weights.sum({-1}));
  t.check((weights.sum({-1}) - ones({1, 5})).abs().max().item() < 1e-5f,
          "every row of weights sums to 1");
  const std::vector<std::string> toks = tokenizer.tokenize(tutorial::kText);
  fmt::print("\nEach token attends mostly to itself (query = key):\n{}",
             viz::terminal_heatmap(weights.select(0, 0), toks, toks));
  t.check(argmax(weights.select(0, 0), 1).to_int_vector() == std::vector<int64_t>{0, 1, 2, 3, 4},
          "with query = key, each token's largest weight is on itself");

  t.section("The output: a weighted average of the values");
  Tensor attn_outputs = bmm(weights, value);
  fmt::print("attn_outputs.shape\n{}\n", attn_outputs.sizes());
  t.check(attn_outputs.sizes() == Shape{1, 5, 768}, "outputs have shape [1, 5, 768]");
  auto [fused, fused_weights] = models::scaled_dot_product_attention(query, key, value);
  t.check((fused - attn_outputs).abs().max().item() < 1e-4f,
          "models::scaled_dot_product_attention computes the same");
  return t.finish();
}
