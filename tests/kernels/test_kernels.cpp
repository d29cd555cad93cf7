// Every registered fast kernel against its reference op: the same forward and the same gradient
// of every input, on shapes with odd sizes and edge tiles, on transposed, strided and broadcast
// inputs, with masks and dropout drawn from the same random stream, on one thread and two.
//
// Adding a kernel is one row in `table()` (`nn_table()` for nn/'s); a kernel registered without a
// row fails the first case.
#include <algorithm>
#include <functional>
#include <set>

#include "autograd/autograd.hpp"
#include "helpers.hpp"
#include "kernels/parallel.hpp"
#include "nn/nn.hpp"

namespace anatomy {
namespace {

using Inputs = std::vector<Tensor>;

// Fresh leaves: every float input requires grad, int64 ones (ids, targets) do not.
Tensor leaf(const Tensor& t) {
  Tensor c = t.detach();
  if (c.dtype() == kFloat32) c.requires_grad_(true);
  return c;
}
Tensor positive(Shape s) { return add(abs(randn(std::move(s))), 0.5f); }
// randn viewed as `shape` through a transpose of its last two dims (a non-contiguous input).
Tensor transposed(Shape shape) {
  std::swap(shape[shape.size() - 1], shape[shape.size() - 2]);
  return randn(shape).transpose(-1, -2);
}
// randn viewed as `shape` through a slice with step 2 of its last dim.
Tensor strided(Shape shape) {
  shape.back() *= 2;
  return randn(shape).slice(-1, 0, std::nullopt, 2);
}
Tensor causal(int64_t T) { return tril(ones({T, T})); }

struct Row {
  std::string kernel;                          // the name it is registered under
  std::function<std::vector<Inputs>()> cases;  // drawn after manual_seed
  std::function<Tensor(const Inputs&)> run;    // the op, on leaves made from one case
  double atol, rtol;                           // per op: the reorderings a fast kernel makes
};

std::vector<Row> table() {
  auto binary = [](const char* name, std::function<Tensor(const Tensor&, const Tensor&)> f,
                   bool positive_b) {
    return Row{name,
               [=] {
                 auto b = [&](Shape s) { return positive_b ? positive(s) : randn(s); };
                 return std::vector<Inputs>{{randn({3, 33}), b({3, 33})},
                                            {randn({2, 5, 17}), b({17})},
                                            {transposed({40, 9}), b({40, 1})},
                                            {strided({7, 20}), b({1})},
                                            {randn({1}), b({6, 1, 35})}};
               },
               [=](const Inputs& x) { return f(x[0], x[1]); }, 1e-6, 1e-5};
  };
  auto unary = [](const char* name, std::function<Tensor(const Tensor&)> f, bool pos,
                  double atol = 1e-6, double rtol = 1e-5) {
    return Row{name,
               [=] {
                 auto r = [&](Shape s) { return pos ? positive(s) : randn(s); };
                 return std::vector<Inputs>{
                     {r({1})}, {r({37})}, {r({4, 129})}, {abs(transposed({33, 18}))}, {r({70000})}};
               },
               [=](const Inputs& x) { return f(pos ? add(abs(x[0]), 0.5f) : x[0]); }, atol, rtol};
  };
  auto reduction = [](const char* name,
                      std::function<Tensor(const Tensor&, std::vector<int64_t>, bool)> f) {
    return Row{name,
               [] {
                 return std::vector<Inputs>{{randn({37})},
                                            {randn({5, 130})},
                                            {randn({3, 4, 33})},
                                            {transposed({6, 40})},
                                            {randn({300, 129})}};
               },
               [=](const Inputs& x) {
                 // Over every dim, the last, the first, and two at once.
                 const int64_t d = x[0].dim();
                 Tensor t = f(x[0], {}, false).reshape({-1});
                 t = cat({t, f(x[0], {-1}, false).reshape({-1})});
                 t = cat({t, f(x[0], {0}, true).reshape({-1})});
                 if (d >= 2) t = cat({t, f(x[0], {0, d - 1}, false).reshape({-1})});
                 return t;
               },
               1e-4, 1e-5};
  };
  auto argsearch = [](const char* name, std::function<Tensor(const Tensor&, int64_t)> f) {
    return Row{name,
               [] {
                 Tensor ties = randint(0, 3, {9, 40}).to(kFloat32);  // ties: the first one wins
                 return std::vector<Inputs>{{randn({5, 130})}, {transposed({6, 40})}, {ties}};
               },
               [=](const Inputs& x) {
                 return cat({f(x[0], -1).to(kFloat32), f(x[0], 0).to(kFloat32)});
               },
               0.0, 0.0};
  };
  auto rows = [](const char* name, std::function<Tensor(const Tensor&, int64_t)> f) {
    return Row{name,
               [] {
                 Tensor hidden = randn({4, 9});
                 hidden.slice(0, 0, 2).slice(1, 3, 9).fill_(-INFINITY);  // whole rows of -inf
                 return std::vector<Inputs>{{randn({1, 1})},       {randn({3, 7})},
                                            {randn({5, 130})},     {randn({4, 1000})},
                                            {transposed({6, 33})}, {hidden}};
               },
               [=](const Inputs& x) {
                 return cat({f(x[0], -1).reshape({-1}), f(x[0], 0).reshape({-1})});
               },
               1e-6, 1e-5};
  };
  auto norm_cases = [] {
    return std::vector<Inputs>{{randn({3, 5}), randn({5}), randn({5})},
                               {randn({2, 7, 128}), randn({128}), randn({128})},
                               {randn({4, 300}), randn({300}), randn({300})},
                               {transposed({24, 17}), randn({17}), randn({17})}};
  };
  auto cross_entropy_row = [](const char* name) {
    return Row{
        name,
        [] {
          Tensor t = randint(0, 33, {12});
          t.slice(0, 0, 3).fill_(-100);  // ignored
          return std::vector<Inputs>{{randn({12, 33}), t},
                                     {randn({4, 7, 5}), randint(0, 7, {4, 5})},
                                     {randn({9}), randint(0, 9, {})},
                                     {randn({6, 1000}), randint(0, 1000, {6})}};
        },
        [](const Inputs& x) {
          double nll = 0;
          std::vector<Tensor> parts;
          for (const char* red : {"mean", "sum"})
            for (float eps : {0.0f, 0.1f}) {
              parts.push_back(
                  cross_entropy(x[0], x[1], {.label_smoothing = eps, .reduction = red, .nll = &nll})
                      .reshape({1}));
              parts.push_back(full({1}, static_cast<float>(nll)));
            }
          parts.push_back(cross_entropy(x[0], x[1], {.reduction = "none"}).reshape({-1}));
          return cat(parts);
        },
        1e-5, 1e-5};
  };
  const auto rtol = 1e-5;
  return {
      binary(
          "add.Tensor", [](auto& a, auto& b) { return add(a, b); }, false),
      binary(
          "sub.Tensor", [](auto& a, auto& b) { return sub(a, b); }, false),
      binary(
          "mul.Tensor", [](auto& a, auto& b) { return mul(a, b); }, false),
      binary(
          "div.Tensor", [](auto& a, auto& b) { return div(a, b); }, true),
      unary(
          "add.Scalar",
          [](auto& a) {
            return cat({add(a, 1.5f), a - 0.25f});
          },
          false),
      unary(
          "mul.Scalar", [](auto& a) { return mul(a, -2.5f); }, false),
      unary(
          "pow.Tensor_Scalar",
          [](auto& a) {
            return cat({pow(a, 2.0f), pow(a, 3.0f), pow(a, 0.5f), pow(a, -1.5f)});
          },
          true, 1e-5, 1e-5),
      unary(
          "neg", [](auto& a) { return neg(a); }, false),
      unary(
          "exp", [](auto& a) { return exp(a); }, false, 1e-6, 1e-5),
      unary(
          "log", [](auto& a) { return log(a); }, true, 1e-6, 1e-5),
      unary(
          "sqrt", [](auto& a) { return sqrt(a); }, true),
      unary(
          "rsqrt", [](auto& a) { return rsqrt(a); }, true),
      unary(
          "tanh", [](auto& a) { return tanh(a); }, false, 1e-6, 1e-5),
      unary(
          "sigmoid", [](auto& a) { return sigmoid(a); }, false),
      unary(
          "relu", [](auto& a) { return relu(a); }, false),
      unary(
          "gelu",
          [](auto& a) {
            return cat({gelu(a, "none"), gelu(a, "tanh")});
          },
          false, 1e-6, 1e-5),
      unary(
          "abs", [](auto& a) { return abs(a); }, false),
      Row{"masked_fill",
          [] {
            return std::vector<Inputs>{{randn({4, 33}), randint(0, 2, {33}).to(kFloat32)},
                                       {transposed({6, 20}), randint(0, 2, {6, 20}).to(kFloat32)}};
          },
          [](const Inputs& x) { return masked_fill(x[0], x[1].detach(), -1e9f); }, 0.0, 0.0},
      // mean folds with sum's kernel, then divides.
      reduction("sum",
                [](auto& a, auto d, bool k) {
                  return cat({sum(a, d, k).reshape({-1}), mean(a, d, k).reshape({-1})});
                }),
      reduction("amax", [](auto& a, auto d, bool k) { return amax(a, d, k); }),
      reduction("amin", [](auto& a, auto d, bool k) { return amin(a, d, k); }),
      argsearch("argmax", [](auto& a, int64_t d) { return argmax(a, d); }),
      argsearch("argmin", [](auto& a, int64_t d) { return argmin(a, d); }),
      Row{"matmul",
          [] {
            return std::vector<Inputs>{{randn({1, 1}), randn({1, 1})},
                                       {randn({17, 33}), randn({33, 65})},
                                       {randn({130, 300}), randn({300, 7})},
                                       {randn({3, 4, 9}), randn({9, 5})},
                                       {randn({2, 1, 5, 8}), randn({3, 8, 6})},
                                       {transposed({20, 31}), transposed({31, 18})},
                                       {randn({33}), randn({33, 4})},
                                       {randn({5, 33}), randn({33})},
                                       {randn({2, 200, 64}), transposed({2, 64, 200})}};
          },
          [](const Inputs& x) { return matmul(x[0], x[1]); }, 1e-4, rtol},
      Row{"linear",
          [] {
            return std::vector<Inputs>{{randn({1, 3}), randn({2, 3}), randn({2})},
                                       {randn({2, 9, 64}), randn({65, 64}), randn({65})},
                                       {randn({130, 33}), randn({17, 33}), Tensor()},
                                       {transposed({24, 40}), randn({24, 40}), randn({24})}};
          },
          [](const Inputs& x) { return linear(x[0], x[1], x[2]); }, 1e-4, rtol},
      Row{"linear_gelu",
          [] {
            return std::vector<Inputs>{{randn({1, 3}), randn({2, 3}), randn({2})},
                                       {randn({2, 9, 64}), randn({130, 64}), randn({130})},
                                       {randn({70, 33}), randn({17, 33}), Tensor()}};
          },
          [](const Inputs& x) {
            return cat(
                {linear_gelu(x[0], x[1], x[2], "none"), linear_gelu(x[0], x[1], x[2], "tanh")});
          },
          1e-4, rtol},
      rows("softmax", [](auto& a, int64_t d) { return softmax(a, d); }),
      rows("log_softmax", [](auto& a, int64_t d) { return log_softmax(a, d); }),
      Row{"layer_norm", norm_cases,
          [](const Inputs& x) {
            const Shape s{x[0].size(-1)};
            return cat({layer_norm(x[0], s, x[1], x[2]).reshape({-1}),
                        layer_norm(x[0], s, x[1], Tensor()).reshape({-1}),
                        layer_norm(x[0], s).reshape({-1})});
          },
          1e-5, rtol},
      Row{"dropout",
          [] {
            return std::vector<Inputs>{{randn({7})}, {randn({3, 129})}, {randn({70000})}};
          },
          [](const Inputs& x) {
            return cat({dropout(x[0], 0.3f, true), dropout(x[0], 1.0f, true)});
          },
          1e-6, rtol},
      Row{"dropout_add_layer_norm",
          [] {
            return std::vector<Inputs>{
                {randn({3, 5}), randn({3, 5}), randn({5}), randn({5})},
                {randn({2, 9, 128}), randn({2, 9, 128}), randn({128}), randn({128})},
                {randn({4, 300}), randn({4, 300}), randn({300}), Tensor()}};
          },
          [](const Inputs& x) {
            const Shape s{x[0].size(-1)};
            auto [sum1, normed1] = dropout_add_layer_norm(x[0], x[1], 0.2f, true, s, x[2], x[3]);
            auto [sum2, normed2] = dropout_add_layer_norm(x[0], x[1], 0.2f, false, s, x[2], x[3]);
            return cat({sum1.reshape({-1}), normed1.reshape({-1}), normed2.reshape({-1})});
          },
          1e-5, rtol},
      // The two kernels of cross_entropy: the forward gives the result, the backward the
      // gradient, of the same calls.
      cross_entropy_row("cross_entropy"),
      cross_entropy_row("cross_entropy_backward"),
      Row{"flash_attention",
          [] {
            return std::vector<Inputs>{
                {randn({2, 3, 5, 8}), randn({2, 3, 7, 8}), randn({2, 3, 7, 4}), randn({5, 7})},
                {randn({2, 80, 16}), randn({2, 80, 16}), randn({2, 80, 16}), randn({1, 80, 80})},
                {randn({1, 1}), randn({1, 1}), randn({1, 1}), randn({1, 1})},
                {transposed({2, 40, 65}), randn({2, 33, 65}), transposed({2, 33, 9}),
                 randn({40, 33})}};
          },
          [](const Inputs& x) {
            const int64_t Tq = x[0].size(-2), Tk = x[1].size(-2);
            Tensor mask = Tq == Tk ? causal(Tq) : randint(0, 2, {Tq, Tk}).to(kFloat32);
            mask.select(0, 0).fill_(0.0f);  // a query whose every key is hidden
            return cat(
                {flash_attention(x[0], x[1], x[2], {}).reshape({-1}),
                 flash_attention(x[0], x[1], x[2], {.bias = x[3], .mask = mask}).reshape({-1}),
                 flash_attention(x[0], x[1], x[2],
                                 {.mask = mask, .dropout_p = 0.25f, .training = true})
                     .reshape({-1})});
          },
          1e-5, rtol},
      // The in-place methods: their result is the tensor written into (no gradient).
      Row{"fill_",
          [] {
            return std::vector<Inputs>{{randn({70000})}, {transposed({30, 20})}};
          },
          [](const Inputs& x) {
            Tensor t = x[0].detach().clone();
            return t.fill_(2.5f);
          },
          0.0, 0.0},
      Row{"copy_",
          [] {
            return std::vector<Inputs>{{randn({70000}), randn({70000})},
                                       {randn({30, 20}), transposed({30, 20})},
                                       {randn({30, 20}), randn({20})}};
          },
          [](const Inputs& x) {
            Tensor t = x[0].detach().clone();
            if (x[1].dim() == t.dim())  // into a transposed view of t
              t.transpose(0, -1).copy_(x[1].detach().transpose(0, -1));
            else
              t.copy_(x[1].detach());  // broadcast
            return t;
          },
          0.0, 0.0},
      Row{"add_",
          [] {
            return std::vector<Inputs>{{randn({70000}), randn({70000})},
                                       {randn({30, 20}), transposed({30, 20})},
                                       {randn({30, 20}), randn({20})}};
          },
          [](const Inputs& x) {
            Tensor t = x[0].detach().clone();
            t.add_(x[1].detach(), 0.5f);
            t.add_(x[1].detach());
            return t;
          },
          1e-6, 1e-6},
      Row{"mul_",
          [] {
            return std::vector<Inputs>{{randn({70000})}, {transposed({30, 20})}};
          },
          [](const Inputs& x) {
            Tensor t = x[0].detach().clone();
            return t.mul_(-1.5f);
          },
          1e-6, 1e-6},
  };
}

// --- The kernels of nn/: the optimizer, gradient clipping and the data-parallel step ---

// Three Adam and three AdamW steps on copies of `x` (one of them without weight decay, the
// matrices with a transposed gradient): every parameter and moment buffer after them, flat.
Tensor adam_steps(const Inputs& x) {
  std::vector<Tensor> out;
  for (const bool decoupled : {false, true}) {
    std::vector<Tensor> params;
    for (const Tensor& t : x) params.push_back(t.detach().clone().requires_grad_());
    Tensor no_grad = randn({3}).requires_grad_();  // never gets a gradient: not stepped
    auto with_no_grad = params;
    with_no_grad.push_back(no_grad);
    std::unique_ptr<nn::Optimizer> opt;
    if (decoupled)
      opt = std::make_unique<nn::AdamW>(with_no_grad,
                                        nn::AdamWOptions{.lr = 0.01, .weight_decay = 0.1});
    else
      opt = std::make_unique<nn::Adam>(with_no_grad,
                                       nn::AdamOptions{.lr = 0.01, .weight_decay = 0.1});
    opt->set_weight_decay({params[0]}, 0.0);
    for (int step = 0; step < 3; ++step) {
      for (Tensor& p : params) {
        Tensor g = p.dim() == 2 ? randn({p.size(1), p.size(0)}).transpose(0, 1) : randn(p.shape());
        p.set_grad(g);
      }
      opt->step();
    }
    for (const Tensor& p : with_no_grad) out.push_back(p.detach().reshape({-1}));
    for (const auto& [name, buffer] : opt->state_dict())
      if (name != "step") out.push_back(buffer.reshape({-1}));
  }
  return cat(out);
}

// clip_grad_norm_ of gradients `x` (plus one strided and one parameter listed twice), by the
// 2-norm and the infinity norm, clipping and not: each norm, then every gradient after it.
Tensor clip_grad_norms(const Inputs& x) {
  std::vector<Tensor> out;
  for (const float norm_type : {2.0f, INFINITY})
    for (const float max_norm : {0.5f, 1e6f}) {
      std::vector<Tensor> params;
      for (const Tensor& g : x) {
        params.push_back(zeros(g.shape()).requires_grad_());
        params.back().set_grad(g.detach().clone());
      }
      Tensor wide = randn({41, 2});
      params.push_back(zeros({41}).requires_grad_());
      params.back().set_grad(wide.select(1, 0));  // stride 2
      params.push_back(params[0]);                // scaled twice, as torch does
      const float norm = nn::clip_grad_norm_(params, max_norm, norm_type);
      out.push_back(full({1}, norm));
      for (const Tensor& p : params) out.push_back(p.grad().reshape({-1}));
    }
  return cat(out);
}

// A data-parallel step of a Linear layer with weight x[1] and bias x[2] over the rows of x[0],
// split by DataParallel::parts (`by_threads`) or into two parts: the module's gradients after
// reduce_gradients, which are the whole batch's either way.
Tensor data_parallel_step(const Inputs& x, bool by_threads) {
  const int64_t rows = x[0].size(0), in = x[1].size(1), out = x[1].size(0);
  nn::Linear model(in, out);
  {
    NoGradGuard no_grad;
    model.weight.copy_(x[1].detach());
    model.bias.copy_(x[2].detach());
  }
  nn::DataParallel dp(model, [=] { return std::make_shared<nn::Linear>(in, out); });
  const int64_t n = by_threads ? dp.parts(rows) : 2;
  std::vector<Tensor> losses(n);
  const Tensor input = x[0].detach();
  dp.run(n, [&](int64_t k, nn::Module& m) {
    const auto [b, e] = nn::DataParallel::part_rows(rows, k, n);
    const Tensor y = dynamic_cast<nn::Linear&>(m).forward(input.slice(0, b, e));
    losses[k] = sum(mul(y, y));
  });
  dp.run(n, [&](int64_t k, nn::Module&) { losses[k].backward(); });
  dp.reduce_gradients();
  return cat({model.weight.grad().reshape({-1}), model.bias.grad()}).detach();
}

// The rows of the kernels of nn/'s training step, in a block of their own.
std::vector<Row> nn_table() {
  auto data_parallel_cases = [] {
    return std::vector<Inputs>{{randn({7, 5}), randn({3, 5}), randn({3})},
                               {randn({2, 33}), randn({70, 33}), randn({70})},
                               {randn({65, 4}), randn({1, 4}), randn({1})}};
  };
  auto clip_cases = [] {
    return std::vector<Inputs>{{randn({1})},
                               {randn({37}), randn({4, 129}), randn({70001})},
                               {randn({3, 5}), transposed({40, 9}), randn({17})}};
  };
  return {
      Row{"adam",
          [] {
            return std::vector<Inputs>{{randn({1}), randn({37}), randn({4, 33}), randn({70001})},
                                       {randn({17}), randn({16})}};
          },
          adam_steps, 1e-6, 1e-5},
      Row{"_foreach_norm", clip_cases, clip_grad_norms, 1e-5, 1e-5},
      Row{"_foreach_mul_", clip_cases, clip_grad_norms, 1e-5, 1e-5},
      // On the reference path the batch is one part; on the fast one, a part a thread.
      Row{"data_parallel.parts", data_parallel_cases,
          [](const Inputs& x) { return data_parallel_step(x, true); }, 1e-5, 1e-5},
      Row{"data_parallel.run", data_parallel_cases,
          [](const Inputs& x) { return data_parallel_step(x, false); }, 1e-5, 1e-5},
      Row{"data_parallel.reduce_gradients", data_parallel_cases,
          [](const Inputs& x) { return data_parallel_step(x, false); }, 1e-5, 1e-5},
  };
}

// The backward kernels: each is checked by its forward's row, whose gradients it computes (the
// fast path runs both kernels of the op, the reference path neither).
std::vector<Row> with_backward_kernels(std::vector<Row> rows) {
  const std::pair<const char*, const char*> backward_of[] = {
      {"pow_backward", "pow.Tensor_Scalar"},
      {"sqrt_backward", "sqrt"},
      {"rsqrt_backward", "rsqrt"},
      {"tanh_backward", "tanh"},
      {"sigmoid_backward", "sigmoid"},
      {"relu_backward", "relu"},
      {"gelu_backward", "gelu"},
      {"abs_backward", "abs"},
      {"softmax_backward", "softmax"},
      {"log_softmax_backward", "log_softmax"},
      {"layer_norm_backward", "layer_norm"},
      {"linear_gelu_backward", "linear_gelu"},
      {"flash_attention_backward", "flash_attention"},
  };
  for (const auto& names : backward_of) {
    const std::string forward = names.second;
    auto it =
        std::find_if(rows.begin(), rows.end(), [&](const Row& r) { return r.kernel == forward; });
    REQUIRE_MESSAGE(it != rows.end(), "table() has no row '" << forward << "'");
    Row row = *it;
    row.kernel = names.first;
    rows.push_back(std::move(row));
  }
  return rows;
}

struct Result {
  Tensor out;
  std::vector<Tensor> grads;
};

// One run of `row` on `inputs` on the chosen path: the output and the gradient of every input,
// for an upstream gradient drawn from `seed` (dropout's draws follow the same seed).
Result run(const Row& row, const Inputs& inputs, const char* path, int threads, uint64_t seed) {
  set_kernels(path);
  set_num_threads(threads);
  Inputs x;
  for (const auto& t : inputs) x.push_back(t.defined() ? leaf(t) : Tensor());
  manual_seed(seed);
  Result r;
  r.out = row.run(x);
  if (r.out.requires_grad()) {
    r.out.backward(randn(r.out.shape()));
    for (const auto& t : x)
      r.grads.push_back(t.defined() && t.requires_grad() ? t.grad() : Tensor());
  }
  return r;
}

TEST_CASE("every registered fast kernel equals its reference op, forward and gradients") {
  const std::string path = kernels();  // put back at the end
  auto rows = with_backward_kernels(table());
  for (Row& row : nn_table()) rows.push_back(std::move(row));
  std::set<std::string> listed;
  for (const auto& row : rows) listed.insert(row.kernel);
  for (const auto& name : registered_kernels())
    if (!name.starts_with("test."))  // registered by the test below
      CHECK_MESSAGE(listed.count(name), "the kernel '" << name << "' has no row in table()");
  const auto kernels = registered_kernels();
  for (const auto& row : rows) {
    // std::count, not std::ranges::count: libc++ before 15 has no range algorithms.
    CHECK_MESSAGE(std::count(kernels.begin(), kernels.end(), row.kernel) == 1,
                  "table() names '" << row.kernel << "', which no fast kernel registers");
    manual_seed(7);
    const auto cases = row.cases();
    for (size_t c = 0; c < cases.size(); ++c) {
      const Result ref = run(row, cases[c], "reference", 1, 100 + c);
      for (int threads : {1, 2}) {
        CAPTURE(row.kernel);
        CAPTURE(c);
        CAPTURE(threads);
        const Result fast = run(row, cases[c], "fast", threads, 100 + c);
        CHECK_CLOSE(fast.out, ref.out, row.atol, row.rtol);
        REQUIRE(fast.grads.size() == ref.grads.size());
        for (size_t i = 0; i < ref.grads.size(); ++i) {
          CAPTURE(i);
          REQUIRE(fast.grads[i].defined() == ref.grads[i].defined());
          if (ref.grads[i].defined()) CHECK_CLOSE(fast.grads[i], ref.grads[i], row.atol, row.rtol);
        }
      }
    }
  }
  set_kernels(path);
  set_num_threads(0);
}

// The node is the op's on either path, and only its loops come from the chosen one: a graph
// recorded with one choice runs its backward with the other and gets the same gradients.
TEST_CASE("a graph recorded on one path runs its backward on the other") {
  const std::string path = kernels();
  manual_seed(3);
  const Tensor x0 = randn({5, 33}), w0 = randn({33}), b0 = randn({33}), r0 = randn({5, 33});
  auto gradients = [&](const char* forward, const char* backward) {
    set_kernels(forward);
    Tensor x = leaf(x0), w = leaf(w0), b = leaf(b0);
    Tensor h = tanh(x) * sigmoid(x) + sqrt(abs(x) + 0.5f) - relu(x) / 3.0f;
    Tensor y = gelu(layer_norm(h, {33}, w, b), "tanh");
    Tensor loss = sum(softmax(y, -1) * r0) + sum(log_softmax(pow(y, 2.0f), 0) * r0);
    set_kernels(backward);
    loss.backward();
    return std::vector<Tensor>{x.grad(), w.grad(), b.grad()};
  };
  const auto expected = gradients("reference", "reference");
  for (const auto& paths : {std::pair{"fast", "reference"}, {"reference", "fast"}}) {
    // Named copies: clang 14 does not let CAPTURE's lambda capture a structured binding.
    const std::string forward = paths.first, backward = paths.second;
    CAPTURE(forward);
    const auto got = gradients(forward.c_str(), backward.c_str());
    for (size_t i = 0; i < got.size(); ++i) CHECK_CLOSE(got[i], expected[i], 1e-5, 1e-4);
  }
  set_kernels(path);
}

int twice(int v) { return 2 * v; }

TEST_CASE("fast_kernel finds a registered kernel on the fast path only, and checks its type") {
  register_kernel<int(int)>("test.twice", twice);
  const std::string path = kernels();
  set_kernels("reference");
  auto found = [](const char* op) { return fast_kernel<int(int)>(op) != nullptr; };
  CHECK_FALSE(found("test.twice"));
  set_kernels("fast");
  REQUIRE(found("test.twice"));
  CHECK(fast_kernel<int(int)>("test.twice")(21) == 42);
  CHECK_FALSE(found("test.none"));
  CHECK_THROWS_WITH_AS(fast_kernel<float(float)>("test.twice"), doctest::Contains("'test.twice'"),
                       Error);
  set_kernels(path);
}

TEST_CASE("an unknown kernels name is refused, naming ANATOMY_KERNELS and its values") {
  const std::string path = kernels();
  CHECK_THROWS_WITH_AS(set_kernels("quick"),
                       doctest::Contains("ANATOMY_KERNELS takes reference or fast"), Error);
  CHECK(kernels() == path);
}

}  // namespace
}  // namespace anatomy
