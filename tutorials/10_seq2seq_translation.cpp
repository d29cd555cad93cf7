// Tutorial 10: a whole translation model, trained. The encoder reads the source, the decoder
// writes the target one token at a time while attending to the encoder's output, and the
// generator turns its hidden states into next-token logits. Trained here for a short while on
// the toy task "reverse" (the Annotated Transformer's first test), then used with greedy
// decoding and beam search. `anatomy train --task reverse` runs the same recipe with checkpoints.
#include "chapter.hpp"
#include "data/data.hpp"
#include "training/training.hpp"

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
  std::vector<std::string> sources;
  for (const auto& p : train) sources.push_back(p.source);
  auto tok = text::WordTokenizer::train(sources);  // one vocabulary: the same symbols both ways
  std::vector<std::vector<int64_t>> src, tgt;
  for (const auto& p : train)
    src.push_back(tok.encode(p.source)), tgt.push_back(tok.encode(p.target));

  t.section("The model");
  auto config = models::TransformerConfig::preset("tiny");  // hidden 64, 4 heads, 2 + 2 layers
  config.vocab_size = tok.vocab().size();
  config.max_position_embeddings = 32;
  config.final_layer_norm = true;
  config.tie_word_embeddings = true;  // the generator reuses the decoder's token table
  models::Seq2SeqTransformer model(config);
  models::init_weights(model);
  fmt::print("Seq2SeqTransformer: {} parameters\n", model.num_parameters());

  t.section("Training: AdamW, warmup then linear decay, label smoothing");
  // The recipe of `anatomy train --task reverse`: small batches reshuffled every epoch, the
  // learning rate warmed up then decayed to zero at the last step.
  const int64_t epochs = t.fast() ? 1 : 6;
  auto batches = data::make_batches(src, tgt, {.max_tokens = 512, .shuffle = false});
  const auto steps = static_cast<int64_t>(batches.size()) * epochs;
  nn::AdamW opt(model.parameters(), {.lr = 2e-3, .beta2 = 0.98, .eps = 1e-9, .weight_decay = 0.01});
  nn::WarmupDecaySchedule schedule(opt, 2e-3, std::min<int64_t>(100, steps / 4), steps);
  training::Trainer trainer(model, opt, &schedule,
                            {.epochs = epochs, .eval_every = t.fast() ? 60 : 0});
  trainer.batches = [&](int64_t epoch) {
    batches = data::make_batches(src, tgt, {.max_tokens = 512, .seed = 1 + uint64_t(epoch)});
    return static_cast<int64_t>(batches.size());
  };
  std::vector<double> losses;
  trainer.loss = [&](int64_t, int64_t i) {
    const auto& b = batches[i];
    Tensor logits = model.forward(b.source, b.target_in);  // [B, T, V]
    Tensor loss = cross_entropy(logits.reshape({-1, logits.size(-1)}), b.target_out.reshape({-1}),
                                {.ignore_index = 0, .label_smoothing = 0.1f});
    losses.push_back(loss.item());
    return training::BatchLoss{loss, b.target_tokens};
  };
  trainer.fit();
  // With label smoothing 0.1 the loss cannot reach 0: about 0.5 is a model that is always right.
  const double last = losses.back(), first = losses.front();
  // --fast stops before the model "gets" reversal (the loss then drops steeply): only the start of
  // the descent is checked there.
  t.check(last < first * (t.fast() ? 0.97 : 0.35), "the training loss fell");

  t.section("Does the decoder read the source? Held-out loss with the right and a wrong source");
  // A decoder that ignored the encoder (broken cross-attention, a mask hiding every key) can
  // still lower the loss by learning which letters are common; with the right source its
  // held-out loss must be lower than with another sequence's source.
  model.eval();
  {
    NoGradGuard no_grad;
    const auto& held_out = task.splits.test;
    auto loss_of = [&](const std::string& source, const std::string& target) {
      const auto s_ids = tok.encode(source), t_ids = tok.encode(target);
      std::vector<int64_t> in{2}, out(t_ids);  // [BOS] target -> target [EOS]
      in.insert(in.end(), t_ids.begin(), t_ids.end());
      out.push_back(3);
      Tensor logits = model.forward(from_vector(s_ids, {1, static_cast<int64_t>(s_ids.size())}),
                                    from_vector(in, {1, static_cast<int64_t>(in.size())}));
      return cross_entropy(logits.reshape({-1, logits.size(-1)}),
                           from_vector(out, {static_cast<int64_t>(out.size())}))
          .item();
    };
    double right_source = 0, wrong_source = 0;
    const int64_t n = 40;
    for (int64_t i = 0; i < n; ++i) {
      right_source += loss_of(held_out[i].source, held_out[i].target) / n;
      wrong_source += loss_of(held_out[(i + 1) % n].source, held_out[i].target) / n;
    }
    fmt::print("held-out loss: {:.3f} with its own source, {:.3f} with another's\n", right_source,
               wrong_source);
    t.check(right_source < wrong_source - 0.05, "the translation depends on the source");
  }

  t.section("Translating held-out sequences: greedy and beam search");
  int64_t right = 0;
  bool beam1_is_greedy = true;
  const auto& test = task.splits.test;
  const int64_t shown = 5, scored = t.fast() ? 20 : 100;
  for (int64_t i = 0; i < scored; ++i) {
    auto ids = tok.encode(test[i].source);
    Tensor s = from_vector(ids, {1, static_cast<int64_t>(ids.size())});
    const auto greedy = generation::greedy_decode(model, s, 2, 3, 20)[0];
    const std::string out = tok.decode(greedy.tokens);
    right += out == test[i].target;
    if (i < shown) {
      const auto beam = generation::beam_search(model, s, 2, 3, 20, 4);
      fmt::print("  {:26} greedy: {:26} beam(4): {}\n", test[i].source, out,
                 tok.decode(beam.tokens));
      const auto beam1 = generation::beam_search(model, s, 2, 3, 20, 1, 0.0f);
      beam1_is_greedy = beam1_is_greedy && beam1.tokens == greedy.tokens;
    }
  }
  t.check(beam1_is_greedy, "beam search with beam size 1 is greedy decoding");
  fmt::print("exact match on {} held-out sequences: {:.0f}%\n", scored, 100.0 * right / scored);
  if (!t.fast())
    t.check(right * 10 >= scored * 8, "at least 80% of held-out sequences reversed exactly");
  return t.finish();
}
