// Checks of the guide's extension example (docs/extending.md), built as a separate project:
// ScaleNorm and a learned relative bias are each right on a case worked by hand, pass gradcheck,
// train inside a Transformer, and the bias's cached decoding equals uncached.
#include <fmt/format.h>

#include <cmath>
#include <training/training.hpp>

#include "generation/generation.hpp"
#include "learned_bias.hpp"
#include "scale_norm.hpp"

using namespace anatomy;

namespace {

int failures = 0;
void check(bool ok, const std::string& what) {
  fmt::print("[{}] {}\n", ok ? "ok" : "FAILED", what);
  failures += !ok;
}

models::TransformerConfig tiny(const std::string& set) {
  auto c = models::TransformerConfig::preset("tiny");
  c.vocab_size = 12;
  c.max_position_embeddings = 16;
  c.hidden_dropout_prob = c.attention_probs_dropout_prob = 0.0;
  c.set(set);
  c.validate();
  return c;
}

// A few Trainer steps of a causal LM on one repeated pattern: the loss must fall.
bool learns(const models::TransformerConfig& c) {
  manual_seed(0);
  models::TransformerForCausalLM model(c);
  models::init_weights(model);
  nn::AdamW opt(model.parameters(), {.lr = 3e-3});
  training::Trainer trainer(model, opt, nullptr, {.epochs = 1, .quiet = true});
  const Tensor x = tensor({{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}}),
               y = tensor({{2, 3, 4, 5, 6, 7, 8, 9, 10, 11}});
  std::vector<double> losses;
  trainer.batches = [](int64_t) { return int64_t{40}; };
  trainer.loss = [&](int64_t, int64_t) {
    Tensor l = cross_entropy(model.forward(x).reshape({-1, c.vocab_size}), y.reshape({-1}));
    losses.push_back(l.item<double>());
    return training::BatchLoss{l};
  };
  trainer.fit();
  return losses.back() < 0.5 * losses.front();
}

}  // namespace

int main() {
  // --- ScaleNorm ---
  auto config = tiny("norm_type=scale_norm");
  ScaleNorm norm(config);
  norm.g = tensor({2.0f});  // a 2-wide case by hand: x = [3, 4] has length 5
  Tensor out = norm.forward(tensor({{3.0f, 4.0f}}));
  check(std::abs(out.to_vector()[0] - 1.2f) < 1e-5 && std::abs(out.to_vector()[1] - 1.6f) < 1e-5,
        "ScaleNorm([3, 4]) with g = 2 is 2 · [3, 4] / 5");
  ScaleNorm wide(config);
  Tensor x = randn({2, 3, config.hidden_size}).requires_grad_();
  Tensor g = tensor({1.5f}).requires_grad_();
  auto grad = gradcheck(
      [&](const std::vector<Tensor>& in) {
        wide.g = in[1];
        return wide.forward(in[0]);
      },
      {x, g});
  check(grad.ok, "ScaleNorm passes gradcheck (input and g): " + grad.message);
  models::Seq2SeqTransformer seq2seq(config);
  check(
      seq2seq.encoder->layers->at<models::TransformerEncoderLayer>(0)->layer_norm_1->type_name() ==
          "ScaleNorm",
      "norm_type scale_norm puts ScaleNorm in the layers");
  check(learns(config), "a causal LM with ScaleNorm learns");

  // --- LearnedBias ---
  auto biased = tiny("position_embedding_type=learned_bias");
  // With the q and k projections zeroed every score is 0, so each row's weights are exactly
  // softmax over the learned table's values at the clipped distances: the bias alone decides.
  auto positions = std::make_shared<LearnedBias>(biased);
  models::FusedMultiHeadAttention attention(biased, positions);
  attention.eval();
  attention.output_attentions = true;
  {
    NoGradGuard no_grad;
    attention.qkv->weight.narrow(0, 0, 2 * biased.hidden_size).fill_(0.0f);
    attention.qkv->bias.fill_(0.0f);
    positions->weight.copy_(randn(positions->weight.shape()));
  }
  const int T = 12;  // long enough that distances beyond 8 are clipped
  Tensor h = randn({1, T, biased.hidden_size});
  attention.forward(h, h, Tensor());
  const auto got = attention.last_attention.to_vector();  // [1, H, T, T]
  const auto table = positions->weight.to_vector();       // [17, H]
  const int64_t H = biased.num_attention_heads;
  auto value = [&](int64_t hd, int i, int j) {
    const int64_t d =
        std::clamp<int64_t>(i - j, -LearnedBias::kMaxDistance, LearnedBias::kMaxDistance);
    return static_cast<double>(table[(d + LearnedBias::kMaxDistance) * H + hd]);
  };
  double worst = 0;
  for (int64_t hd = 0; hd < H; ++hd)
    for (int i = 0; i < T; ++i) {
      double z = 0;
      for (int j = 0; j < T; ++j) z += std::exp(value(hd, i, j));
      for (int j = 0; j < T; ++j)
        worst =
            std::max(worst, std::abs(got[(hd * T + i) * T + j] - std::exp(value(hd, i, j)) / z));
    }
  check(worst < 1e-6,
        fmt::format("the weights are softmax of the table at clipped distances (max error {:.1e})",
                    worst));
  check(!models::TransformerForCausalLM(biased).decoder->embeddings->position_embeddings,
        "with a learned bias the embeddings add no positions");
  models::FusedMultiHeadAttention small_attention(biased, std::make_shared<LearnedBias>(biased));
  auto* small_bias = dynamic_cast<LearnedBias*>(small_attention.positions.get());
  Tensor hs = randn({1, 4, biased.hidden_size}).requires_grad_();
  auto agrad = gradcheck(
      [&](const std::vector<Tensor>& in) {
        small_bias->weight = in[1];
        return small_attention.forward(in[0], in[0], Tensor());
      },
      {hs, (0.5f * randn(small_bias->weight.shape())).requires_grad_()});
  check(agrad.ok,
        "attention with the learned bias passes gradcheck (input and table): " + agrad.message);
  check(learns(biased), "a causal LM with the learned bias learns");
  manual_seed(1);
  models::TransformerForCausalLM lm(biased);
  models::init_weights(lm, 0.3);
  {
    NoGradGuard no_grad;  // a table that matters: init_weights leaves parts of your own alone
    for (auto [name, p] : lm.named_parameters())  // a Tensor is a handle: p shares the table
      if (name.ends_with("learned_bias.weight")) p.copy_(randn(p.shape()));
  }
  lm.eval();
  const auto cached =
      generation::generate(lm, {1, 2, 3}, 10, {.temperature = 0.0f, .use_cache = true});
  const auto plain =
      generation::generate(lm, {1, 2, 3}, 10, {.temperature = 0.0f, .use_cache = false});
  double logit_gap = 0;
  for (size_t i = 0; i < cached.logits.size(); ++i)
    logit_gap = std::max(logit_gap,
                         static_cast<double>(amax(abs(cached.logits[i] - plain.logits[i])).item()));
  check(cached.tokens == plain.tokens && logit_gap < 1e-4,
        fmt::format("learned bias: KV-cached decoding equals uncached (max logit gap {:.1e})",
                    logit_gap));

  fmt::print("{}\n", failures == 0 ? "All extension checks passed."
                                   : fmt::format("{} check(s) FAILED.", failures));
  return failures == 0 ? 0 : 1;
}
