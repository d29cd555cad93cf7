// Tutorial 06: positional embeddings. Attention alone cannot tell "time flies like an arrow"
// from "arrow an like flies time": it sees a set. The Embeddings layer adds a vector per
// position: learned (a second embedding table, the book's and BERT's choice) or the paper's
// fixed sinusoids, where each pair of dimensions is a sine/cosine of a different wavelength.
// The chapter's third way changes attention itself: relative positional representations, where
// each score gains a term for the distance between query and key (DeBERTa; BERT's
// relative_key), and nothing is added to the embeddings.
#include "chapter.hpp"
#include "viz/attention_view.hpp"

using namespace anatomy;

int main(int argc, char** argv) {
  tutorial::Tutorial t(argc, argv, "06 - Positional embeddings",
                       "Token + position embeddings; learned and sinusoidal positions.",
                       {"--vocab"});
  manual_seed(0);
  bool real = false;
  const auto tokenizer = tutorial::bert_tokenizer(t, real);
  auto config = tutorial::bert_config();
  if (!real) config.vocab_size = tokenizer.vocab().size();
  Tensor input_ids = from_vector(tokenizer.encode(tutorial::kText), {1, 5});

  t.section("Without positions, attention ignores word order");
  nn::Embedding token_emb(config.vocab_size, config.hidden_size);
  models::FusedMultiHeadAttention attn(config);
  attn.eval();
  Tensor x = token_emb.forward(input_ids);
  std::vector<int64_t> backwards = input_ids.to_int_vector();
  std::reverse(backwards.begin(), backwards.end());
  Tensor reversed = token_emb.forward(from_vector(backwards, {1, 5}));
  Tensor a = attn.forward(x), b = attn.forward(reversed);
  fmt::print("\"time\"'s output, in order vs reversed: largest difference {:.2e}\n",
             (a.select(1, 0) - b.select(1, 4)).abs().max().item());
  t.check((a.select(1, 0) - b.select(1, 4)).abs().max().item() < 1e-4f,
          "same output for \"time\" in either order");

  t.section("Learned positions: Embeddings(config)");
  models::Embeddings embedding_layer(config);
  embedding_layer.eval();
  fmt::print("{}\n\n", embedding_layer);
  Tensor embedded = embedding_layer.forward(input_ids);
  fmt::print("embedding_layer(inputs.input_ids).size()\n{}\n", embedded.sizes());
  t.check(embedded.sizes() == Shape{1, 5, 768}, "token + position embeddings: [1, 5, 768]");

  t.section("Learned positions in a pretrained BERT: neighbours look alike");
  if (const auto bert = tutorial::pretrained_bert(t)) {
    // Nothing told BERT that position 10 is next to 11; training made their rows similar.
    // BERT's "absolute" positions: a second nn::Embedding table, one row per position.
    const Tensor table =
        dynamic_cast<nn::Embedding&>(*bert->model->embeddings->position_embeddings).weight;
    const Tensor unit = table / (table * table).sum({-1}, true).sqrt();
    const auto cosine = [&](int64_t a, int64_t b) {
      return (unit.select(0, a) * unit.select(0, b)).sum().item();
    };
    fmt::print("cosine(position 10, position 11) = {:.2f}\n", cosine(10, 11));
    fmt::print("cosine(position 10, position 60) = {:.2f}\n", cosine(10, 60));
    t.check(cosine(10, 11) > cosine(10, 60) + 0.1f,
            "in the learned table, near positions are more alike than far ones");
    std::vector<std::string> labels;
    for (int i = 0; i < 64; ++i) labels.push_back(std::to_string(i));
    const std::string learned = t.output("06_bert_position_similarity.svg");
    write_file_atomically(
        learned, viz::heatmap_svg(matmul(unit.narrow(0, 0, 64), unit.narrow(0, 0, 64).t()), labels,
                                  labels, "pretrained BERT: cosine of position embeddings"));
    fmt::print("positions 0-63, every pair: {}\n", learned);
  }

  t.section("Sinusoidal positions: the paper's pattern");
  Tensor pe = models::sinusoidal_positions(50, 64);
  fmt::print("PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(...)\n");
  fmt::print("first 16 positions x first 32 dimensions (dark = +1, blank = -1):\n{}",
             viz::terminal_heatmap(pe.narrow(0, 0, 16).narrow(1, 0, 32),
                                   {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11",
                                    "12", "13", "14", "15"},
                                   {}));
  std::vector<std::string> rows, cols;
  for (int i = 0; i < 50; ++i) rows.push_back(std::to_string(i));
  for (int j = 0; j < 64; ++j) cols.push_back(std::to_string(j));
  const std::string svg = t.output("06_sinusoidal_positions.svg");
  write_file_atomically(
      svg, viz::heatmap_svg(pe, rows, cols, "sinusoidal position embeddings (position x dim)"));
  fmt::print("\nthe full 50 x 64 pattern: {}\n", svg);
  t.check(std::abs(pe.select(0, 0).select(0, 1).item() - 1.0f) < 1e-6f, "PE[0, odd] = cos(0) = 1");
  t.check(std::abs(pe.select(0, 1).select(0, 0).item() - std::sin(1.0f)) < 1e-6f,
          "PE[1, 0] = sin(1)");

  t.section("Relative positions: the attention mechanism itself changes");
  // Hugging Face's relative_key: a learned vector r_d per distance d = i - j, and each score
  // gains the query's dot product with it, before the scaling:
  //   score(i, j) = (q_i · k_j + q_i · r_(i-j)) / sqrt(d_k)
  auto relative_config = config;
  relative_config.position_embedding_type = "relative_key";
  relative_config.attention_type = "fused";  // schemes inside attention need the fused module
  models::Embeddings relative_embeddings(relative_config);
  fmt::print(
      "with position_embedding_type = \"relative_key\" the embeddings add no position:\n{}\n\n",
      relative_embeddings);
  t.check(relative_embeddings.position_embeddings == nullptr, "no position table in Embeddings");
  auto relative_attention = std::dynamic_pointer_cast<models::FusedMultiHeadAttention>(
      models::make_attention(relative_config));
  relative_attention->eval();
  relative_attention->output_attentions = true;
  auto relative =
      std::dynamic_pointer_cast<models::RelativePositions>(relative_attention->positions);
  fmt::print("each self-attention holds the distance vectors instead:\n{}\n\n",
             *relative_attention);
  fmt::print("distance_embedding: {} rows (distances -{} .. +{}) of {} (head_dim)\n",
             relative->weight.size(0), relative_config.max_position_embeddings - 1,
             relative_config.max_position_embeddings - 1, relative->weight.size(1));

  // The two terms of head 0's scores, from the same queries and keys attention computes.
  const int64_t H = relative_config.num_attention_heads, D = relative_config.head_dim();
  Tensor qkv_all =
      relative_attention->qkv->forward(x).view({1, 5, 3, H, D}).permute({2, 0, 3, 1, 4});
  Tensor q = qkv_all.select(0, 0), k = qkv_all.select(0, 1);  // [1, H, 5, D]
  Tensor content = matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<float>(D));
  Tensor position_term = relative->bias(q, k, 0);  // q_i · r_(i-j) / sqrt(d_k), [1, H, 5, 5]
  const std::vector<std::string> words = {"time", "flies", "like", "an", "arrow"};
  fmt::print(
      "\nhead 0, the relative term q_i · r_(i-j) / sqrt(d_k) (rows: queries, columns: keys):\n{}",
      viz::terminal_heatmap(position_term.select(0, 0).select(0, 0), words, words));
  const std::string bias_svg = t.output("06_relative_position_bias.svg");
  write_file_atomically(bias_svg, viz::heatmap_svg(position_term.select(0, 0).select(0, 0), words,
                                                   words, "relative-position term of head 0"));
  fmt::print("as a picture: {}\n", bias_svg);
  Tensor relative_out = relative_attention->forward(x);
  const float weights_gap =
      (relative_attention->last_attention - softmax(content + position_term, -1))
          .abs()
          .max()
          .item();
  fmt::print("attention weights = softmax(content + relative term): largest difference {:.2e}\n",
             weights_gap);
  t.check(weights_gap < 1e-5f, "the weights are softmax of the two terms together");
  // The term sees i - j only: query 3 against key 1 uses the same vector as query 4 against key 2.
  Tensor r_row = relative->distance_vectors(0, 5, 5);
  t.check(
      (r_row.select(0, 3).select(0, 1) - r_row.select(0, 4).select(0, 2)).abs().max().item() == 0,
      "one vector per distance: r_(3-1) is r_(4-2)");
  // And now order matters without any position in the embeddings.
  Tensor relative_reversed = relative_attention->forward(reversed);
  const float order_gap =
      (relative_out.select(1, 0) - relative_reversed.select(1, 4)).abs().max().item();
  fmt::print(
      "\"time\"'s output, in order vs reversed, with relative positions: largest difference "
      "{:.2e}\n",
      order_gap);
  t.check(order_gap > 1e-3f, "relative positions make word order matter");
  return t.finish();
}
