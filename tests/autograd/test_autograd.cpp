// The engine: requires_grad propagation, accumulation, zero_grad, retain_graph, NoGradGuard.
#include "helpers.hpp"

using namespace anatomy;
using testing::check_error;

TEST_CASE("micrograd's example: values and gradients") {
  // micrograd's README expression, with PyTorch's values: g = 24.7041, dg/da = 138.8338,
  // dg/db = 645.5773.
  Tensor a = full({}, -4.0f).requires_grad_();
  Tensor b = full({}, 2.0f).requires_grad_();
  Tensor c = a + b;
  Tensor d = a * b + pow(b, 3.0f);
  c = c + c + 1.0f;
  c = c + 1.0f + c + (-a);
  d = d + d * 2.0f + relu(b + a);
  d = d + 3.0f * d + relu(b - a);
  Tensor e = c - d;
  Tensor f = pow(e, 2.0f);
  Tensor g = f / 2.0f;
  g = g + 10.0f / f;
  g.backward();
  CHECK(g.item() == doctest::Approx(24.7041).epsilon(1e-4));
  CHECK(a.grad().item() == doctest::Approx(138.8338).epsilon(1e-4));
  CHECK(b.grad().item() == doctest::Approx(645.5773).epsilon(1e-4));
}

TEST_CASE("requires_grad propagates as in PyTorch") {
  Tensor x = randn({2, 2});
  Tensor w = randn({2, 2}).requires_grad_();
  CHECK_FALSE((x * x).requires_grad());
  Tensor y = x * w;
  CHECK(y.requires_grad());
  CHECK_FALSE(y.is_leaf());
  CHECK(w.is_leaf());
  CHECK(y.grad_fn()->name == "MulBackward0");
  // PyTorch names the full reduction 0 and the one over given dims 1 (even over all of them).
  CHECK(w.sum().grad_fn()->name == "SumBackward0");
  CHECK(w.sum({1}).grad_fn()->name == "SumBackward1");
  CHECK(w.sum({0, 1}).grad_fn()->name == "SumBackward1");
  CHECK(w.mean().grad_fn()->name == "MeanBackward0");
  CHECK(w.mean({0}).grad_fn()->name == "MeanBackward1");
  // transpose is a new view even when it changes nothing (a 1-D tensor, or a dim with itself).
  Tensor v = randn({3}).requires_grad_();
  CHECK(v.transpose(0, 0).grad_fn()->name == "TransposeBackward0");
  CHECK(v.transpose(0, -1).grad_fn()->name == "TransposeBackward0");
  CHECK(w.transpose(1, 1).grad_fn()->name == "TransposeBackward0");
  CHECK_FALSE(y.detach().requires_grad());
  CHECK(y.detach().is_leaf());
  check_error([&] { tensor({1, 2}).requires_grad_(); }, {"floating point"});
  check_error([&] { y.requires_grad_(false); }, {"leaf"});
  // A leaf may turn it off, and a non-leaf may be told again that it requires grad, as torch.
  Tensor leaf = randn({2}).requires_grad_();
  leaf.requires_grad_(false);
  CHECK_FALSE(leaf.requires_grad());
  y.requires_grad_(true);
  CHECK(y.requires_grad());
}

TEST_CASE("gradients accumulate until zero_grad (the trap micrograd users hit)") {
  Tensor w = tensor({1.0f, 2.0f}).requires_grad_();
  (w * w).sum().backward();
  CHECK(w.grad().to_vector() == std::vector<float>{2, 4});
  (w * w).sum().backward();
  CHECK(w.grad().to_vector() == std::vector<float>{4, 8});  // += across calls
  w.zero_grad();
  CHECK_FALSE(w.grad().defined());
  (w * 3.0f).sum().backward();
  CHECK(w.grad().to_vector() == std::vector<float>{3, 3});
}

TEST_CASE("a tensor used twice gets both contributions") {
  Tensor x = tensor({3.0f}).requires_grad_();
  Tensor y = x * x + x;  // dy/dx = 2x + 1 = 7
  y.sum().backward();
  CHECK(x.grad().item() == 7.0f);
  // A diamond: both paths through one intermediate.
  Tensor a = tensor({2.0f}).requires_grad_();
  Tensor b = a * 3.0f;
  Tensor c = b * b + b;  // dc/da = (2b + 1) * 3 = 39
  c.sum().backward();
  CHECK(a.grad().item() == 39.0f);
}

TEST_CASE(
    "parts picked by select and narrow add into their input's gradient, not into a gradient "
    "another input shares") {
  // AddBackward0 hands one gradient tensor to both t and w. The parts of t then add their
  // gradients into t's: were that done in place on the shared tensor, w (and y) would get them too.
  // Both orders of the two sums, so that the parts come before and after the shared gradient.
  for (bool parts_first : {true, false}) {
    CAPTURE(parts_first);
    Tensor x = arange(6.0, Dtype::Float32).reshape({2, 3}).requires_grad_();
    Tensor y = ones({2, 3}).requires_grad_();
    Tensor t = x * 2.0f, w = y * 3.0f;
    Tensor shared = (t + w).sum();
    Tensor parts = (t.select(0, 0) * 5.0f).sum() + (t.narrow(1, 1, 2) * 7.0f).sum();
    (parts_first ? parts + shared : shared + parts).backward();
    CHECK(y.grad().to_vector() == std::vector<float>(6, 3.0f));
    // dt = 1 + 5 on row 0 + 7 on columns 1 and 2; dx = 2 dt
    CHECK(x.grad().to_vector() == std::vector<float>{12, 26, 26, 2, 16, 16});
  }
}

// A leaf keeps the gradient it is handed when nothing else holds it (as PyTorch's AccumulateGrad
// steals it); one that another tensor or another leaf still holds is copied, since the leaf's
// gradient is later updated in place (accumulation, clipping, the optimizer).
TEST_CASE("a leaf's gradient is never another tensor's storage") {
  SUBCASE("one gradient for two leaves (AddBackward0 hands both the same tensor)") {
    Tensor a = tensor({1.0f, 2.0f}).requires_grad_(), b = tensor({3.0f, 4.0f}).requires_grad_();
    ((a + b) * tensor({2.0f, 3.0f})).sum().backward();  // a contiguous gradient, [2, 3]
    a.grad().add_(ones({2}));
    CHECK(a.grad().to_vector() == std::vector<float>{3, 4});
    CHECK(b.grad().to_vector() == std::vector<float>{2, 3});
  }
  SUBCASE("the gradient a caller passed to backward, handed on unchanged (CloneBackward0)") {
    Tensor x = tensor({1.0f, 2.0f}).requires_grad_();
    const Tensor g = tensor({5.0f, 6.0f});
    x.clone().backward(g);
    x.grad().add_(ones({2}));
    CHECK(g.to_vector() == std::vector<float>{5, 6});
    x.zero_grad();
    x.backward(g);  // a leaf as the root: its gradient is the caller's
    x.grad().mul_(0.0f);
    CHECK(g.to_vector() == std::vector<float>{5, 6});
  }
  SUBCASE("a view of the caller's gradient (ViewBackward0 reshapes it back)") {
    Tensor x = tensor({1.0f, 2.0f}).requires_grad_();
    const Tensor g = tensor({{5.0f}, {6.0f}});
    x.view({2, 1}).backward(g);
    x.grad().add_(ones({2}));
    CHECK(x.grad().to_vector() == std::vector<float>{6, 7});
    CHECK(g.to_vector() == std::vector<float>{5, 6});
  }
}

TEST_CASE("the graph is freed after backward unless retain_graph") {
  Tensor x = tensor({1.0f, 2.0f}).requires_grad_();
  Tensor y = (x * x).sum();
  y.backward(Tensor(), /*retain_graph=*/true);
  y.backward();  // allowed: the graph was kept
  CHECK(x.grad().to_vector() == std::vector<float>{4, 8});
  check_error([&] { y.backward(); }, {"backward through the graph a second time", "retain_graph"});
}

TEST_CASE("backward on a non-scalar needs an explicit gradient") {
  Tensor x = tensor({1.0f, 2.0f, 3.0f}).requires_grad_();
  Tensor y = x * 2.0f;
  check_error([&] { y.backward(); }, {"backward", "scalar outputs", "[3]"});
  y.backward(tensor({1.0f, 0.0f, -1.0f}));
  CHECK(x.grad().to_vector() == std::vector<float>{2, 0, -2});
  check_error([&] { (x * 2.0f).backward(ones({2})); }, {"Mismatch in shape"});
  check_error([&] { randn({2}).sum().backward(); }, {"does not require grad"});
}

TEST_CASE("NoGradGuard records nothing") {
  Tensor w = randn({3}).requires_grad_();
  {
    NoGradGuard guard;
    Tensor y = w * 2.0f;
    CHECK_FALSE(y.requires_grad());
    CHECK(y.grad_fn() == nullptr);
    CHECK_FALSE(is_grad_enabled());
  }
  CHECK(is_grad_enabled());
  CHECK((w * 2.0f).requires_grad());
}

TEST_CASE("intermediate results are freed once nothing holds them") {
  Tensor w = randn({4}).requires_grad_();
  std::weak_ptr<TensorImpl> watch;
  Tensor loss;
  {
    Tensor h = w * 2.0f;  // not saved by the next op's backward (add saves nothing)
    watch = h.impl_ptr();
    loss = (h + 1.0f).sum();
  }
  CHECK(watch.expired());
  loss.backward();
  CHECK(w.grad().to_vector() == std::vector<float>(4, 2.0f));
}

TEST_CASE("a long chain does not overflow the stack, in backward or when freed") {
  Tensor x = full({}, 1.0f).requires_grad_();
  Tensor w = full({}, 1.0f).requires_grad_();
  Tensor y = x;
  for (int i = 0; i < 100000; ++i) y = y * 1.0f;
  y.backward();
  CHECK(x.grad().item() == 1.0f);
  // A chain whose closures hold their inputs (mul by a tensor saves both operands), freed
  // without backward: destroying it must not recurse once per node either.
  Tensor z = x;
  for (int i = 0; i < 100000; ++i) z = z * w;
  z = Tensor();
  CHECK(x.requires_grad());
}

TEST_CASE("dropout: mask statistics, scaling, eval identity, seeded") {
  Tensor x = ones({100000});
  manual_seed(5);
  Tensor y = dropout(x, 0.1f, true);
  const auto v = y.to_vector();
  int64_t zeros_seen = 0;
  for (float e : v) {
    CHECK_MESSAGE((e == 0.0f || std::abs(e - 1.0f / 0.9f) < 1e-6f), e);
    zeros_seen += e == 0.0f;
  }
  CHECK(std::abs(static_cast<double>(zeros_seen) / 100000.0 - 0.1) < 0.01);
  manual_seed(5);
  CHECK(dropout(x, 0.1f, true).to_vector() == v);
  CHECK(dropout(x, 0.1f, false).is_same(x));
  CHECK(dropout(x, 1.0f, true).sum().item() == 0.0f);
  // Backward passes the gradient through the same mask with the same scale: for an input of
  // ones, the gradient of the sum is the output itself.
  Tensor w = ones({1000}).requires_grad_();
  manual_seed(6);
  Tensor d = dropout(w, 0.25f, true);
  d.sum().backward();
  CHECK(w.grad().to_vector() == d.detach().to_vector());
  CHECK(d.detach().min().item() == 0.0f);  // some were dropped
}

TEST_CASE("clamp's gradient is 1 on the closed interval [min, max], ends included, as in PyTorch") {
  // Expected from torch: x.clamp(-0.5, 0.7).sum().backward(), and with one bound only.
  auto grad_of = [](std::optional<float> lo, std::optional<float> hi) {
    Tensor x = tensor({-0.5f, 0.7f, -0.6f, 0.8f, 0.0f}).requires_grad_();
    clamp(x, lo, hi).sum().backward();
    return x.grad().to_vector();
  };
  CHECK(grad_of(-0.5f, 0.7f) == std::vector<float>{1, 1, 0, 0, 1});
  CHECK(grad_of(-0.5f, std::nullopt) == std::vector<float>{1, 1, 0, 1, 1});
  CHECK(grad_of(std::nullopt, 0.7f) == std::vector<float>{1, 1, 1, 0, 1});
}

TEST_CASE("scalar arithmetic records PyTorch's node names") {
  // From torch: (x + 2), (2 + x), (x - 2), (2 - x), (x * 2), (x / 2), (2 / x) and x ** 2.
  Tensor x = tensor({1.0f, 2.0f}).requires_grad_();
  CHECK((x + 2.0f).grad_fn()->name == "AddBackward0");
  CHECK((2.0f + x).grad_fn()->name == "AddBackward0");
  CHECK((x - 2.0f).grad_fn()->name == "SubBackward0");
  CHECK((2.0f - x).grad_fn()->name == "RsubBackward1");
  CHECK((x * 2.0f).grad_fn()->name == "MulBackward0");
  CHECK((2.0f * x).grad_fn()->name == "MulBackward0");
  CHECK((x / 2.0f).grad_fn()->name == "DivBackward0");
  CHECK((2.0f / x).grad_fn()->name == "MulBackward0");
  CHECK(pow(x, 2.0f).grad_fn()->name == "PowBackward0");
  CHECK(pow(x, x).grad_fn()->name == "PowBackward1");
}

// Keeping an element only when its draw is above p (not at p) would drop one grid point too
// many. Draws are multiples of 2^-24, so `keep when u >= p` keeps exactly 1 - p of
// them for a p on that grid; here p is the very draw the element gets.
TEST_CASE("dropout keeps an element whose draw equals p, and drops one just under p") {
  manual_seed(21);
  const float u = default_generator().uniform();
  REQUIRE(u > 0.0f);
  manual_seed(21);
  CHECK(dropout(ones({1}), u, true).item() == doctest::Approx(1.0f / (1.0f - u)).epsilon(1e-6));
  manual_seed(21);
  CHECK(dropout(ones({1}), std::nextafter(u, 1.0f), true).item() == 0.0f);
  // The fused residual step draws and keeps the same way.
  manual_seed(21);
  const auto kept = dropout_add_layer_norm(ones({1, 2}), zeros({1, 2}), u, true, {2});
  CHECK(kept.sum.to_vector()[0] == doctest::Approx(1.0f / (1.0f - u)).epsilon(1e-6));
  manual_seed(21);
  const auto dropped =
      dropout_add_layer_norm(ones({1, 2}), zeros({1, 2}), std::nextafter(u, 1.0f), true, {2});
  CHECK(dropped.sum.to_vector()[0] == 0.0f);
}

// Rows far from 0 relative to their spread (a residual stream that drifted): the variance is
// the mean of squared distances from the mean, not E[x^2] - mean^2, whose two large terms cancel
// in float32 and leave mostly rounding error. Checked on the reference op and the fast kernel
// against the same formula in double precision.
TEST_CASE("layer_norm: rows with mean 1e4 and spread 1 normalize as in double precision") {
  manual_seed(7);
  const int64_t C = 64;
  const Tensor x = randn({4, C}) + 1e4f;
  const auto xs = x.to_vector();
  std::vector<float> expected;
  for (int64_t n = 0; n < 4; ++n) {
    double mean = 0, var = 0;
    for (int64_t c = 0; c < C; ++c) mean += xs[static_cast<size_t>(n * C + c)];
    mean /= C;
    for (int64_t c = 0; c < C; ++c) {
      const double d = xs[static_cast<size_t>(n * C + c)] - mean;
      var += d * d;
    }
    var /= C;
    for (int64_t c = 0; c < C; ++c)
      expected.push_back(
          static_cast<float>((xs[static_cast<size_t>(n * C + c)] - mean) / std::sqrt(var + 1e-5)));
  }
  const std::string before = kernels();
  for (const char* k : {"reference", "fast"}) {
    CAPTURE(k);
    set_kernels(k);
    CHECK_CLOSE(layer_norm(x, {C}), from_vector(expected, {4, C}), 2e-2, 0);
  }
  set_kernels(before);
}
