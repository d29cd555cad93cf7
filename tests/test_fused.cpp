// Fused kernels against the same function composed from primitive ops (forward and gradient).
#include "helpers.hpp"

using namespace anatomy;
using Inputs = std::vector<Tensor>;

namespace {

// Runs fused and composed on copies of the same inputs; compares outputs and input gradients.
void check_same(const std::function<Tensor(const Inputs&)>& fused,
                const std::function<Tensor(const Inputs&)>& composed, const Inputs& inputs) {
  auto copy = [&] {
    Inputs c;
    for (const auto& x : inputs) {
      Tensor t = x.clone().detach();
      if (x.requires_grad()) t.requires_grad_();
      c.push_back(t);
    }
    return c;
  };
  Inputs a = copy(), b = copy();
  Tensor ya = fused(a), yb = composed(b);
  CHECK_CLOSE(ya, yb, 1e-5, 1e-4);
  Tensor r = randn(ya.shape());
  (ya * r).sum().backward();
  (yb * r).sum().backward();
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].requires_grad()) CHECK_CLOSE(a[i].grad(), b[i].grad(), 1e-5, 1e-4);
}

}  // namespace

TEST_CASE("softmax == exp / sum exp") {
  manual_seed(0);
  check_same([](const Inputs& x) { return softmax(x[0], -1); },
             [](const Inputs& x) {
               Tensor e = exp(x[0] - amax(x[0], {-1}, true).detach());
               return e / e.sum({-1}, true);
             },
             {randn({2, 5, 7}).requires_grad_()});
}

TEST_CASE("log_softmax == log(softmax)") {
  manual_seed(1);
  check_same([](const Inputs& x) { return log_softmax(x[0], 1); },
             [](const Inputs& x) { return log(softmax(x[0], 1)); },
             {randn({3, 6}).requires_grad_()});
}

TEST_CASE("layer_norm == (x - mean) / sqrt(var + eps) * w + b") {
  manual_seed(2);
  check_same([](const Inputs& x) { return layer_norm(x[0], {16}, x[1], x[2], 1e-5f); },
             [](const Inputs& x) {
               Tensor mu = x[0].mean({-1}, true);
               Tensor var = x[0].var({-1}, false, true);
               return (x[0] - mu) / sqrt(var + 1e-5f) * x[1] + x[2];
             },
             {randn({2, 3, 16}).requires_grad_(), randn({16}).requires_grad_(),
              randn({16}).requires_grad_()});
}

TEST_CASE("cross_entropy == -mean(log_softmax gathered at the targets), with smoothing") {
  manual_seed(3);
  const Tensor target = tensor({2, 0, 4, 1});
  check_same([&](const Inputs& x) { return cross_entropy(x[0], target); },
             [&](const Inputs& x) {
               Tensor lp = log_softmax(x[0], -1);
               return -gather(lp, 1, target.unsqueeze(1)).mean();
             },
             {randn({4, 5}).requires_grad_()});
  check_same(
      [&](const Inputs& x) { return cross_entropy(x[0], target, {.label_smoothing = 0.1f}); },
      [&](const Inputs& x) {
        Tensor lp = log_softmax(x[0], -1);
        Tensor nll = -gather(lp, 1, target.unsqueeze(1)).squeeze(1);
        Tensor smooth = -lp.mean({-1});
        return (nll * 0.9f + smooth * 0.1f).mean();
      },
      {randn({4, 5}).requires_grad_()});
  // One example: logits [C] and a 0-d target, as F.cross_entropy(x, torch.tensor(3)).
  const Tensor one = from_vector(std::vector<int64_t>{3}, Shape{});
  check_same([&](const Inputs& x) { return cross_entropy(x[0], one); },
             [&](const Inputs& x) { return -log_softmax(x[0], 0).select(0, 3); },
             {randn({5}).requires_grad_()});
}

// The plain NLL from the smoothed loss's own pass (fairseq's nll_loss): the loss with smoothing 0,
// over the counted targets only, for both reductions.
TEST_CASE("cross_entropy's nll option is the unsmoothed loss of the same pass") {
  manual_seed(5);
  const Tensor logits = randn({6, 7}), target = tensor({2, 0, 6, 1, 0, 3});
  for (const char* red : {"mean", "sum"}) {
    CAPTURE(red);
    double nll = -1;
    const float smoothed =
        cross_entropy(logits, target,
                      {.ignore_index = 0, .label_smoothing = 0.2f, .reduction = red, .nll = &nll})
            .item();
    const float plain = cross_entropy(logits, target, {.ignore_index = 0, .reduction = red}).item();
    CHECK(nll == static_cast<double>(plain));
    CHECK(std::abs(smoothed - plain) > 1e-3);  // smoothing did change the loss itself
  }
  double nll = 0;
  testing::check_error([&] { cross_entropy(logits, target, {.reduction = "none", .nll = &nll}); },
                       {"cross_entropy", "nll", "'none'"});
}

TEST_CASE("gelu == x * Φ(x), tanh form == its formula") {
  manual_seed(4);
  check_same([](const Inputs& x) { return gelu(x[0], "tanh"); },
             [](const Inputs& x) {
               const Tensor& v = x[0];
               Tensor inner = (v + pow(v, 3.0f) * 0.044715f) * 0.7978845608f;
               return v * 0.5f * (tanh(inner) + 1.0f);
             },
             {randn({3, 7}).requires_grad_()});
}

TEST_CASE("softmax is stable for large inputs, and logsumexp too") {
  Tensor x = tensor({1000.0f, 1001.0f, 1002.0f});
  Tensor p = softmax(x, 0);
  CHECK(p.sum().item() == doctest::Approx(1.0));
  CHECK(p.to_vector()[2] == doctest::Approx(0.66524));
  CHECK(logsumexp(x, {0}).item() == doctest::Approx(1002.40761));
  CHECK(std::isfinite(log_softmax(tensor({-1000.0f, 0.0f}), 0).to_vector()[0]));
}
