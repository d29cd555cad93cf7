// nn modules, optimizers and clipping against PyTorch: weights are the PyTorch module's
// state_dict, exported to tests/parity/golden/nn.safetensors by make_golden_nn.py and loaded
// here by name.
#include "helpers.hpp"
#include "nn/nn.hpp"

using namespace anatomy;

namespace {

const std::map<std::string, Tensor>& golden() {
  static const auto g =
      load_safetensors(testing::test_path("parity/golden/nn.safetensors")).tensors;
  return g;
}

nn::StateDict with_prefix(const std::string& prefix) {
  nn::StateDict out;
  for (const auto& [k, t] : golden())
    if (k.starts_with(prefix)) out[k.substr(prefix.size())] = t;
  return out;
}

struct ModuleCase {
  const char* name;
  std::function<std::shared_ptr<nn::Module>()> make;
  std::function<Tensor(nn::Module&, const std::vector<Tensor>&)> forward;
};

Tensor call(nn::Module& m, const std::vector<Tensor>& x) { return m.forward(x[0]); }

const std::vector<ModuleCase> kModules = {
    {"linear", [] { return std::make_shared<nn::Linear>(768, 64); }, call},
    {"linear_no_bias", [] { return std::make_shared<nn::Linear>(8, 4, false); }, call},
    {"embedding", [] { return std::make_shared<nn::Embedding>(50, 16, 0); }, call},
    {"layer_norm", [] { return std::make_shared<nn::LayerNorm>(Shape{768}, 1e-12f); }, call},
    {"gelu", [] { return std::make_shared<nn::GELU>(); }, call},
    {"relu", [] { return std::make_shared<nn::ReLU>(); }, call},
    {"softmax", [] { return std::make_shared<nn::Softmax>(-1); }, call},
    {"dropout_eval", [] { return std::make_shared<nn::Dropout>(0.1f); }, call},
    {"sequential",
     [] {
       auto s = std::make_shared<nn::Sequential>();
       s->push_back(std::make_shared<nn::Linear>(16, 32));
       s->push_back(std::make_shared<nn::GELU>());
       s->push_back(std::make_shared<nn::Linear>(32, 8));
       s->push_back(std::make_shared<nn::Dropout>(0.1f));
       return s;
     },
     call},
    {"cross_entropy_loss",
     [] {
       return std::make_shared<nn::CrossEntropyLoss>(
           CrossEntropyOptions{.ignore_index = 0, .label_smoothing = 0.1f});
     },
     [](nn::Module& m, const std::vector<Tensor>& x) {
       return dynamic_cast<nn::CrossEntropyLoss&>(m)(x[0], x[1]);
     }},
    {"mse_loss", [] { return std::make_shared<nn::MSELoss>(); },
     [](nn::Module& m, const std::vector<Tensor>& x) {
       return dynamic_cast<nn::MSELoss&>(m)(x[0], x[1]);
     }},
};

}  // namespace

TEST_CASE("nn parity: modules with PyTorch's weights give PyTorch's outputs and gradients") {
  const auto& g = golden();
  for (const auto& c : kModules) {
    SUBCASE(c.name) {
      const std::string n = c.name;
      auto m = c.make();
      m->load_state_dict(with_prefix(n + ".param."));  // strict: every name must match
      m->eval();
      std::vector<Tensor> in;
      for (int i = 0; g.count(n + ".in" + std::to_string(i)); ++i) {
        Tensor x = g.at(n + ".in" + std::to_string(i)).clone();
        if (i == 0 && x.dtype() == kFloat32) x.requires_grad_();
        in.push_back(x);
      }
      Tensor y = c.forward(*m, in);
      CHECK_CLOSE(y, g.at(n + ".out"), 1e-4, 1e-4);
      sum(y * g.at(n + ".grad_out")).backward();
      if (g.count(n + ".grad0")) CHECK_CLOSE(in[0].grad(), g.at(n + ".grad0"), 1e-4, 1e-4);
      for (const auto& named : m->named_parameters()) {
        const auto& [pn, p] = named;
        INFO("parameter ", named.first);  // (INFO cannot name a structured binding in clang 14)
        REQUIRE(p.grad().defined());
        CHECK_CLOSE(p.grad(), g.at(n + ".pgrad." + pn), 1e-4, 1e-4);
      }
    }
  }
}

TEST_CASE("optimizers: parameters after 10 steps equal torch.optim's on the same gradients") {
  using Make = std::function<std::unique_ptr<nn::Optimizer>(std::vector<Tensor>)>;
  const std::vector<std::pair<std::string, Make>> cases = {
      {"sgd", [](auto p) { return std::make_unique<nn::SGD>(p, nn::SGDOptions{.lr = 0.1}); }},
      {"sgd_momentum_wd",
       [](auto p) {
         return std::make_unique<nn::SGD>(
             p, nn::SGDOptions{.lr = 0.1, .momentum = 0.9, .weight_decay = 0.01});
       }},
      {"sgd_nesterov",
       [](auto p) {
         return std::make_unique<nn::SGD>(
             p, nn::SGDOptions{.lr = 0.05, .momentum = 0.8, .nesterov = true});
       }},
      {"sgd_dampening",
       [](auto p) {
         return std::make_unique<nn::SGD>(
             p, nn::SGDOptions{.lr = 0.05, .momentum = 0.5, .dampening = 0.3});
       }},
      {"adam", [](auto p) { return std::make_unique<nn::Adam>(p, nn::AdamOptions{.lr = 0.01}); }},
      {"adam_l2",
       [](auto p) {
         return std::make_unique<nn::Adam>(
             p, nn::AdamOptions{.lr = 0.01, .beta1 = 0.8, .beta2 = 0.99, .weight_decay = 0.1});
       }},
      {"adamw",
       [](auto p) {
         return std::make_unique<nn::AdamW>(p, nn::AdamWOptions{.lr = 0.01, .weight_decay = 0.1});
       }},
  };
  const auto& g = golden();
  for (const auto& [name, make] : cases) {
    SUBCASE(name.c_str()) {
      const std::string k = "opt." + name;
      std::vector<Tensor> params{g.at(k + ".p0").clone().detach().requires_grad_(),
                                 g.at(k + ".p1").clone().detach().requires_grad_()};
      auto opt = make(params);
      for (int step = 0; step < 10; ++step) {
        for (int i = 0; i < 2; ++i)
          params[i].set_grad(g.at(fmt::format("{}.g{}.{}", k, step, i)).clone());
        opt->step();
      }
      for (int i = 0; i < 2; ++i)
        CHECK_CLOSE(params[i], g.at(fmt::format("{}.final.{}", k, i)), 1e-5, 1e-5);
    }
  }
}

TEST_CASE("clip_grad_norm_ equals torch.nn.utils.clip_grad_norm_") {
  const auto& g = golden();
  std::vector<Tensor> params{zeros({3, 4}).requires_grad_(), zeros({7}).requires_grad_()};
  for (int i = 0; i < 2; ++i) params[i].set_grad(g.at(fmt::format("clip.g{}", i)).clone());
  const float norm = nn::clip_grad_norm_(params, 1.0f);
  CHECK(norm == doctest::Approx(g.at("clip.norm").item()).epsilon(1e-5));
  for (int i = 0; i < 2; ++i)
    CHECK_CLOSE(params[i].grad(), g.at(fmt::format("clip.clipped{}", i)), 1e-6, 1e-5);
  // Below the limit nothing changes.
  const auto before = params[0].grad().to_vector();
  nn::clip_grad_norm_(params, 100.0f);
  CHECK(params[0].grad().to_vector() == before);
}
