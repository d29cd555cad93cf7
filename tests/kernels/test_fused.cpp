// Fused kernels against the same function composed from primitive ops (forward and gradient).
#include "helpers.hpp"

using namespace anatomy;
using Inputs = std::vector<Tensor>;

namespace {

// Runs fused and composed on copies of the same inputs; compares outputs and input gradients.
void check_same(const std::function<Tensor(const Inputs&)>& fused,
                const std::function<Tensor(const Inputs&)>& composed, const Inputs& inputs,
                double grad_atol = 1e-5) {
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
    if (a[i].requires_grad()) CHECK_CLOSE(a[i].grad(), b[i].grad(), grad_atol, 1e-4);
}

}  // namespace

TEST_CASE_FIXTURE(anatomy::testing::FastKernels, "softmax == exp / sum exp") {
  manual_seed(0);
  check_same([](const Inputs& x) { return softmax(x[0], -1); },
             [](const Inputs& x) {
               Tensor e = exp(x[0] - amax(x[0], {-1}, true).detach());
               return e / e.sum({-1}, true);
             },
             {randn({2, 5, 7}).requires_grad_()});
}

TEST_CASE_FIXTURE(anatomy::testing::FastKernels, "log_softmax == log(softmax)") {
  manual_seed(1);
  check_same([](const Inputs& x) { return log_softmax(x[0], 1); },
             [](const Inputs& x) { return log(softmax(x[0], 1)); },
             {randn({3, 6}).requires_grad_()});
}

TEST_CASE_FIXTURE(anatomy::testing::FastKernels,
                  "layer_norm == (x - mean) / sqrt(var + eps) * w + b") {
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

// Many rows on 2 threads: dw and db are summed per chunk of rows into the chunk's own partial
// buffer. Chunks sharing one buffer would race and lose rows' terms (often, not always: so ten
// times).
TEST_CASE_FIXTURE(anatomy::testing::FastKernels,
                  "layer_norm's weight and bias gradients over many rows on 2 threads") {
  const int before = get_num_threads();
  set_num_threads(2);
  manual_seed(12);
  for (int repeat = 0; repeat < 10; ++repeat)
    check_same([](const Inputs& x) { return layer_norm(x[0], {64}, x[1], x[2], 1e-5f); },
               [](const Inputs& x) {
                 Tensor mu = x[0].mean({-1}, true);
                 Tensor var = x[0].var({-1}, false, true);
                 return (x[0] - mu) / sqrt(var + 1e-5f) * x[1] + x[2];
               },
               {randn({4096, 64}).requires_grad_(), randn({64}).requires_grad_(),
                randn({64}).requires_grad_()},
               // Sums of 4096 terms of size ~1 in two orders differ by ~1e-4; a lost term by ~1.
               2e-3);
  set_num_threads(before);
}

// With a grain of one row, a small layer norm would be cut into a chunk per row or two on 2
// threads, and its bias gradient summed in another order. Under a quarter of kGrain
// values (the grain of rows that fit in registers; wider rows: kGrain) a norm is one chunk: the
// row-order sum, whatever the thread count. The gradient below makes the order
// visible: 1e8 + 1 - 1e8 + 1 + ... is 1 from the left and 0 in pairs.
TEST_CASE_FIXTURE(
    anatomy::testing::FastKernels,
    "layer_norm of a small input sums its bias gradient in row order on any thread count") {
  const int before = get_num_threads();
  std::vector<float> g;
  for (int n = 0; n < 16; ++n)
    for (int c = 0; c < 4; ++c) g.push_back(n % 2 == 1 ? 1.0f : n % 4 == 0 ? 1e8f : -1e8f);
  float row_order = 0.0f;
  for (int n = 0; n < 16; ++n) row_order += g[n * 4];
  REQUIRE(row_order == 1.0f);  // summed two rows at a time first, the same values give 0
  for (int threads : {1, 2}) {
    CAPTURE(threads);
    set_num_threads(threads);
    Tensor b = zeros({4}).requires_grad_();
    layer_norm(randn({16, 4}), {4}, Tensor(), b).backward(from_vector(g, {16, 4}));
    CHECK(b.grad().to_vector() == std::vector<float>(4, row_order));
  }
  set_num_threads(before);
}

TEST_CASE_FIXTURE(anatomy::testing::FastKernels,
                  "cross_entropy == -mean(log_softmax gathered at the targets), with smoothing") {
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
TEST_CASE_FIXTURE(anatomy::testing::FastKernels,
                  "cross_entropy's nll option is the unsmoothed loss of the same pass") {
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

TEST_CASE_FIXTURE(anatomy::testing::FastKernels, "gelu == x * Φ(x), tanh form == its formula") {
  manual_seed(4);
  check_same([](const Inputs& x) { return gelu(x[0], "tanh"); },
             [](const Inputs& x) {
               const Tensor& v = x[0];
               Tensor inner = (v + pow(v, 3.0f) * 0.044715f) * 0.7978845608f;
               return v * 0.5f * (tanh(inner) + 1.0f);
             },
             {randn({3, 7}).requires_grad_()});
}

TEST_CASE_FIXTURE(anatomy::testing::FastKernels,
                  "linear_gelu == gelu(linear(x, W, b)), both forms, with and without a bias") {
  manual_seed(11);
  for (const std::string form : {"none", "tanh"}) {
    CAPTURE(form);
    check_same([&](const Inputs& x) { return linear_gelu(x[0], x[1], x[2], form); },
               [&](const Inputs& x) { return gelu(linear(x[0], x[1], x[2]), form); },
               {randn({2, 9, 24}).requires_grad_(), randn({40, 24}).requires_grad_(),
                randn({40}).requires_grad_()});
    // A transposed weight view and no bias; more rows than one M block, K over one K slice.
    check_same([&](const Inputs& x) { return linear_gelu(x[0], x[1].t(), Tensor(), form); },
               [&](const Inputs& x) { return gelu(linear(x[0], x[1].t()), form); },
               {randn({150, 300}).requires_grad_(), randn({300, 20}).requires_grad_()}, 1e-4);
  }
}

// Without a graph (no_grad, or no input that requires grad) GELU goes over the product's own
// result: the same bits as the recorded form, which keeps the pre-activation apart.
TEST_CASE_FIXTURE(anatomy::testing::FastKernels,
                  "linear_gelu without a graph gives the bits of the recorded form") {
  manual_seed(13);
  for (const std::string form : {"none", "tanh"}) {
    CAPTURE(form);
    const Tensor x = randn({2, 50, 24}), w = randn({40, 24}).requires_grad_(), b = randn({40});
    const Tensor recorded = linear_gelu(x, w, b, form);
    REQUIRE(recorded.grad_fn());
    std::vector<float> plain;
    {
      NoGradGuard no_grad;
      const Tensor inferred = linear_gelu(x, w, b, form);
      CHECK_FALSE(inferred.grad_fn());
      plain = inferred.to_vector();
    }
    CHECK(plain == recorded.to_vector());
    CHECK(linear_gelu(x, w.detach(), b, form).to_vector() == recorded.to_vector());
    CHECK(plain != linear(x, w, b).to_vector());  // the activation was applied
  }
}

// The bias gradient is summed per chunk of rows, the chunks added in order: on 2 threads with
// many chunks it must still be Σ_rows of g ⊙ gelu'(h), and the same on every run.
TEST_CASE_FIXTURE(anatomy::testing::FastKernels,
                  "linear_gelu's bias gradient over many rows on 2 threads") {
  manual_seed(12);
  const int before = get_num_threads();
  set_num_threads(2);
  Tensor x = randn({5000, 8}), w = randn({16, 8}), b = randn({16}).requires_grad_(),
         g = randn({5000, 16});
  (linear_gelu(x, w, b) * g).sum().backward();
  Tensor first = b.grad().clone();
  b.zero_grad();
  (linear_gelu(x, w, b) * g).sum().backward();
  CHECK(first.to_vector() == b.grad().to_vector());
  Tensor b2 = b.detach().clone().requires_grad_();
  (gelu(linear(x, w, b2)) * g).sum().backward();
  CHECK_CLOSE(first, b2.grad(), 1e-3, 1e-4);
  set_num_threads(before);
}

TEST_CASE_FIXTURE(anatomy::testing::FastKernels,
                  "linear_gelu records AddmmActivationBackward0 and refuses bad input by name") {
  Tensor x = randn({3, 4}).requires_grad_(), w = randn({5, 4});
  CHECK(linear_gelu(x, w).grad_fn()->name == "AddmmActivationBackward0");
  testing::check_error([&] { linear_gelu(x, w, Tensor(), "exact"); },
                       {"linear_gelu", "none or tanh", "'exact'"});
  testing::check_error([&] { linear_gelu(x, randn({5, 3})); }, {"linear_gelu", "3x4 and 3x5"});
  testing::check_error([&] { linear_gelu(x, w, randn({4})); },
                       {"linear_gelu", "bias must have shape [5]", "[4]"});
}

// The fused residual step against dropout, add and layer_norm composed, from the same generator
// state: the same mask (so the same values), and the gradients of both outputs, in training
// (p = 0.3) and in eval (no mask), with and without the norm's affine parameters.
TEST_CASE_FIXTURE(anatomy::testing::FastKernels,
                  "dropout_add_layer_norm == layer_norm(residual + dropout(x)), both outputs") {
  for (bool training : {true, false})
    for (bool affine : {true, false}) {
      CAPTURE(training);
      CAPTURE(affine);
      manual_seed(13);
      Tensor x = randn({3, 5, 16}).requires_grad_(), r = randn({3, 5, 16}).requires_grad_();
      Tensor w = affine ? randn({16}).requires_grad_() : Tensor();
      Tensor b = affine ? randn({16}).requires_grad_() : Tensor();
      Tensor gs = randn({3, 5, 16}), gn = randn({3, 5, 16});
      auto leaf = [](const Tensor& t) {
        return t.defined() ? t.detach().clone().requires_grad_() : Tensor();
      };
      Tensor x2 = leaf(x), r2 = leaf(r), w2 = leaf(w), b2 = leaf(b);
      manual_seed(99);
      auto fused = dropout_add_layer_norm(x, r, 0.3f, training, {16}, w, b, 1e-5f);
      manual_seed(99);
      Tensor sum = r2 + dropout(x2, 0.3f, training);
      Tensor normed = layer_norm(sum, {16}, w2, b2, 1e-5f);
      // Close, not equal: r + x m may be one fused multiply-add. A different mask would be off
      // by a whole kept value.
      CHECK_CLOSE(fused.sum, sum, 1e-6, 1e-6);
      CHECK_CLOSE(fused.normed, normed, 1e-5, 1e-5);
      (fused.sum * gs + fused.normed * gn).sum().backward();
      (sum * gs + normed * gn).sum().backward();
      CHECK_CLOSE(x.grad(), x2.grad(), 1e-5, 1e-4);
      CHECK_CLOSE(r.grad(), r2.grad(), 1e-5, 1e-4);
      if (affine) {
        CHECK_CLOSE(w.grad(), w2.grad(), 1e-5, 1e-4);
        CHECK_CLOSE(b.grad(), b2.grad(), 1e-5, 1e-4);
      }
      // In training some elements are dropped (x's gradient 0 there) and the rest scaled.
      if (training) {
        const auto gx = x.grad().to_vector();
        CHECK(std::count(gx.begin(), gx.end(), 0.0f) > 5);
      }
    }
}

TEST_CASE_FIXTURE(anatomy::testing::FastKernels,
                  "dropout_add_layer_norm refuses bad input by name") {
  Tensor x = randn({2, 4}), r = randn({2, 4});
  testing::check_error(
      [&] {
        dropout_add_layer_norm(x, randn({2, 3}), 0.1f, true, {4});
      },
      {"dropout_add_layer_norm", "same shape", "[2, 4]", "[2, 3]"});
  testing::check_error([&] { dropout_add_layer_norm(x, r, 1.5f, true, {4}); },
                       {"dropout_add_layer_norm", "between 0 and 1", "1.5"});
  testing::check_error([&] { dropout_add_layer_norm(x, r, 0.1f, true, {3}); },
                       {"dropout_add_layer_norm", "normalized_shape=[3]"});
}

TEST_CASE_FIXTURE(anatomy::testing::FastKernels,
                  "softmax is stable for large inputs, and logsumexp too") {
  Tensor x = tensor({1000.0f, 1001.0f, 1002.0f});
  Tensor p = softmax(x, 0);
  CHECK(p.sum().item() == doctest::Approx(1.0));
  CHECK(p.to_vector()[2] == doctest::Approx(0.66524));
  CHECK(logsumexp(x, {0}).item() == doctest::Approx(1002.40761));
  CHECK(std::isfinite(log_softmax(tensor({-1000.0f, 0.0f}), 0).to_vector()[0]));
}

namespace {

// Attention composed from primitives: softmax(q kᵀ / √D + bias, masked) v, a row with every key
// hidden giving zeros, dropout on the weights.
Tensor composed_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& bias,
                          const Tensor& mask, float dropout_p = 0.0f) {
  Tensor s = matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<float>(q.size(-1)));
  if (bias.defined()) s = s + bias;
  if (mask.defined()) s = s.masked_fill(eq(mask, 0.0f), -INFINITY);
  Tensor dead = eq(amax(s.detach(), {-1}, true), -INFINITY);
  Tensor w = softmax(s.masked_fill(dead, 0.0f), -1).masked_fill(dead, 0.0f);
  if (dropout_p > 0.0f) w = dropout(w, dropout_p, true);
  return matmul(w, v);
}

// [T, T]: 1 on and below the diagonal.
Tensor causal(int64_t T) {
  Tensor m = ones({T, T});
  for (int64_t i = 0; i + 1 < T; ++i) m.select(0, i).narrow(0, i + 1, T - i - 1).fill_(0.0f);
  return m;
}

}  // namespace

// Distinct q, k and v (q = k = v would hide a transposed product), Tq = 70 so that the kernel's
// blocks of 64 query rows meet (dK and dV sum over both blocks), D != Dv, a bias that needs a
// gradient and broadcasts over the batch, a padding mask that hides every key of one query row.
TEST_CASE_FIXTURE(anatomy::testing::FastKernels,
                  "flash_attention == softmax(q kᵀ / √D + bias, masked) v, forward and gradients") {
  manual_seed(11);
  const int64_t B = 2, H = 3, Tq = 70, Tk = 9, D = 8, Dv = 5;
  Tensor mask = ones({B, 1, Tq, Tk});
  mask.select(0, 1).narrow(-1, 6, 3).fill_(0.0f);  // batch 1: keys 6..8 are padding
  mask.select(0, 0).select(1, 65).fill_(0.0f);     // batch 0, query 65: sees no key
  mask.select(0, 1).select(1, 3).narrow(-1, 0, 2).fill_(0.0f);
  for (const bool with_bias : {false, true}) {
    CAPTURE(with_bias);
    const Tensor bias = with_bias ? randn({1, H, Tq, Tk}).requires_grad_() : Tensor();
    check_same(
        [&](const Inputs& x) {
          return flash_attention(x[0], x[1], x[2],
                                 {.bias = with_bias ? x[3] : Tensor(), .mask = mask});
        },
        [&](const Inputs& x) {
          return composed_attention(x[0], x[1], x[2], with_bias ? x[3] : Tensor(), mask);
        },
        {randn({B, H, Tq, D}).requires_grad_(), randn({B, H, Tk, D}).requires_grad_(),
         randn({B, H, Tk, Dv}).requires_grad_(), with_bias ? bias : zeros({1})});
  }
  // The row with no visible key is zeros, not NaN, and so is its gradient.
  Tensor q = randn({B, H, Tq, D}).requires_grad_();
  Tensor out = flash_attention(q, randn({B, H, Tk, D}), randn({B, H, Tk, Dv}), {.mask = mask});
  CHECK(out.select(0, 0).select(1, 65).abs().sum().item() == 0.0f);
  out.sum().backward();
  CHECK(q.grad().select(0, 0).select(1, 65).abs().sum().item() == 0.0f);
  CHECK(std::isfinite(q.grad().sum().item()));
}

// Plain matrices, no batch dims: [Tq, D] x [Tk, D] x [Tk, Dv], as torch's
// scaled_dot_product_attention takes them.
TEST_CASE_FIXTURE(anatomy::testing::FastKernels, "flash_attention on 2-D query, key and value") {
  manual_seed(12);
  const Tensor mask =
      tensor({{1.0f, 1.0f, 0.0f, 1.0f}, {1.0f, 0.0f, 1.0f, 1.0f}, {0.0f, 1.0f, 1.0f, 1.0f}});
  check_same([&](const Inputs& x) { return flash_attention(x[0], x[1], x[2], {.mask = mask}); },
             [&](const Inputs& x) { return composed_attention(x[0], x[1], x[2], Tensor(), mask); },
             {randn({3, 5}).requires_grad_(), randn({4, 5}).requires_grad_(),
              randn({4, 2}).requires_grad_()});
}

// A row of scores is computed in registers when its keys fit in 8 vectors and its bias and mask
// lie side by side, else in passes over memory: key counts on both sides of a vector's width and
// of the 8 vectors (16 floats to a vector with AVX-512, 8 with AVX2); a bias and mask side by side,
// read through transposes (so not side by side), or none (then only the lanes past the last key
// must be kept out of the softmax); dropout; a row that sees no key. Values and the gradients of
// q, k, v and the bias against the composed ops.
TEST_CASE_FIXTURE(
    anatomy::testing::FastKernels,
    "flash_attention computes rows in registers or in passes, with the same results") {
  manual_seed(18);
  const int64_t B = 2, H = 2, Tq = 19, D = 8, Dv = 5;
  for (const int64_t Tk : {7, 16, 17, 24, 64, 65, 128, 129, 150}) {
    for (const std::string layout : {"side by side", "transposed", "none"}) {
      CAPTURE(Tk);
      CAPTURE(layout);
      // 1/0 masks: batch 1 hides its last 3 keys, batch 0's row 4 sees nothing.
      Tensor mask = ones({B, 1, Tq, Tk});
      mask.select(0, 1).narrow(-1, Tk - 3, 3).fill_(0.0f);
      mask.select(0, 0).select(1, 4).fill_(0.0f);
      Tensor bias = randn({1, H, Tq, Tk});
      if (layout == "transposed") {  // the same values, with the keys Tq floats apart
        mask = mask.transpose(-1, -2).contiguous().transpose(-1, -2);
        bias = bias.transpose(-1, -2).contiguous().transpose(-1, -2);
        CHECK(mask.stride(-1) == Tq);
      }
      if (layout == "none") mask = Tensor();
      check_same(
          [&](const Inputs& x) {
            return flash_attention(x[0], x[1], x[2], {mask.defined() ? x[3] : Tensor(), mask});
          },
          [&](const Inputs& x) {
            return composed_attention(x[0], x[1], x[2], mask.defined() ? x[3] : Tensor(), mask);
          },
          {randn({B, H, Tq, D}).requires_grad_(), randn({B, H, Tk, D}).requires_grad_(),
           randn({B, H, Tk, Dv}).requires_grad_(),
           mask.defined() ? bias.requires_grad_() : zeros({1})});
      const Tensor q0 = randn({B, H, Tq, D}), k0 = randn({B, H, Tk, D}), v0 = randn({B, H, Tk, Dv});
      Tensor qa = q0.clone().requires_grad_(), qb = q0.clone().requires_grad_();
      manual_seed(19);
      Tensor fused =
          flash_attention(qa, k0, v0, {.mask = mask, .dropout_p = 0.2f, .training = true});
      manual_seed(19);
      Tensor composed = composed_attention(qb, k0, v0, Tensor(), mask, 0.2f);
      CHECK_CLOSE(fused, composed, 1e-5, 1e-4);
      fused.sum().backward();
      composed.sum().backward();
      CHECK_CLOSE(qa.grad(), qb.grad(), 1e-5, 1e-4);
      if (mask.defined()) CHECK(fused.select(0, 0).select(1, 4).abs().sum().item() == 0.0f);
    }
  }
}

// Dropout on the weights draws the numbers dropout() draws on the whole [B, H, Tq, Tk] weights,
// so the fused op and the composed one agree under the same seed, and leave the generator at
// the same place; with 2 threads too.
TEST_CASE_FIXTURE(
    anatomy::testing::FastKernels,
    "flash_attention's dropout is dropout() on the weights, drawn from the same stream") {
  const int before = get_num_threads();
  for (const int threads : {1, 2}) {
    CAPTURE(threads);
    set_num_threads(threads);
    manual_seed(12);
    const Tensor q0 = randn({2, 4, 67, 8}), k0 = randn({2, 4, 30, 8}), v0 = randn({2, 4, 30, 8});
    Tensor qa = q0.clone().requires_grad_(), ka = k0.clone().requires_grad_();
    Tensor qb = q0.clone().requires_grad_(), kb = k0.clone().requires_grad_();
    manual_seed(13);
    Tensor fused = flash_attention(qa, ka, v0, {.dropout_p = 0.25f, .training = true});
    const uint32_t after_fused = default_generator().next_u32();
    manual_seed(13);
    Tensor composed = composed_attention(qb, kb, v0, Tensor(), Tensor(), 0.25f);
    CHECK(default_generator().next_u32() == after_fused);
    CHECK_CLOSE(fused, composed, 1e-5, 1e-4);
    Tensor r = randn(fused.shape());
    (fused * r).sum().backward();
    (composed * r).sum().backward();
    CHECK_CLOSE(qa.grad(), qb.grad(), 1e-5, 1e-4);
    CHECK_CLOSE(ka.grad(), kb.grad(), 1e-5, 1e-4);
    // Not the identity: about a quarter of the weights were dropped.
    manual_seed(13);
    CHECK_FALSE(flash_attention(q0, k0, v0, {}).to_vector() ==
                flash_attention(q0, k0, v0, {.dropout_p = 0.25f, .training = true}).to_vector());
  }
  set_num_threads(before);
}

// A causal mask hides every key past a block's last row from the whole block, and the kernel
// skips those keys (blocks of 16 rows then). T = 40 spans three blocks; the second mask also
// hides every key from the first 18 rows, so that one block sees no key at all. The bias needs a
// gradient: the skipped keys' must be 0.
TEST_CASE_FIXTURE(
    anatomy::testing::FastKernels,
    "flash_attention skips the keys a mask hides from a whole block, with the same results") {
  manual_seed(15);
  const int64_t B = 2, H = 2, T = 40, D = 8, Dv = 6;
  Tensor late = causal(T);
  late.narrow(0, 0, 18).fill_(0.0f);
  for (const Tensor& mask : {causal(T), late}) {
    check_same(
        [&](const Inputs& x) {
          return flash_attention(x[0], x[1], x[2], {x[3], mask});
        },
        [&](const Inputs& x) { return composed_attention(x[0], x[1], x[2], x[3], mask); },
        {randn({B, H, T, D}).requires_grad_(), randn({B, H, T, D}).requires_grad_(),
         randn({B, H, T, Dv}).requires_grad_(), randn({1, H, T, T}).requires_grad_()});
  }
  // Dropout draws the whole rows' numbers, the skipped keys' included.
  const Tensor q0 = randn({B, H, T, D}), k0 = randn({B, H, T, D}), v0 = randn({B, H, T, Dv});
  Tensor qa = q0.clone().requires_grad_(), qb = q0.clone().requires_grad_();
  manual_seed(16);
  Tensor fused =
      flash_attention(qa, k0, v0, {.mask = causal(T), .dropout_p = 0.3f, .training = true});
  manual_seed(16);
  Tensor composed = composed_attention(qb, k0, v0, Tensor(), causal(T), 0.3f);
  CHECK_CLOSE(fused, composed, 1e-5, 1e-4);
  fused.sum().backward();
  composed.sum().backward();
  CHECK_CLOSE(qa.grad(), qb.grad(), 1e-5, 1e-4);
}

// The heads' outputs lie as [B, Tq, H, Dv] (PyTorch's CPU layout), so merging the heads is a
// view; the gradient then comes back with the heads' rows H * Dv floats apart, and the backward
// reads it so. A gradient whose rows are not contiguous (through a transpose of the last two dims)
// is copied first. Both against the composed attention, values and gradients.
TEST_CASE_FIXTURE(
    anatomy::testing::FastKernels,
    "flash_attention's heads-inner output: merging heads is a view, gradients of any layout") {
  manual_seed(17);
  const int64_t B = 2, H = 3, T = 21, D = 8, Dv = 5;
  const Tensor mask = causal(T);
  Tensor out = flash_attention(randn({B, H, T, D}), randn({B, H, T, D}), randn({B, H, T, Dv}),
                               {.mask = mask});
  CHECK(out.transpose(1, 2).is_contiguous());
  const Inputs inputs{randn({B, H, T, D}).requires_grad_(), randn({B, H, T, D}).requires_grad_(),
                      randn({B, H, T, Dv}).requires_grad_()};
  auto merged = [&](const Tensor& o) { return o.transpose(1, 2).reshape({B, T, H * Dv}); };
  check_same(
      [&](const Inputs& x) { return merged(flash_attention(x[0], x[1], x[2], {.mask = mask})); },
      [&](const Inputs& x) { return merged(composed_attention(x[0], x[1], x[2], Tensor(), mask)); },
      inputs);
  check_same(
      [&](const Inputs& x) {
        return flash_attention(x[0], x[1], x[2], {.mask = mask}).transpose(-1, -2);
      },
      [&](const Inputs& x) {
        return composed_attention(x[0], x[1], x[2], Tensor(), mask).transpose(-1, -2);
      },
      inputs);
}

TEST_CASE_FIXTURE(anatomy::testing::FastKernels,
                  "flash_attention: results do not depend on the thread count") {
  const int before = get_num_threads();
  std::vector<std::vector<float>> got;
  for (const int threads : {1, 2}) {
    set_num_threads(threads);
    manual_seed(14);
    Tensor q = randn({3, 4, 80, 16}).requires_grad_(), k = randn({3, 4, 80, 16}).requires_grad_();
    Tensor v = randn({3, 4, 80, 16}).requires_grad_();
    Tensor out = flash_attention(q, k, v, {.mask = causal(80)});
    (out * out).sum().backward();
    std::vector<float> all = out.to_vector();
    for (const Tensor& g : {q.grad(), k.grad(), v.grad()}) {
      const auto gv = g.to_vector();
      all.insert(all.end(), gv.begin(), gv.end());
    }
    got.push_back(all);
  }
  set_num_threads(before);
  CHECK(got[0] == got[1]);
}

TEST_CASE_FIXTURE(anatomy::testing::FastKernels,
                  "flash_attention refuses what it cannot compute, naming what came") {
  testing::check_error(
      [] {
        flash_attention(randn({2, 3, 4}), randn({3, 5, 4}), randn({3, 5, 4}));
      },
      {"flash_attention", "same batch dims", "[2, 3, 4]", "[3, 5, 4]"});
  testing::check_error(
      [] {
        flash_attention(randn({2, 3, 4}), randn({2, 5, 6}), randn({2, 5, 4}));
      },
      {"flash_attention", "[2, 5, 6]"});
  testing::check_error(
      [] {
        flash_attention(randn({2, 3, 4}), randn({2, 5, 4}), randn({2, 5, 4}),
                        {.mask = ones({4, 5})});
      },
      {"flash_attention", "mask [4, 5]", "[2, 3, 5]"});
  testing::check_error(
      [] {
        flash_attention(randn({2, 3, 4}), randn({2, 5, 4}), randn({2, 5, 4}),
                        {.dropout_p = 1.5f, .training = true});
      },
      {"flash_attention", "between 0 and 1", "1.5"});
}
