// Finite-difference gradchecks: every differentiable op, including broadcast cases and
// non-contiguous (transposed, sliced) inputs. Adding an op is one line in the table.
#include "helpers.hpp"

using namespace anatomy;
using Inputs = std::vector<Tensor>;

namespace {

Tensor leaf(Shape s) { return randn(std::move(s)).requires_grad_(); }
Tensor positive(Shape s) { return (rand(std::move(s)) * 1.5f + 0.5f).detach().requires_grad_(); }
// A leaf whose strides are not row-major: the transpose of a [cols, rows] tensor.
Tensor transposed(int64_t rows, int64_t cols) { return randn({cols, rows}).t().requires_grad_(); }
// A leaf that is a strided slice of a bigger buffer (every other column).
Tensor sliced(int64_t rows, int64_t cols) {
  return randn({rows, 2 * cols}).slice(1, 0, std::nullopt, 2).requires_grad_();
}
Tensor ids(std::vector<int64_t> v, Shape s) { return from_vector(v, std::move(s)); }

struct Case {
  const char* name;
  std::function<Inputs()> inputs;
  std::function<Tensor(const Inputs&)> fn;
};

const std::vector<Case> kCases = {
    {"add",
     [] {
       return Inputs{leaf({2, 3}), leaf({2, 3})};
     },
     [](const Inputs& x) { return x[0] + x[1]; }},
    {"add broadcast",
     [] {
       return Inputs{leaf({2, 3, 4}), leaf({4})};
     },
     [](const Inputs& x) { return x[0] + x[1]; }},
    {"add transposed",
     [] {
       return Inputs{transposed(3, 4), leaf({3, 1})};
     },
     [](const Inputs& x) { return x[0] + x[1]; }},
    {"add scalar",
     [] {
       return Inputs{leaf({2, 3})};
     },
     [](const Inputs& x) { return x[0] + 2.0f; }},
    {"sub broadcast",
     [] {
       return Inputs{leaf({3, 1}), leaf({1, 4})};
     },
     [](const Inputs& x) { return x[0] - x[1]; }},
    {"rsub", [] { return Inputs{leaf({3})}; }, [](const Inputs& x) { return 1.0f - x[0]; }},
    {"mul broadcast",
     [] {
       return Inputs{leaf({2, 3, 4}), leaf({3, 1})};
     },
     [](const Inputs& x) { return x[0] * x[1]; }},
    {"mul sliced",
     [] {
       return Inputs{sliced(3, 4), transposed(3, 4)};
     },
     [](const Inputs& x) { return x[0] * x[1]; }},
    {"mul scalar",
     [] {
       return Inputs{leaf({2, 3})};
     },
     [](const Inputs& x) { return x[0] * 3.0f; }},
    {"div broadcast",
     [] {
       return Inputs{leaf({2, 3}), positive({3})};
     },
     [](const Inputs& x) { return x[0] / x[1]; }},
    {"div scalar",
     [] {
       return Inputs{leaf({2, 3})};
     },
     [](const Inputs& x) { return x[0] / 4.0f; }},
    {"rdiv",
     [] {
       return Inputs{positive({2, 3})};
     },
     [](const Inputs& x) { return 2.0f / x[0]; }},
    {"neg", [] { return Inputs{transposed(2, 3)}; }, [](const Inputs& x) { return -x[0]; }},
    {"pow scalar",
     [] {
       return Inputs{positive({2, 3})};
     },
     [](const Inputs& x) { return pow(x[0], 3.0f); }},
    {"pow square",
     [] {
       return Inputs{leaf({2, 3})};
     },
     [](const Inputs& x) { return pow(x[0], 2.0f); }},
    {"pow fractional",
     [] {
       return Inputs{positive({2, 3})};
     },
     [](const Inputs& x) { return pow(x[0], -1.5f); }},
    {"pow tensor",
     [] {
       return Inputs{positive({2, 3}), leaf({3})};
     },
     [](const Inputs& x) { return pow(x[0], x[1]); }},
    {"exp", [] { return Inputs{sliced(2, 3)}; }, [](const Inputs& x) { return exp(x[0]); }},
    {"log",
     [] {
       return Inputs{positive({2, 3})};
     },
     [](const Inputs& x) { return log(x[0]); }},
    {"sqrt",
     [] {
       return Inputs{positive({2, 3})};
     },
     [](const Inputs& x) { return sqrt(x[0]); }},
    {"rsqrt",
     [] {
       return Inputs{positive({2, 3})};
     },
     [](const Inputs& x) { return rsqrt(x[0]); }},
    {"tanh",
     [] {
       return Inputs{leaf({2, 3})};
     },
     [](const Inputs& x) { return tanh(x[0]); }},
    {"sigmoid",
     [] {
       return Inputs{leaf({2, 3})};
     },
     [](const Inputs& x) { return sigmoid(x[0]); }},
    {"relu",
     [] {
       return Inputs{leaf({2, 5})};
     },
     [](const Inputs& x) { return relu(x[0]); }},
    {"gelu",
     [] {
       return Inputs{leaf({2, 5})};
     },
     [](const Inputs& x) { return gelu(x[0]); }},
    {"gelu tanh", [] { return Inputs{transposed(2, 5)}; },
     [](const Inputs& x) { return gelu(x[0], "tanh"); }},
    {"abs",
     [] {
       return Inputs{leaf({2, 5})};
     },
     [](const Inputs& x) { return abs(x[0]); }},
    {"clamp",
     [] {
       return Inputs{leaf({3, 5})};
     },
     [](const Inputs& x) { return clamp(x[0], -0.5f, 0.7f); }},
    {"maximum",
     [] {
       return Inputs{leaf({2, 3}), leaf({3})};
     },
     [](const Inputs& x) { return maximum(x[0], x[1]); }},
    {"minimum",
     [] {
       return Inputs{leaf({2, 3}), leaf({2, 1})};
     },
     [](const Inputs& x) { return minimum(x[0], x[1]); }},
    {"where",
     [] {
       return Inputs{leaf({2, 3}), leaf({3})};
     },
     [](const Inputs& x) { return where(gt(x[0], 0.0f), x[0], x[1]); }},
    {"masked_fill",
     [] {
       return Inputs{leaf({2, 4, 4})};
     },
     [](const Inputs& x) {
       return x[0].masked_fill(eq(tril(ones({4, 4})), 0.0f), -5.0f);
     }},
    {"tril",
     [] {
       return Inputs{leaf({2, 3, 3})};
     },
     [](const Inputs& x) { return tril(x[0]); }},
    {"triu",
     [] {
       return Inputs{leaf({3, 4})};
     },
     [](const Inputs& x) { return triu(x[0], 1); }},
    {"sum all",
     [] {
       return Inputs{leaf({2, 3})};
     },
     [](const Inputs& x) { return x[0].sum(); }},
    {"sum dims keepdim",
     [] {
       return Inputs{leaf({2, 3, 4})};
     },
     [](const Inputs& x) {
       return x[0].sum({0, 2}, true);
     }},
    {"sum transposed", [] { return Inputs{transposed(3, 4)}; },
     [](const Inputs& x) { return x[0].sum({0}); }},
    {"mean",
     [] {
       return Inputs{leaf({2, 3, 4})};
     },
     [](const Inputs& x) { return x[0].mean({-1}); }},
    {"var",
     [] {
       return Inputs{leaf({2, 5})};
     },
     [](const Inputs& x) { return x[0].var({1}); }},
    {"var biased", [] { return Inputs{sliced(3, 4)}; },
     [](const Inputs& x) { return x[0].var({0}, false, true); }},
    {"amax",
     [] {
       return Inputs{leaf({2, 3, 4})};
     },
     [](const Inputs& x) { return amax(x[0], {1}); }},
    {"amin all",
     [] {
       return Inputs{leaf({2, 3})};
     },
     [](const Inputs& x) { return amin(x[0]); }},
    {"max dim",
     [] {
       return Inputs{leaf({3, 4})};
     },
     [](const Inputs& x) { return max(x[0], 1).first; }},
    {"min dim keepdim", [] { return Inputs{transposed(3, 4)}; },
     [](const Inputs& x) { return min(x[0], 0, true).first; }},
    {"logsumexp",
     [] {
       return Inputs{leaf({2, 5})};
     },
     [](const Inputs& x) { return logsumexp(x[0], {1}); }},
    {"matmul 2d",
     [] {
       return Inputs{leaf({3, 4}), leaf({4, 2})};
     },
     [](const Inputs& x) { return matmul(x[0], x[1]); }},
    {"matmul transposed",
     [] {
       return Inputs{transposed(3, 4), transposed(4, 2)};
     },
     [](const Inputs& x) { return matmul(x[0], x[1]); }},
    {"matmul batched broadcast",
     [] {
       return Inputs{leaf({2, 1, 3, 4}), leaf({3, 4, 2})};
     },
     [](const Inputs& x) { return matmul(x[0], x[1]); }},
    {"matmul 3d x 2d",
     [] {
       return Inputs{leaf({2, 3, 4}), leaf({4, 5})};
     },
     [](const Inputs& x) { return matmul(x[0], x[1]); }},
    {"matmul vector",
     [] {
       return Inputs{leaf({4}), leaf({2, 4, 3})};
     },
     [](const Inputs& x) { return matmul(x[0], x[1]); }},
    {"dot",
     [] {
       return Inputs{leaf({4}), leaf({4})};
     },
     [](const Inputs& x) { return matmul(x[0], x[1]); }},
    {"bmm",
     [] {
       return Inputs{leaf({2, 3, 4}), leaf({2, 4, 5})};
     },
     [](const Inputs& x) { return bmm(x[0], x[1]); }},
    {"linear",
     [] {
       return Inputs{leaf({2, 3, 4}), leaf({5, 4}), leaf({5})};
     },
     [](const Inputs& x) { return linear(x[0], x[1], x[2]); }},
    {"linear_gelu",
     [] {
       return Inputs{leaf({2, 3, 4}), leaf({5, 4}), leaf({5})};
     },
     [](const Inputs& x) { return linear_gelu(x[0], x[1], x[2]); }},
    {"linear_gelu tanh, transposed weight",
     [] {
       return Inputs{sliced(3, 4), transposed(5, 4)};
     },
     [](const Inputs& x) { return linear_gelu(x[0], x[1], Tensor(), "tanh"); }},
    {"linear sliced input",
     [] {
       return Inputs{sliced(3, 4), transposed(5, 4)};
     },
     [](const Inputs& x) { return linear(x[0], x[1]); }},
    {"view",
     [] {
       return Inputs{leaf({2, 6})};
     },
     [](const Inputs& x) {
       return x[0].view({3, 4}) * x[0].view({3, 4});
     }},
    {"reshape transposed", [] { return Inputs{transposed(3, 4)}; },
     [](const Inputs& x) { return x[0].reshape({-1}) * 2.0f; }},
    {"transpose",
     [] {
       return Inputs{leaf({2, 3, 4})};
     },
     [](const Inputs& x) { return x[0].transpose(0, 2) * 2.0f; }},
    {"permute",
     [] {
       return Inputs{leaf({2, 3, 4})};
     },
     [](const Inputs& x) {
       return x[0].permute({1, 2, 0}) * 2.0f;
     }},
    {"unsqueeze squeeze",
     [] {
       return Inputs{leaf({3, 1})};
     },
     [](const Inputs& x) { return x[0].squeeze().unsqueeze(0) * 2.0f; }},
    {"expand",
     [] {
       return Inputs{leaf({3, 1})};
     },
     [](const Inputs& x) {
       return x[0].expand({2, 3, 4}) * 2.0f;
     }},
    {"flatten",
     [] {
       return Inputs{leaf({2, 3, 4})};
     },
     [](const Inputs& x) { return x[0].flatten(0, 1) * 2.0f; }},
    {"select",
     [] {
       return Inputs{leaf({2, 3, 4})};
     },
     [](const Inputs& x) { return x[0].select(1, 0) * 2.0f; }},
    {"slice",
     [] {
       return Inputs{leaf({2, 7})};
     },
     [](const Inputs& x) { return x[0].slice(1, 1, 6, 2) * 2.0f; }},
    {"narrow",
     [] {
       return Inputs{leaf({4, 3})};
     },
     [](const Inputs& x) { return x[0].narrow(0, 1, 2) * 2.0f; }},
    // Views of a non-leaf: the engine adds their gradients into the producer's buffer
    // (Node::input_part) instead of running their backward.
    {"select of a non-leaf, twice",
     [] {
       return Inputs{leaf({2, 3, 4})};
     },
     [](const Inputs& x) {
       const Tensor t = x[0] * x[0];
       return t.select(1, 0) * t.select(1, 2) + t.select(1, 0);
     }},
    {"strided slice and narrow of a non-leaf",
     [] {
       return Inputs{leaf({2, 3, 4})};
     },
     [](const Inputs& x) {
       const Tensor t = x[0] * x[0];
       return t.slice(1, 0, 3, 2) * t.narrow(2, 1, 3).narrow(1, 1, 2).slice(2, 0, 1) +
              t.slice(1, 1, 3);
     }},
    {"split",
     [] {
       return Inputs{leaf({5, 2})};
     },
     [](const Inputs& x) {
       auto p = split(x[0], 2);
       return p[0] * p[1];
     }},
    {"chunk",
     [] {
       return Inputs{leaf({2, 6})};
     },
     [](const Inputs& x) {
       auto p = chunk(x[0], 3, 1);
       return p[0] * p[2];
     }},
    {"contiguous", [] { return Inputs{transposed(3, 2)}; },
     [](const Inputs& x) { return x[0].contiguous() * 2.0f; }},
    {"clone",
     [] {
       return Inputs{leaf({3, 2})};
     },
     [](const Inputs& x) { return x[0].clone() * 2.0f; }},
    {"index_select",
     [] {
       return Inputs{leaf({4, 3})};
     },
     [](const Inputs& x) {
       return index_select(x[0], 0, ids({3, 0, 3}, {3}));
     }},
    {"gather",
     [] {
       return Inputs{leaf({3, 4})};
     },
     [](const Inputs& x) {
       return gather(x[0], 1, ids({0, 0, 3, 1, 2, 2}, {3, 2}));
     }},
    {"cat",
     [] {
       return Inputs{leaf({2, 3}), transposed(2, 2)};
     },
     [](const Inputs& x) {
       return cat({x[0], x[1]}, 1);
     }},
    {"stack",
     [] {
       return Inputs{leaf({2, 3}), leaf({2, 3})};
     },
     [](const Inputs& x) {
       return stack({x[0], x[1]}, 2);
     }},
    {"softmax",
     [] {
       return Inputs{leaf({2, 5})};
     },
     [](const Inputs& x) { return softmax(x[0], -1); }},
    {"softmax dim 0 transposed", [] { return Inputs{transposed(3, 4)}; },
     [](const Inputs& x) { return softmax(x[0], 0); }},
    // q [2, 3, 4], k [2, 5, 4], v [2, 5, 3] (a transposed view), a bias needing grad that
    // broadcasts over the batch, and a mask hiding key 4 from every query and key 0 from query 2.
    {"flash_attention",
     [] {
       return Inputs{leaf({2, 3, 4}), leaf({2, 5, 4}),
                     randn({2, 3, 5}).transpose(1, 2).requires_grad_(), leaf({1, 3, 5})};
     },
     [](const Inputs& x) {
       Tensor mask = ones({3, 5});
       mask.narrow(1, 4, 1).fill_(0.0f);
       mask.select(0, 2).narrow(0, 0, 1).fill_(0.0f);
       return flash_attention(x[0], x[1], x[2], {.bias = x[3], .mask = mask});
     }},
    {"log_softmax",
     [] {
       return Inputs{leaf({2, 5})};
     },
     [](const Inputs& x) { return log_softmax(x[0], 1); }},
    {"layer_norm",
     [] {
       return Inputs{leaf({2, 3, 6}), leaf({6}), leaf({6})};
     },
     [](const Inputs& x) { return layer_norm(x[0], {6}, x[1], x[2]); }},
    {"layer_norm no bias",
     [] {
       return Inputs{leaf({2, 3, 6}), leaf({6})};
     },
     [](const Inputs& x) { return layer_norm(x[0], {6}, x[1], Tensor()); }},
    {"layer_norm 2d no affine", [] { return Inputs{transposed(4, 3)}; },
     [](const Inputs& x) {
       return layer_norm(x[0], {4, 3});
     }},
    {"dropout",
     [] {
       return Inputs{leaf({4, 5})};
     },
     [](const Inputs& x) {
       manual_seed(7);
       return dropout(x[0], 0.3f, true);
     }},
    {"embedding",
     [] {
       return Inputs{leaf({6, 3})};
     },
     [](const Inputs& x) {
       return embedding(ids({1, 5, 1, 2}, {2, 2}), x[0], 0);
     }},
    {"cross_entropy",
     [] {
       return Inputs{leaf({3, 5})};
     },
     [](const Inputs& x) {
       return cross_entropy(x[0], ids({1, -100, 4}, {3}), {.label_smoothing = 0.2f});
     }},
    {"cross_entropy 3d none",
     [] {
       return Inputs{leaf({2, 4, 3})};
     },
     [](const Inputs& x) {
       return cross_entropy(x[0], ids({0, 1, 2, 3, 3, 1}, {2, 3}), {.reduction = "none"});
     }},
    {"mse_loss",
     [] {
       return Inputs{leaf({2, 3}), leaf({2, 3})};
     },
     [](const Inputs& x) { return mse_loss(x[0], x[1]); }},
};

}  // namespace

TEST_CASE("gradcheck: every differentiable op against central differences") {
  for (const auto& c : kCases) {
    SUBCASE(c.name) {
      manual_seed(42);
      auto inputs = c.inputs();
      const auto result = gradcheck(c.fn, inputs);
      CHECK_MESSAGE(result.ok, std::string(c.name), ": ", result.message);
    }
  }
}

TEST_CASE("gradcheck catches a wrong backward") {
  // A deliberately broken op: y = x², with backward claiming dy/dx = x.
  auto wrong = [](const Inputs& x) {
    Tensor y = (x[0] * x[0]).detach();
    return record(y, "WrongBackward", {x[0]},
                  [x0 = x[0].detach()](const Tensor& g) { return std::vector<Tensor>{g * x0}; });
  };
  manual_seed(1);
  Inputs in{leaf({3})};
  CHECK_FALSE(gradcheck(wrong, in).ok);
  // An output that does not require grad has no gradient to check: that fails too, saying why.
  const auto detached = gradcheck([](const Inputs& x) { return (x[0] * 2.0f).detach(); }, in);
  CHECK_FALSE(detached.ok);
  CHECK(detached.message.find("does not require grad") != std::string::npos);
  // A function must give a float32 tensor: neither an undefined one nor int64 indices.
  testing::check_error([&] { gradcheck([](const Inputs&) { return Tensor(); }, in); },
                       {"gradcheck", "float32 tensor"});
  testing::check_error([&] { gradcheck([](const Inputs& x) { return argmax(x[0], 0); }, in); },
                       {"gradcheck", "float32 tensor"});
}
