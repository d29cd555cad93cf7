// Tutorial 10: a whole translation model, trained. The encoder reads the source, the decoder
// writes the target one token at a time while attending to the encoder's output, and the
// generator turns its hidden states into next-token logits. Trained here for a short while on
// the toy task "reverse" (the Annotated Transformer's first test), then used with greedy
// decoding and beam search. `anatomy train` does the same, with checkpoints and a progress bar.
#include <chrono>

#include "chapter.hpp"
#include "data/data.hpp"

using namespace anatomy;

int main(int argc, char** argv) {
  tutorial::Tutorial t(
      argc, argv, "10 - Training a sequence-to-sequence model",
      "Seq2SeqTransformer on the toy task \"reverse\", then greedy and beam search.");
  manual_seed(0);

  t.section("Data: reverse a sequence of symbols");
  const auto task = data::make_task("reverse");
  const auto& train = task.splits.train;
  for (int i = 0; i < 3; ++i) fmt::print("  {:28} -> {}\n", train[i].source, train[i].target);
  std::vector<std::string> sources, targets;
  for (const auto& p : train) sources.push_back(p.source), targets.push_back(p.target);
  auto tok = text::WordTokenizer::train(sources);  // one vocabulary: the same symbols both ways
  std::vector<std::vector<int64_t>> src, tgt;
  for (const auto& p : train)
    src.push_back(tok.encode(p.source)), tgt.push_back(tok.encode(p.target));

  t.section("The model");
  models::TransformerConfig config;
  config.vocab_size = tok.vocab().size();
  config.hidden_size = 64;
  config.num_attention_heads = 4;
  config.num_hidden_layers = 2;
  config.intermediate_size = 256;
  config.max_position_embeddings = 32;
  config.final_layer_norm = true;
  config.share_embeddings = true;
  config.tie_word_embeddings = true;
  models::Seq2SeqTransformer model(config);
  models::init_weights(model);
  fmt::print("Seq2SeqTransformer: {} parameters\n", model.num_parameters());

  t.section("Training: AdamW, the paper's warmup schedule, label smoothing");
  nn::AdamW opt(model.parameters(), {.lr = 2e-3, .beta2 = 0.98, .eps = 1e-9});
  nn::NoamSchedule schedule(opt, config.hidden_size, 100, 2e-3 * std::sqrt(64.0 * 100.0));
  const int64_t steps = t.fast() ? 250 : 1200;
  auto batches = data::make_batches(src, tgt, {.max_tokens = 1024, .seed = 1});
  double first_loss = 0, last_loss = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int64_t step = 0; step < steps; ++step) {
    const auto& b = batches[static_cast<size_t>(step) % batches.size()];
    Tensor logits = model.forward(b.source, b.target_in);
    Tensor loss = cross_entropy(logits.reshape({-1, logits.size(-1)}), b.target_out.reshape({-1}),
                                {.ignore_index = 0, .label_smoothing = 0.1f});
    opt.zero_grad();
    loss.backward();
    nn::clip_grad_norm_(model.parameters(), 1.0f);
    opt.step();
    schedule.step();
    if (step == 0) first_loss = loss.item();
    last_loss = loss.item();
    if ((step + 1) % (steps / 5) == 0)
      fmt::print("step {:4}  loss {:.3f}  lr {:.1e}\n", step + 1, loss.item(), opt.lr());
  }
  fmt::print("{} steps in {:.1f} s\n", steps,
             std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  // --fast stops before the model "gets" reversal (the loss then drops steeply): only the
  // start of the descent is checked.
  t.check(last_loss < first_loss * (t.fast() ? 0.97 : 0.5), "the training loss fell");

  t.section("Translating held-out sequences: greedy and beam search");
  model.eval();
  int64_t right = 0;
  const auto& test = task.splits.test;
  const int64_t shown = 5, scored = t.fast() ? 20 : 100;
  for (int64_t i = 0; i < scored; ++i) {
    auto ids = tok.encode(test[i].source);
    Tensor s = from_vector(ids, {1, static_cast<int64_t>(ids.size())});
    const auto greedy = models::greedy_decode(model, s, 2, 3, 20)[0];
    const std::string out = tok.decode(greedy.tokens);
    right += out == test[i].target;
    if (i < shown) {
      const auto beam = models::beam_search(model, s, 2, 3, 20, 4);
      fmt::print("  {:26} greedy: {:26} beam(4): {}\n", test[i].source, out,
                 tok.decode(beam.tokens));
      const auto beam1 = models::beam_search(model, s, 2, 3, 20, 1, 0.0f);
      t.check(beam1.tokens == greedy.tokens, "beam search with beam size 1 is greedy decoding");
    }
  }
  fmt::print("exact match on {} held-out sequences: {:.0f}%\n", scored, 100.0 * right / scored);
  if (!t.fast())
    t.check(right * 10 >= scored * 8, "at least 80% of held-out sequences reversed exactly");
  return t.finish();
}
