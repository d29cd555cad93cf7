// PyTorch parity: every op's forward value and input gradients equal PyTorch's.
//
// The reference values come from tests/parity/make_golden.py (the test environment's PyTorch),
// written to the committed golden file tests/parity/golden/autograd.safetensors; `make golden`
// regenerates it. Each line below is the twin of the line with the same name in that script.
#include <numbers>

#include "helpers.hpp"

using namespace anatomy;
using Inputs = std::vector<Tensor>;

namespace {

struct Case {
  const char* name;
  std::function<Tensor(const Inputs&)> fn;
  double atol = 1e-5, rtol = 1e-4;
};

const Tensor causal = tril(ones({5, 5}));
constexpr float kSqrt768 = 27.712812921102035f;

const std::vector<Case> kCases = {
    {"add", [](const Inputs& x) { return x[0] + x[1]; }},
    {"add_bias", [](const Inputs& x) { return x[0] + x[1]; }},
    {"sub_broadcast", [](const Inputs& x) { return x[0] - x[1]; }},
    {"mul", [](const Inputs& x) { return x[0] * x[1]; }},
    {"mul_broadcast", [](const Inputs& x) { return x[0] * x[1]; }},
    {"div", [](const Inputs& x) { return x[0] / x[1]; }},
    {"div_scalar", [](const Inputs& x) { return x[0] / kSqrt768; }},
    {"rdiv", [](const Inputs& x) { return 2.0f / x[0]; }},
    {"rsub", [](const Inputs& x) { return 1.0f - x[0]; }},
    {"add_scalar", [](const Inputs& x) { return x[0] + 0.75f; }},
    {"mul_scalar", [](const Inputs& x) { return x[0] * -1.5f; }},
    {"sub_scalar", [](const Inputs& x) { return x[0] - 2.5f; }},
    {"eq", [](const Inputs& x) { return eq(x[0], x[1]); }},
    {"ne", [](const Inputs& x) { return ne(x[0], x[1]); }},
    {"lt", [](const Inputs& x) { return lt(x[0], x[1]); }},
    {"le", [](const Inputs& x) { return le(x[0], x[1]); }},
    {"gt", [](const Inputs& x) { return gt(x[0], x[1]); }},
    {"ge", [](const Inputs& x) { return ge(x[0], x[1]); }},
    {"gt_broadcast_scalar", [](const Inputs& x) { return gt(x[0], 0.5f); }},
    {"neg", [](const Inputs& x) { return -x[0]; }},
    {"pow_scalar", [](const Inputs& x) { return pow(x[0], 3.0f); }, 1e-5, 1e-4},
    {"pow_square", [](const Inputs& x) { return pow(x[0], 2.0f); }},
    {"pow_half", [](const Inputs& x) { return pow(x[0], 0.5f); }},
    {"pow_tensor", [](const Inputs& x) { return pow(x[0], x[1]); }},
    {"exp", [](const Inputs& x) { return exp(x[0]); }},
    {"log", [](const Inputs& x) { return log(x[0]); }},
    {"sqrt", [](const Inputs& x) { return sqrt(x[0]); }},
    {"rsqrt", [](const Inputs& x) { return rsqrt(x[0]); }},
    {"tanh", [](const Inputs& x) { return tanh(x[0]); }},
    {"sigmoid", [](const Inputs& x) { return sigmoid(x[0]); }},
    {"relu", [](const Inputs& x) { return relu(x[0]); }},
    {"gelu", [](const Inputs& x) { return gelu(x[0]); }},
    {"gelu_tanh", [](const Inputs& x) { return gelu(x[0], "tanh"); }},
    {"abs", [](const Inputs& x) { return abs(x[0]); }},
    {"clamp", [](const Inputs& x) { return clamp(x[0], -0.5f, 0.5f); }},
    {"maximum", [](const Inputs& x) { return maximum(x[0], x[1]); }},
    {"minimum", [](const Inputs& x) { return minimum(x[0], x[1]); }},
    {"where", [](const Inputs& x) { return where(gt(x[0], 0.0f), x[1], x[2]); }},
    {"masked_fill", [](const Inputs& x) { return x[0].masked_fill(eq(causal, 0.0f), -1e9f); }},
    {"tril", [](const Inputs& x) { return tril(x[0]); }},
    {"triu", [](const Inputs& x) { return triu(x[0], 1); }},
    {"sum_all", [](const Inputs& x) { return x[0].sum(); }, 1e-3, 1e-4},
    {"sum_dim", [](const Inputs& x) { return x[0].sum({-1}); }, 1e-4, 1e-4},
    {"sum_dims_keepdim",
     [](const Inputs& x) {
       return x[0].sum({0, 2}, true);
     }},
    {"mean_dim", [](const Inputs& x) { return x[0].mean({-1}, true); }},
    {"mean_all", [](const Inputs& x) { return x[0].mean(); }},
    {"var_dim", [](const Inputs& x) { return x[0].var({-1}); }},
    {"var_biased", [](const Inputs& x) { return x[0].var({1}, false); }},
    {"max_dim", [](const Inputs& x) { return max(x[0], 1).first; }},
    {"min_dim_keepdim", [](const Inputs& x) { return min(x[0], 0, true).first; }},
    {"amax",
     [](const Inputs& x) {
       return amax(x[0], {1, 2});
     }},
    {"max_all", [](const Inputs& x) { return x[0].max(); }},
    {"amin", [](const Inputs& x) { return amin(x[0], {0, 2}); }},
    {"min_all", [](const Inputs& x) { return x[0].min(); }},
    {"argmax_dim", [](const Inputs& x) { return argmax(x[0], 1); }},
    {"argmin_dim", [](const Inputs& x) { return argmin(x[0], 1); }},
    {"argmin_all", [](const Inputs& x) { return argmin(x[0]); }},
    {"logsumexp", [](const Inputs& x) { return logsumexp(x[0], {-1}); }},
    {"matmul_2d", [](const Inputs& x) { return matmul(x[0], x[1]); }, 1e-4, 1e-4},
    {"matmul_3d_2d", [](const Inputs& x) { return matmul(x[0], x[1]); }, 1e-4, 1e-4},
    {"matmul_qk", [](const Inputs& x) { return matmul(x[0], x[1].transpose(1, 2)); }, 1e-4, 1e-4},
    {"bmm", [](const Inputs& x) { return bmm(x[0], x[1]); }},
    {"mm", [](const Inputs& x) { return mm(x[0], x[1]); }},
    {"matmul_broadcast", [](const Inputs& x) { return matmul(x[0], x[1]); }},
    {"matmul_vec_mat", [](const Inputs& x) { return matmul(x[0], x[1]); }, 1e-4, 1e-4},
    {"matmul_mat_vec", [](const Inputs& x) { return matmul(x[0], x[1]); }, 1e-4, 1e-4},
    {"dot", [](const Inputs& x) { return matmul(x[0], x[1]); }},
    {"linear", [](const Inputs& x) { return linear(x[0], x[1], x[2]); }, 1e-4, 1e-4},
    {"linear_no_bias", [](const Inputs& x) { return linear(x[0], x[1]); }},
    {"linear_transposed_input", [](const Inputs& x) { return linear(x[0].t(), x[1], x[2]); }},
    {"linear_gelu", [](const Inputs& x) { return linear_gelu(x[0], x[1], x[2]); }},
    {"linear_gelu_long", [](const Inputs& x) { return linear_gelu(x[0], x[1], x[2]); }, 1e-4, 1e-4},
    {"linear_gelu_tanh_no_bias",
     [](const Inputs& x) { return linear_gelu(x[0], x[1], Tensor(), "tanh"); }},
    {"transpose", [](const Inputs& x) { return x[0].transpose(1, 2); }},
    {"permute",
     [](const Inputs& x) {
       return x[0].permute({2, 0, 1});
     }},
    {"split_heads",
     [](const Inputs& x) {
       return x[0].view({1, 5, 12, 64}).transpose(1, 2);
     }},
    {"reshape_noncontiguous",
     [](const Inputs& x) {
       return x[0].transpose(0, 2).reshape({4, 6});
     }},
    {"flatten", [](const Inputs& x) { return x[0].flatten(1); }},
    {"squeeze_unsqueeze", [](const Inputs& x) { return x[0].squeeze(1).unsqueeze(0); }},
    {"expand",
     [](const Inputs& x) {
       return x[0].expand({2, 3, 4});
     }},
    {"select_first_token", [](const Inputs& x) { return x[0].select(1, 0); }},
    {"slice_step", [](const Inputs& x) { return x[0].slice(1, 1, 4, 2); }},
    {"narrow", [](const Inputs& x) { return x[0].narrow(1, 2, 3); }},
    {"split", [](const Inputs& x) { return split(x[0], 4, 1)[1]; }},
    {"split_sizes",
     [](const Inputs& x) {
       const auto parts = split(x[0], std::vector<int64_t>{2, 3, 4}, 1);
       return cat({parts[0] * 1.0f, parts[1] * 2.0f, parts[2] * 3.0f}, 1);
     }},
    {"chunk", [](const Inputs& x) { return chunk(x[0], 3, 1)[2]; }},
    {"index_select", [](const Inputs& x) { return index_select(x[0], 0, x[1]); }},
    {"gather", [](const Inputs& x) { return gather(x[0], 1, x[1]); }},
    {"cat",
     [](const Inputs& x) {
       return cat({x[0], x[1]}, 1);
     }},
    {"stack",
     [](const Inputs& x) {
       return stack({x[0], x[1]}, 1);
     }},
    {"softmax", [](const Inputs& x) { return softmax(x[0], -1); }},
    {"softmax_dim1", [](const Inputs& x) { return softmax(x[0], 1); }},
    {"log_softmax", [](const Inputs& x) { return log_softmax(x[0], -1); }},
    {"layer_norm", [](const Inputs& x) { return layer_norm(x[0], {768}, x[1], x[2], 1e-12f); },
     1e-4, 1e-4},
    {"layer_norm_2d_no_affine",
     [](const Inputs& x) {
       return layer_norm(x[0], {3, 4});
     }},
    {"layer_norm_no_bias",
     [](const Inputs& x) { return layer_norm(x[0], {16}, x[1], Tensor(), 1e-5f); }},
    {"dropout_eval", [](const Inputs& x) { return dropout(x[0], 0.1f, false); }},
    {"embedding", [](const Inputs& x) { return embedding(x[0], x[1]); }},
    {"embedding_padding", [](const Inputs& x) { return embedding(x[0], x[1], 0); }},
    {"cross_entropy", [](const Inputs& x) { return cross_entropy(x[0], x[1]); }},
    {"cross_entropy_ignore", [](const Inputs& x) { return cross_entropy(x[0], x[1]); }},
    {"cross_entropy_smoothing",
     [](const Inputs& x) { return cross_entropy(x[0], x[1], {.label_smoothing = 0.1f}); }},
    {"cross_entropy_sum",
     [](const Inputs& x) { return cross_entropy(x[0], x[1], {.reduction = "sum"}); }},
    {"cross_entropy_none",
     [](const Inputs& x) { return cross_entropy(x[0], x[1], {.reduction = "none"}); }},
    {"cross_entropy_3d", [](const Inputs& x) { return cross_entropy(x[0], x[1]); }},
    {"mse_loss", [](const Inputs& x) { return mse_loss(x[0], x[1]); }},
    {"mse_loss_sum", [](const Inputs& x) { return mse_loss(x[0], x[1], "sum"); }},
    {"mse_loss_none", [](const Inputs& x) { return mse_loss(x[0], x[1], "none"); }},
    {"causal_attention",
     [](const Inputs& x) {
       Tensor scores = matmul(x[0], x[1].transpose(1, 2)) / 8.0f;
       scores = scores.masked_fill(eq(causal, 0.0f), -std::numeric_limits<float>::infinity());
       return matmul(softmax(scores, -1), x[2]);
     }},
};

}  // namespace

TEST_CASE("parity: every op matches PyTorch, forward and gradients") {
  static const auto golden =
      load_safetensors(testing::test_path("parity/golden/autograd.safetensors"));
  const auto& g = golden.tensors;
  size_t cases_in_file = 0;
  for (const auto& [key, t] : g)
    if (key.ends_with(".out")) ++cases_in_file;
  // Every case of the script has its twin here, and the other way round.
  CHECK(cases_in_file == kCases.size());
  for (const auto& c : kCases) {
    SUBCASE(c.name) {
      const std::string n = c.name;
      REQUIRE_MESSAGE(g.count(n + ".out"), "no golden values for ", n, ": run make golden");
      Inputs inputs;
      for (int i = 0; g.count(n + ".in" + std::to_string(i)); ++i) {
        Tensor x = g.at(n + ".in" + std::to_string(i)).clone();
        if (g.count(n + ".grad" + std::to_string(i))) x.requires_grad_();
        inputs.push_back(x);
      }
      Tensor out = c.fn(inputs);
      CHECK_CLOSE(out, g.at(n + ".out"), c.atol, c.rtol);
      if (!g.count(n + ".grad_out")) continue;
      REQUIRE(out.requires_grad());
      sum(out * g.at(n + ".grad_out")).backward();
      for (size_t i = 0; i < inputs.size(); ++i) {
        const std::string key = n + ".grad" + std::to_string(i);
        if (!g.count(key)) continue;
        INFO("gradient of input ", i);
        REQUIRE(inputs[i].grad().defined());
        CHECK_CLOSE(inputs[i].grad(), g.at(key), c.atol, c.rtol);
      }
    }
  }
}
