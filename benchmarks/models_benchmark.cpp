// W1 and W2: the model-level workloads, timed the same way as models_benchmark.py times
// PyTorch (warm-up, then the median of repeated runs). bench_models.sh runs both side by side.
//   W1  a seq2seq training step: batch 32, 24 source and 24 target tokens, hidden 128, 4 heads,
//       FFN 512, 2 + 2 layers, vocab 1000, AdamW (no clipping, as models_benchmark.py)
//   W2  inference with a BERT-base-sized encoder: 12 layers, hidden 768, 12 heads, FFN 3072,
//       batch 1, 128 tokens, no grad
//   W4  a training step of the Tiny Shakespeare recipe (anatomy train --task lm): a GPT of 4
//       layers, 4 heads, hidden 128, no biases, tied embeddings, 65 characters, batch 12 of 64,
//       AdamW and gradient clipping
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "kernels/parallel.hpp"
#include "models/models.hpp"

using namespace anatomy;
using namespace anatomy::models;

template <typename F>
double median_ms(int warmup, int runs, F f) {
  for (int i = 0; i < warmup; ++i) f();
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// One training step as the Trainer takes it with its batch, batch_loss and replicate plug-ins:
// each thread a part of the batch's rows (nn::DataParallel), the parts' mean losses weighted by
// their rows (every row here has the same number of tokens), the replicas' gradients added into
// the model's, clipped to `clip` (0: not), and the optimizer's step. part_loss(module, begin,
// end): the mean loss of rows [begin, end).
template <typename PartLoss>
void parallel_step(nn::DataParallel& parallel, int64_t rows, nn::Optimizer& opt, double clip,
                   PartLoss part_loss) {
  const int64_t n = parallel.parts(rows);
  std::vector<Tensor> losses(static_cast<size_t>(n));
  parallel.run(n, [&](int64_t k, nn::Module& m) {
    const auto [b, e] = nn::DataParallel::part_rows(rows, k, n);
    losses[static_cast<size_t>(k)] = part_loss(m, b, e);
  });
  opt.zero_grad();
  parallel.run(n, [&](int64_t k, nn::Module&) {
    const auto [b, e] = nn::DataParallel::part_rows(rows, k, n);
    losses[static_cast<size_t>(k)].backward(
        full({}, static_cast<float>(e - b) / static_cast<float>(rows)));
  });
  parallel.reduce_gradients();
  if (clip > 0) nn::clip_grad_norm_(opt.params(), static_cast<float>(clip));
  opt.step();
}

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  // A second argument runs one workload only (W1 or W2), e.g. under perf record.
  const std::string only = argc > 2 ? argv[2] : "";
  set_num_threads(threads);
  manual_seed(0);

  if (only.empty() || only == "W1") {
    auto w1 = TransformerConfig::preset("small");  // hidden 128, 4 heads, 2 + 2 layers, FFN 512
    w1.vocab_size = 1000;
    w1.max_position_embeddings = 64;
    Seq2SeqTransformer model(w1);
    model.train();
    nn::AdamW opt(model.parameters(), {.lr = 1e-4});
    Tensor src = randint(1, 1000, {32, 24}), tgt_in = randint(1, 1000, {32, 24}),
           tgt_out = randint(1, 1000, {32, 24});
    // As the trainer steps it (anatomy train, translation): rows split between the threads.
    nn::DataParallel parallel(model, [&] { return std::make_shared<Seq2SeqTransformer>(w1); });
    const double step = median_ms(3, 20, [&] {
      parallel_step(parallel, 32, opt, 0.0, [&](nn::Module& m, int64_t b, int64_t e) {
        Tensor logits =
            static_cast<Seq2SeqTransformer&>(m).forward(src.slice(0, b, e), tgt_in.slice(0, b, e));
        return cross_entropy(logits.reshape({-1, 1000}), tgt_out.slice(0, b, e).reshape({-1}));
      });
    });
    fmt::print("W1 seq2seq training step (ms): {:.2f}\n", step);
  }
  if (only.empty() || only == "W4") {
    TransformerConfig w4 = TransformerConfig::preset("nanogpt");
    w4.vocab_size = 65;
    w4.max_position_embeddings = 64;
    w4.hidden_dropout_prob = w4.attention_probs_dropout_prob = 0.0;
    w4.embedding_layer_norm = false;
    w4.final_layer_norm = true;
    w4.bias = false;
    w4.tie_word_embeddings = true;
    TransformerForCausalLM gpt(w4);
    gpt.train();
    nn::AdamW opt(gpt.parameters(), {.lr = 1e-3, .beta1 = 0.9, .beta2 = 0.99, .weight_decay = 0.1});
    Tensor x = randint(0, 65, {12, 64}), y = randint(0, 65, {12, 64});
    // As the trainer steps it (anatomy train --task lm): rows split between the threads.
    nn::DataParallel parallel(gpt, [&] { return std::make_shared<TransformerForCausalLM>(w4); });
    const double step = median_ms(3, 30, [&] {
      parallel_step(parallel, 12, opt, 1.0, [&](nn::Module& m, int64_t b, int64_t e) {
        Tensor logits = static_cast<TransformerForCausalLM&>(m).forward(x.slice(0, b, e));
        return cross_entropy(logits.reshape({-1, 65}), y.slice(0, b, e).reshape({-1}));
      });
    });
    fmt::print("W4 Tiny Shakespeare training step (ms): {:.2f}\n", step);
  }
  if (!only.empty() && only != "W2") return 0;

  TransformerConfig w2;  // bert-base sizes
  w2.num_hidden_layers = 12;
  TransformerEncoder bert(w2);
  bert.eval();
  Tensor ids = randint(1, 30522, {1, 128});
  const double infer = median_ms(2, 10, [&] {
    NoGradGuard no_grad;
    bert.forward(ids);
  });
  fmt::print("W2 BERT-base encoder inference (ms): {:.2f}\n", infer);
}
