// Tutorial 01: from text to vectors. "Transformer Anatomy" opens its encoder section by turning
// "time flies like an arrow" into token ids with BERT's tokenizer, then each id into a
// 768-dimensional vector with an embedding table: the [batch, tokens, hidden] tensor that every
// later step transforms.
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
  return t.finish();
}
