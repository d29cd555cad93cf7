// Tutorial 01: from text to vectors. "Transformer Anatomy" opens its encoder section by turning
// "time flies like an arrow" into token ids with BERT's tokenizer, then each id into a
// 768-dimensional vector with an embedding table: the [batch, tokens, hidden] tensor that every
// later step transforms.
#include <numeric>

#include "chapter.hpp"

using namespace anatomy;

int main(int argc, char** argv) {
  tutorial::Tutorial t(argc, argv, "01 - Tokenization and embeddings",
                       "The book's first step: text -> token ids -> dense vectors.", {"--vocab"});
  manual_seed(0);

  t.section("Tokenize \"time flies like an arrow\"");
  bool real = false;
  const auto tokenizer = tutorial::bert_tokenizer(t, real);
  const auto tokens = tokenizer.tokenize(tutorial::kText);
  const auto ids = tokenizer.encode(tutorial::kText);
  fmt::print("tokens: [{}]\n", fmt::join(tokens, ", "));
  // inputs = tokenizer(text, return_tensors="pt", add_special_tokens=False); inputs.input_ids
  Tensor input_ids = from_vector(ids, {1, static_cast<int64_t>(ids.size())});
  fmt::print("inputs.input_ids\n{}\n", input_ids);
  if (real)
    t.check(ids == std::vector<int64_t>{2051, 10029, 2066, 2019, 8612},
            "the book's ids: 2051 10029 2066 2019 8612");
  t.check(tokenizer.decode(ids) == tutorial::kText, "decoding the ids gives the text back");

  t.section("An embedding table: one 768-dimensional row per token id");
  const auto config = tutorial::bert_config();
  nn::Embedding token_emb(real ? config.vocab_size : tokenizer.vocab().size(), config.hidden_size);
  fmt::print("token_emb\n{}\n\n", token_emb);
  Tensor inputs_embeds = token_emb.forward(input_ids);
  fmt::print("inputs_embeds.size()\n{}\n", inputs_embeds.sizes());
  t.check(inputs_embeds.sizes() == Shape{1, 5, 768}, "embeddings have shape [1, 5, 768]");
  t.check(
      (inputs_embeds.select(1, 2) - token_emb.weight.select(0, ids[2])).abs().max().item() == 0.0f,
      "row 2 of the output is the table's row for \"like\"");

  t.section("The same lookup in a pretrained BERT's table");
  if (const auto bert = tutorial::pretrained_bert(t)) {
    // The untrained table above is random; BERT's was learned, so tokens used alike sit close.
    const auto bert_tokenizer = text::load_folder_tokenizer(bert->dir);
    const auto bert_ids = bert_tokenizer->encode(tutorial::kText);
    auto& table = *bert->model->embeddings->token_embeddings;
    NoGradGuard no_grad;
    Tensor trained =
        table.forward(from_vector(bert_ids, {1, static_cast<int64_t>(bert_ids.size())}));
    fmt::print("embeddings.word_embeddings: {} rows of {}\n", table.weight.size(0),
               table.weight.size(1));
    fmt::print("trained_embeds.size()\n{}\n", trained.sizes());
    t.check(trained.sizes() ==
                Shape{1, static_cast<int64_t>(bert_ids.size()), bert->config.hidden_size},
            "one row of the pretrained table per token");
    t.check((trained.select(1, 2) - table.weight.select(0, bert_ids[2])).abs().max().item() == 0.0f,
            "row 2 is the pretrained table's row for \"like\"");
    // Cosine similarity of every row with each token's row: its nearest neighbours.
    const Tensor w = table.weight / (table.weight * table.weight).sum({-1}, true).sqrt();
    for (size_t i = 0; i < bert_ids.size(); ++i) {
      const auto sim = matmul(w, w.select(0, bert_ids[i]).unsqueeze(1)).squeeze(1).to_vector();
      std::vector<int64_t> order(sim.size());
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + 6, order.end(),
                        [&](int64_t a, int64_t b) { return sim[a] > sim[b]; });
      std::vector<std::string> near;
      for (int k = 1; k < 6; ++k)  // order[0] is the token itself
        near.push_back(
            fmt::format("{} ({:.2f})", bert_tokenizer->vocab().token(order[k]), sim[order[k]]));
      fmt::print("nearest to {:8} {}\n", bert_tokenizer->vocab().token(bert_ids[i]),
                 fmt::join(near, ", "));
    }
  }
  return t.finish();
}
