// W1 and W2: the model-level workloads, timed the same way as models_benchmark.py times
// PyTorch (warm-up, then the median of repeated runs). bench_models.sh runs both side by side.
//   W1  a seq2seq training step: batch 32, 24 source and 24 target tokens, hidden 128, 4 heads,
//       FFN 512, 2 + 2 layers, vocab 1000, AdamW
//   W2  inference with a BERT-base-sized encoder: 12 layers, hidden 768, 12 heads, FFN 3072,
//       batch 1, 128 tokens, no grad
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <string>

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
    const double step = median_ms(3, 20, [&] {
      Tensor logits = model.forward(src, tgt_in);
      Tensor loss = cross_entropy(logits.reshape({-1, 1000}), tgt_out.reshape({-1}));
      opt.zero_grad();
      loss.backward();
      opt.step();
    });
    fmt::print("W1 seq2seq training step (ms): {:.2f}\n", step);
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
