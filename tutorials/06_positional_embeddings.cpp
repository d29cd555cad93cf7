// Tutorial 06: positional embeddings. Attention alone cannot tell "time flies like an arrow"
// from "arrow an like flies time": it sees a set. The Embeddings layer adds a vector per
// position: learned (a second embedding table, the book's and BERT's choice) or the paper's
// fixed sinusoids, where each pair of dimensions is a sine/cosine of a different wavelength.
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
  return t.finish();
}
