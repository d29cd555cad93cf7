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

  t.section("By hand: queries, keys and values that differ");
  // With query = key every token matches itself best whatever the formula does; two tokens in
  // two dimensions, worked out on paper, show each step.
  Tensor q = tensor({{{1.0f, 0.0f}, {0.0f, 2.0f}}});
  Tensor k = tensor({{{1.0f, 1.0f}, {0.0f, 1.0f}}});
  Tensor v = tensor({{{1.0f, 2.0f}, {3.0f, 4.0f}}});
  fmt::print(
      "Q = [[1, 0], [0, 2]], K = [[1, 1], [0, 1]], V = [[1, 2], [3, 4]], d_k = 2\n"
      "Q Kᵀ = [[1·1 + 0·1, 1·0 + 0·1], [0·1 + 2·1, 0·0 + 2·1]] = [[1, 0], [2, 2]]\n"
      "/ √2 = [[0.7071, 0], [1.4142, 1.4142]]\n"
      "softmax: row 1 = [e^0.7071, e^0] / (e^0.7071 + 1) = [0.6698, 0.3302]; row 2 = [0.5, 0.5]\n"
      "weights · V: row 1 = 0.6698·[1, 2] + 0.3302·[3, 4] = [1.6605, 2.6605]; row 2 = [2, 3]\n\n");
  auto [by_hand, hand_weights] = models::scaled_dot_product_attention(q, k, v);
  fmt::print("models::scaled_dot_product_attention(Q, K, V)\n{}\n", by_hand);
  t.check((hand_weights - tensor({{{0.6698f, 0.3302f}, {0.5f, 0.5f}}})).abs().max().item() < 1e-4f,
          "the weights are the ones worked out by hand");
  t.check((by_hand - tensor({{{1.6605f, 2.6605f}, {2.0f, 3.0f}}})).abs().max().item() < 1e-4f,
          "the output is the one worked out by hand (without the √d_k it would be [1.5379, "
          "2.5379]; with K Qᵀ, [2.3395, 3.3395])");
  return t.finish();
}
