// Checks of the README's extension example, built as a separate project: RMSNorm and ALiBi are
// each right on a case worked by hand, pass gradcheck, train inside a Transformer, and ALiBi's
// cached decoding equals uncached.
#include <fmt/format.h>

#include <cmath>
#include <training/training.hpp>

#include "alibi.hpp"
#include "rms_norm.hpp"

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
  // --- RMSNorm ---
  auto config = tiny("norm_type=rms_norm");
  RMSNorm norm(config);
  norm.weight = tensor({2.0f, 1.0f});  // a 2-wide case by hand: x = [3, 4], mean(x²) = 12.5
  Tensor out = norm.forward(tensor({{3.0f, 4.0f}}));
  const float r = 1.0f / std::sqrt(12.5f + static_cast<float>(config.layer_norm_eps));
  check(std::abs(out.to_vector()[0] - 6.0f * r) < 1e-5 &&
            std::abs(out.to_vector()[1] - 4.0f * r) < 1e-5,
        "RMSNorm([3, 4]) with gain [2, 1] is [2·3, 4] / sqrt(12.5 + eps)");
  RMSNorm wide(config);
  Tensor x = randn({2, 3, config.hidden_size}).requires_grad_();
  Tensor w = randn({config.hidden_size}).requires_grad_();
  auto grad = gradcheck(
      [&](const std::vector<Tensor>& in) {
        wide.weight = in[1];
        return wide.forward(in[0]);
      },
      {x, w});
  check(grad.ok, "RMSNorm passes gradcheck (input and gain): " + grad.message);
  models::Seq2SeqTransformer seq2seq(config);
  check(
      seq2seq.encoder->layers->at<models::TransformerEncoderLayer>(0)->layer_norm_1->type_name() ==
          "RMSNorm",
      "norm_type rms_norm puts RMSNorm in the layers");
  check(learns(config), "a causal LM with RMSNorm learns");

  // --- ALiBi ---
  const auto s8 = ALiBi::head_slopes(8), s6 = ALiBi::head_slopes(6);
  check(std::abs(s8[0] - 0.5f) < 1e-7 && std::abs(s8[7] - 1.0f / 256) < 1e-9,
        "ALiBi slopes for 8 heads: 1/2 ... 1/256");
  check(std::abs(s6[4] - 0.5f) < 1e-7 && std::abs(s6[5] - 0.125f) < 1e-7 &&
            std::abs(s6[0] - 0.25f) < 1e-7,
        "ALiBi slopes for 6 heads: those of 4, then every other of 8");
  auto alibi = tiny("position_embedding_type=alibi");
  // With the q and k projections zeroed every score is 0, so each row's weights are exactly
  // softmax(-slope · |i - j|): ALiBi alone decides them.
  models::FusedMultiHeadAttention attention(alibi, std::make_shared<ALiBi>(alibi));
  attention.eval();
  {
    NoGradGuard no_grad;
    attention.qkv->weight.narrow(0, 0, 2 * alibi.hidden_size).fill_(0.0f);
    attention.qkv->bias.fill_(0.0f);
  }
  Tensor h = randn({1, 5, alibi.hidden_size});
  attention.forward(h, h, Tensor());
  const auto got = attention.last_attention.to_vector();  // [1, H, 5, 5]
  double worst = 0;
  const auto slopes = ALiBi::head_slopes(alibi.num_attention_heads);
  for (int64_t hd = 0; hd < alibi.num_attention_heads; ++hd)
    for (int i = 0; i < 5; ++i) {
      double z = 0;
      for (int j = 0; j < 5; ++j) z += std::exp(-slopes[hd] * std::abs(i - j));
      for (int j = 0; j < 5; ++j)
        worst = std::max(worst, std::abs(got[(hd * 5 + i) * 5 + j] -
                                         std::exp(-slopes[hd] * std::abs(i - j)) / z));
    }
  check(worst < 1e-6,
        fmt::format("ALiBi weights are softmax(-slope·|i-j|) (max error {:.1e})", worst));
  check(!models::TransformerForCausalLM(alibi).named_parameters().empty() &&
            !models::TransformerForCausalLM(alibi).decoder->embeddings->position_embeddings,
        "with ALiBi the embeddings add no positions");
  models::FusedMultiHeadAttention small_attention(alibi, std::make_shared<ALiBi>(alibi));
  Tensor hs = randn({1, 4, alibi.hidden_size}).requires_grad_();
  auto agrad = gradcheck(
      [&](const std::vector<Tensor>& in) {
        return small_attention.forward(in[0], in[0], Tensor());
      },
      {hs});
  check(agrad.ok, "attention with ALiBi passes gradcheck: " + agrad.message);
  check(learns(alibi), "a causal LM with ALiBi learns");
  manual_seed(1);
  models::TransformerForCausalLM lm(alibi);
  models::init_weights(lm);
  lm.eval();
  const auto cached = models::generate(lm, {1, 2, 3}, 10, {.temperature = 0.0f, .use_cache = true});
  const auto plain = models::generate(lm, {1, 2, 3}, 10, {.temperature = 0.0f, .use_cache = false});
  double logit_gap = 0;
  for (size_t i = 0; i < cached.logits.size(); ++i)
    logit_gap = std::max(logit_gap,
                         static_cast<double>(amax(abs(cached.logits[i] - plain.logits[i])).item()));
  check(cached.tokens == plain.tokens && logit_gap < 1e-4,
        fmt::format("ALiBi: KV-cached decoding equals uncached (max logit gap {:.1e})", logit_gap));

  fmt::print("{}\n", failures == 0 ? "All extension checks passed."
                                   : fmt::format("{} check(s) FAILED.", failures));
  return failures == 0 ? 0 : 1;
}
