// nn::Module: the named tree, modes, printing, state dicts.
#include "helpers.hpp"
#include "nn/nn.hpp"

using namespace anatomy;
using testing::check_error;

namespace {

// A student's module, exactly as docs/library.md shows it.
struct TwoLayer : nn::Module {
  std::shared_ptr<nn::Linear> fc1, fc2;
  std::shared_ptr<nn::Dropout> drop;
  TwoLayer() {
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(4, 8));
    drop = register_module("drop", std::make_shared<nn::Dropout>(0.1f));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(8, 2));
  }
  Tensor forward(const Tensor& x) override {
    return fc2->forward(drop->forward(relu(fc1->forward(x))));
  }
};

}  // namespace

TEST_CASE("named_parameters gives PyTorch's dotted names, in registration order") {
  auto layers = std::make_shared<nn::ModuleList>();
  layers->push_back(std::make_shared<TwoLayer>());
  layers->push_back(std::make_shared<TwoLayer>());
  std::vector<std::string> names;
  for (const auto& [n, p] : layers->named_parameters()) names.push_back(n);
  CHECK(names == std::vector<std::string>{"0.fc1.weight", "0.fc1.bias", "0.fc2.weight",
                                          "0.fc2.bias", "1.fc1.weight", "1.fc1.bias",
                                          "1.fc2.weight", "1.fc2.bias"});
  CHECK(layers->num_parameters() == 2 * (4 * 8 + 8 + 8 * 2 + 2));
  CHECK(layers->children().size() == 2);
  CHECK(layers->at<TwoLayer>(1)->fc2->out_features == 2);
  check_error([&] { layers->at<nn::Linear>(0); }, {"ModuleList", "element 0 is a TwoLayer"});
  check_error([&] { (*layers)[5]; }, {"index 5 is out of range"});
}

TEST_CASE("train() and eval() propagate down the tree") {
  auto m = std::make_shared<TwoLayer>();
  CHECK(m->drop->is_training());
  m->eval();
  CHECK_FALSE(m->is_training());
  CHECK_FALSE(m->drop->is_training());
  Tensor x = randn({3, 4});
  CHECK_CLOSE(m->forward(x), m->forward(x), 0, 0);  // dropout off: deterministic
  m->train();
  CHECK(m->fc1->is_training());
}

TEST_CASE("zero_grad clears every parameter's gradient") {
  auto m = std::make_shared<TwoLayer>();
  m->forward(randn({3, 4})).sum().backward();
  for (const auto& p : m->parameters()) CHECK(p.grad().defined());
  m->zero_grad();
  for (const auto& p : m->parameters()) CHECK_FALSE(p.grad().defined());
}

TEST_CASE("the printed tree reads like PyTorch's repr") {
  auto seq = std::make_shared<nn::Sequential>();
  seq->push_back(std::make_shared<nn::Embedding>(30522, 768));
  seq->push_back(std::make_shared<nn::Linear>(768, 3072));
  seq->push_back(std::make_shared<nn::GELU>());
  seq->push_back(std::make_shared<nn::LayerNorm>(Shape{768}, 1e-12f));
  seq->push_back(std::make_shared<nn::Dropout>(0.1f));
  CHECK(seq->repr() ==
        "Sequential(\n"
        "  (0): Embedding(30522, 768)\n"
        "  (1): Linear(in_features=768, out_features=3072, bias=True)\n"
        "  (2): GELU(approximate='none')\n"
        "  (3): LayerNorm((768,), eps=1e-12, elementwise_affine=True)\n"
        "  (4): Dropout(p=0.1)\n"
        ")");
  auto two = std::make_shared<TwoLayer>();
  CHECK(fmt::format("{}", *two) ==
        "TwoLayer(\n"
        "  (fc1): Linear(in_features=4, out_features=8, bias=True)\n"
        "  (drop): Dropout(p=0.1)\n"
        "  (fc2): Linear(in_features=8, out_features=2, bias=True)\n"
        ")");
  // A ModuleList prints a run of alike children once, as PyTorch 2 does; a child that differs
  // breaks the run.
  nn::ModuleList list;
  for (int i = 0; i < 3; ++i) list.push_back(std::make_shared<nn::Linear>(4, 4));
  list.push_back(std::make_shared<nn::Linear>(4, 2));
  list.push_back(std::make_shared<TwoLayer>());
  CHECK(list.repr() ==
        "ModuleList(\n"
        "  (0-2): 3 x Linear(in_features=4, out_features=4, bias=True)\n"
        "  (3): Linear(in_features=4, out_features=2, bias=True)\n"
        "  (4): TwoLayer(\n"
        "    (fc1): Linear(in_features=4, out_features=8, bias=True)\n"
        "    (drop): Dropout(p=0.1)\n"
        "    (fc2): Linear(in_features=8, out_features=2, bias=True)\n"
        "  )\n"
        ")");
  // print_options().collapse_repeated_modules = false (the tutorials' --full) prints each.
  print_options().collapse_repeated_modules = false;
  const std::string each = list.repr();
  print_options().collapse_repeated_modules = true;
  CHECK(each.find("  (0): Linear(in_features=4, out_features=4, bias=True)\n"
                  "  (1): Linear(in_features=4, out_features=4, bias=True)\n"
                  "  (2): Linear(in_features=4, out_features=4, bias=True)\n"
                  "  (3): Linear(in_features=4, out_features=2, bias=True)\n") !=
        std::string::npos);
  CHECK(each.find(" x ") == std::string::npos);
  CHECK(nn::ModuleList().repr() == "ModuleList()");
  CHECK(nn::Embedding(10, 4, 0).repr() == "Embedding(10, 4, padding_idx=0)");
  CHECK(nn::Linear(3, 2, false).repr() == "Linear(in_features=3, out_features=2, bias=False)");
  CHECK(nn::Softmax(-1).repr() == "Softmax(dim=-1)");
  CHECK(nn::ReLU().repr() == "ReLU()");
}

// padding_idx as torch.nn.Embedding takes it: in [-num, num), negative counted from the end.
TEST_CASE("Embedding's padding_idx: within the table, negative from the end") {
  check_error([] { nn::Embedding(10, 4, 10); },
              {"Embedding", "padding_idx 10", "within num_embeddings 10"});
  check_error([] { nn::Embedding(10, 4, -11); },
              {"Embedding", "padding_idx -11", "within num_embeddings 10"});
  nn::Embedding last(10, 4, -1), first(10, 4, -10);
  CHECK(last.padding_idx == 9);
  CHECK(first.padding_idx == 0);
  CHECK(last.weight.select(0, 9).abs().sum().item() == 0.0f);
  CHECK(last.weight.select(0, 8).abs().sum().item() > 0.0f);
}

// A model built only to load its weights draws nothing: under SkipInitGuard the random
// initializers write zeros and leave the generator where it was; constants are still written,
// the guards nest, and drawing resumes when the last one goes.
TEST_CASE("SkipInitGuard: the random initializers draw nothing while it lives") {
  manual_seed(7);
  const float expected = randn({1}).item();  // the first draw after manual_seed(7)
  manual_seed(7);
  {
    nn::init::SkipInitGuard outer;
    nn::Linear lin(30, 20);
    nn::Embedding emb(50, 8);
    Tensor w = full({6, 5}, 3.0f);
    {
      nn::init::SkipInitGuard inner;
      nn::init::xavier_uniform_(w);
      CHECK(nn::init::init_skipped());
    }
    CHECK(nn::init::init_skipped());  // the outer guard still lives
    nn::init::kaiming_normal_(w, 0.0f, "fan_out", "relu");
    nn::init::trunc_normal_(w, 0.0f, 0.02f);
    nn::LayerNorm ln(Shape{4});
    CHECK(lin.weight.abs().sum().item() == 0.0f);
    CHECK(lin.bias.abs().sum().item() == 0.0f);
    CHECK(emb.weight.abs().sum().item() == 0.0f);
    CHECK(w.abs().sum().item() == 0.0f);
    CHECK(ln.weight.to_vector() == std::vector<float>(4, 1.0f));
    // Arguments are still checked.
    check_error([&] { nn::init::kaiming_uniform_(w, 0.0f, "fan_both"); },
                {"init", "Mode fan_both not supported"});
  }
  CHECK_FALSE(nn::init::init_skipped());
  CHECK(randn({1}).item() == expected);  // no draw was made under the guard
  nn::Linear drawn(30, 20);
  CHECK(drawn.weight.abs().sum().item() > 0.0f);
}

TEST_CASE("default initialization follows PyTorch's") {
  manual_seed(0);
  nn::Linear lin(400, 300);
  const float bound = 1.0f / 20.0f;  // 1/√400
  CHECK(lin.weight.max().item() <= bound);
  CHECK(lin.weight.min().item() >= -bound);
  CHECK(lin.weight.max().item() > 0.9f * bound);  // spread over the whole range
  CHECK(lin.bias.abs().max().item() <= bound);
  // One input: the bound is 1 / √1 = 1, for the bias as for the weight.
  nn::Linear one(1, 400);
  CHECK(one.bias.abs().max().item() <= 1.0f);
  CHECK(one.bias.abs().max().item() > 0.9f);
  nn::Embedding emb(1000, 100, 3);
  CHECK(std::abs(emb.weight.mean().item()) < 0.02f);
  CHECK(std::abs(emb.weight.var().item() - 1.0f) < 0.03f);
  CHECK(emb.weight.select(0, 3).abs().sum().item() == 0.0f);
  nn::LayerNorm ln(Shape{8});
  CHECK(ln.weight.to_vector() == std::vector<float>(8, 1.0f));
  CHECK(ln.bias.to_vector() == std::vector<float>(8, 0.0f));
  Tensor w = empty({200, 300});
  nn::init::xavier_uniform_(w);
  CHECK(w.abs().max().item() <= std::sqrt(6.0f / 500.0f));
  CHECK(w.abs().max().item() > 0.99f * std::sqrt(6.0f / 500.0f));  // U(-a, a), a = √(6 / 500)
  nn::init::xavier_normal_(w, 2.0f);
  CHECK(std::abs(w.var().item() - 4.0f * 2.0f / 500.0f) < 0.0005f);  // gain² · 2 / (300 + 200)
  nn::init::kaiming_normal_(w, 0.0f, "fan_in", "relu");
  CHECK(std::abs(w.var().item() - 2.0f / 300.0f) < 0.001f);
  // Beyond two dimensions (a convolution's [out, in, kh, kw]) the receptive field multiplies
  // both fans, as torch.nn.init._calculate_fan_in_and_fan_out: in 3 * 25, out 8 * 25.
  CHECK(nn::init::calculate_fan_in_and_fan_out(empty({8, 3, 5, 5})) ==
        std::pair<int64_t, int64_t>{75, 200});
  CHECK(nn::init::calculate_fan_in_and_fan_out(empty({8, 3})) == std::pair<int64_t, int64_t>{3, 8});
  // The constant fills, as torch.nn.init's, in place on a parameter without recording a grad.
  Tensor p = randn({3}).requires_grad_();
  CHECK(nn::init::ones_(p).to_vector() == std::vector<float>(3, 1.0f));
  CHECK(nn::init::zeros_(p).to_vector() == std::vector<float>(3, 0.0f));
  CHECK(nn::init::constant_(p, 0.5f).to_vector() == std::vector<float>(3, 0.5f));
  CHECK(p.is_leaf());
}

TEST_CASE("Linear refuses a negative size on either side") {
  check_error([] { nn::Linear(-1, 3); }, {"Linear", "non-negative", "-1, 3"});
  check_error([] { nn::Linear(3, -2); }, {"Linear", "non-negative", "3, -2"});
  // Empty is allowed, as in torch (whose bias bound is 0 then): the fan computation must not
  // divide by zero (SIGFPE).
  nn::Linear empty_in(0, 2);
  CHECK(empty_in.weight.sizes() == Shape{2, 0});
  CHECK(empty_in.bias.to_vector() == std::vector<float>{0.0f, 0.0f});
  nn::Linear empty_out(3, 0);  // no output features: [B, 0] out, as torch.nn.Linear(3, 0)
  CHECK(empty_out.weight.sizes() == Shape{0, 3});
  CHECK(empty_out.forward(randn({4, 3})).sizes() == Shape{4, 0});
}

TEST_CASE("registration and forward errors") {
  struct Bad : nn::Module {
    Bad() {
      register_parameter("w", ones({2}));
      register_parameter("w", ones({2}));
    }
  };
  check_error([] { Bad b; }, {"Bad", "attribute 'w' already exists"});
  // Each kind clashes with each other kind: one namespace, as a torch.nn.Module's attributes.
  struct BufferThenChild : nn::Module {
    BufferThenChild() {
      register_buffer("x", ones({2}));
      register_module("x", std::make_shared<nn::Linear>(2, 2));
    }
  };
  check_error([] { BufferThenChild b; }, {"BufferThenChild", "attribute 'x' already exists"});
  struct ChildThenParameter : nn::Module {
    ChildThenParameter() {
      register_module("x", std::make_shared<nn::Linear>(2, 2));
      register_parameter("x", ones({2}));
    }
  };
  check_error([] { ChildThenParameter b; }, {"ChildThenParameter", "attribute 'x' already exists"});
  struct ParameterThenBuffer : nn::Module {
    ParameterThenBuffer() {
      register_parameter("x", ones({2}));
      register_buffer("x", ones({2}));
    }
  };
  check_error([] { ParameterThenBuffer b; },
              {"ParameterThenBuffer", "attribute 'x' already exists"});
  struct Dotted : nn::Module {
    Dotted() { register_parameter("a.b", ones({2})); }
  };
  check_error([] { Dotted d; }, {"contain no '.'"});
  nn::CrossEntropyLoss loss;
  check_error([&] { loss.nn::Module::forward(ones({2})); },
              {"CrossEntropyLoss", "no single-input forward"});
  check_error([] { nn::Dropout(1.5f); }, {"Dropout", "between 0 and 1"});
  check_error([] { nn::GELU("fast"); }, {"GELU", "fast"});
}

TEST_CASE("state_dict round trip, and loading validates before applying") {
  manual_seed(1);
  auto a = std::make_shared<TwoLayer>(), b = std::make_shared<TwoLayer>();
  b->load_state_dict(a->state_dict());
  Tensor x = randn({2, 4});
  a->eval();
  b->eval();
  CHECK(a->forward(x).to_vector() == b->forward(x).to_vector());

  auto before = b->fc1->weight.to_vector();
  auto state = a->state_dict();
  state["fc1.weight"] = randn({8, 5});  // wrong shape
  state.erase("fc2.bias");              // missing
  state["fc3.weight"] = randn({2});     // unexpected
  check_error([&] { b->load_state_dict(state); },
              {"Error(s) in loading state_dict for TwoLayer", "nothing was loaded",
               "size mismatch for fc1.weight", "torch.Size([8, 5])", "torch.Size([8, 4])",
               "Missing key(s) in state_dict: \"fc2.bias\"",
               "Unexpected key(s) in state_dict: \"fc3.weight\""});
  CHECK(b->fc1->weight.to_vector() == before);

  // Non-strict: missing and unexpected keys are reported, the rest is loaded.
  auto partial = a->state_dict();
  partial.erase("fc2.bias");
  partial["extra"] = ones({1});
  auto c = std::make_shared<TwoLayer>();
  auto result = c->load_state_dict(partial, false);
  CHECK(result.missing_keys == std::vector<std::string>{"fc2.bias"});
  CHECK(result.unexpected_keys == std::vector<std::string>{"extra"});
  CHECK(c->fc1->weight.to_vector() == a->fc1->weight.to_vector());
}

// torch.nn.init.calculate_gain, and dropout at p = 1 (allowed in PyTorch: every element dropped,
// no 0 * inf NaN, a zero gradient).
TEST_CASE("calculate_gain as PyTorch's, and dropout with p = 1 drops everything") {
  CHECK(nn::init::calculate_gain("linear") == 1.0f);
  CHECK(nn::init::calculate_gain("sigmoid") == 1.0f);
  CHECK(nn::init::calculate_gain("tanh") == doctest::Approx(1.6666666666666667).epsilon(1e-6));
  CHECK(nn::init::calculate_gain("relu") == doctest::Approx(1.4142135623730951).epsilon(1e-6));
  CHECK(nn::init::calculate_gain("leaky_relu") ==
        doctest::Approx(1.4141428569978354).epsilon(1e-6));
  CHECK(nn::init::calculate_gain("leaky_relu", 0.2f) ==
        doctest::Approx(1.3867504905630728).epsilon(1e-6));
  check_error([] { nn::init::calculate_gain("selu_typo"); },
              {"Unsupported nonlinearity selu_typo"});
  nn::Dropout drop(1.0f);
  drop.train();
  Tensor x = ones({3, 4}).requires_grad_();
  Tensor y = drop.forward(x);
  CHECK_CLOSE(y, zeros({3, 4}), 0, 0);
  y.sum().backward();
  CHECK_CLOSE(x.grad(), zeros({3, 4}), 0, 0);
}

// Every value inside [a, b], and the truncated normal's mean and std (from the normal's pdf and
// cdf; 20000 draws give about 0.005 of noise): redrawing outside values, not clamping them.
TEST_CASE("trunc_normal_ draws from the normal truncated to [a, b]") {
  manual_seed(3);
  struct Case {
    float mean, std, a, b;
    double want_mean, want_std;
  };
  for (const Case c :
       {Case{0, 1, 0, 3, 0.7911568, 0.5894131}, Case{1, 2, -1, 2, 0.5867376, 0.8313201}}) {
    CAPTURE(c.a);
    Tensor t = empty({20000});
    nn::init::trunc_normal_(t, c.mean, c.std, c.a, c.b);
    CHECK(t.min().item() >= c.a);
    CHECK(t.max().item() <= c.b);
    const double mean = t.mean().item(), std = std::sqrt(t.var().item());
    CHECK(std::abs(mean - c.want_mean) < 0.02);
    CHECK(std::abs(std - c.want_std) < 0.02);
  }
}

// The draws themselves, pinned: trunc_normal_ takes the generator's normals in order, scales
// them as mean + std * x and keeps those inside [a, b], so with the same seed its values are
// exactly normal_'s, filtered. A sign flip (mean - std * x) has the same distribution but not
// the same values.
TEST_CASE("trunc_normal_ keeps the generator's own draws that fall inside [a, b], in order") {
  manual_seed(11);
  Tensor standard = empty({400});
  nn::init::normal_(standard, 0.0f, 1.0f);
  std::vector<float> want;
  for (float x : standard.to_vector()) {
    const float v = 1.0f + 2.0f * x;
    if (v >= 0.5f && v <= 4.0f) want.push_back(v);
  }
  REQUIRE(want.size() > 50);
  manual_seed(11);
  Tensor t = empty({50});
  nn::init::trunc_normal_(t, 1.0f, 2.0f, 0.5f, 4.0f);
  const std::vector<float> got = t.to_vector();
  CHECK(got == std::vector<float>(want.begin(), want.begin() + 50));
}

// Per-parameter weight decay (PyTorch's param groups): with zero gradients AdamW's step is the
// decay alone, p * (1 - lr * wd), so a parameter set to 0 keeps its values.
TEST_CASE("set_weight_decay: decay per parameter, and only for the optimizer's own") {
  Tensor a = full({2, 2}, 2.0f).requires_grad_(), b = full({3}, 2.0f).requires_grad_();
  nn::AdamW opt({a, b}, {.lr = 0.1, .weight_decay = 0.5});
  opt.set_weight_decay({b}, 0.0);
  a.set_grad(zeros({2, 2}));
  b.set_grad(zeros({3}));
  opt.step();
  CHECK_CLOSE(a, full({2, 2}, 2.0f * 0.95f), 1e-6, 0);
  CHECK_CLOSE(b, full({3}, 2.0f), 0, 0);
  check_error([&] { opt.set_weight_decay({zeros({3})}, 0.1); },
              {"AdamW", "not one of the parameters"});
  check_error([&] { opt.set_weight_decay({a}, -1.0); }, {"Invalid weight_decay value: -1"});
  // The optimizer's first parameter is found too.
  Tensor c = full({2}, 2.0f).requires_grad_();
  nn::AdamW first({c, b}, {.lr = 0.1, .weight_decay = 0.5});
  first.set_weight_decay({c}, 0.0);
  c.set_grad(zeros({2}));
  first.step();
  CHECK_CLOSE(c, full({2}, 2.0f), 0, 0);
}

// Buffers (nn.Module.register_buffer): state that is saved and loaded but not trained.
TEST_CASE("buffers are in state_dict under their dotted name, load back, and are not parameters") {
  struct Counter : nn::Module {
    Counter() { steps = register_buffer("steps", zeros({2})); }
    Tensor steps;
  };
  struct Outer : nn::Module {
    Outer() { inner = register_module("inner", std::make_shared<Counter>()); }
    std::shared_ptr<Counter> inner;
  };
  Outer m;
  CHECK(m.parameters().empty());
  const auto buffers = m.named_buffers();
  REQUIRE(buffers.size() == 1);
  CHECK(buffers[0].first == "inner.steps");
  CHECK(m.inner->named_buffers(false).size() == 1);
  CHECK(m.named_buffers(false).empty());
  const auto state = m.state_dict();
  REQUIRE(state.count("inner.steps"));
  m.load_state_dict({{"inner.steps", tensor({3.0f, 4.0f})}});
  CHECK_CLOSE(m.inner->steps, tensor({3.0f, 4.0f}), 0, 0);
  // Recursion goes all the way down: a buffer two modules deep, beside one a level up.
  struct Top : nn::Module {
    Top() {
      outer = register_module("outer", std::make_shared<Outer>());
      own = register_buffer("own", zeros({1}));
    }
    std::shared_ptr<Outer> outer;
    Tensor own;
  };
  Top top;
  std::vector<std::string> names;
  for (const auto& [n, b] : top.named_buffers()) names.push_back(n);
  CHECK(names == std::vector<std::string>{"own", "outer.inner.steps"});
  CHECK(top.state_dict().count("outer.inner.steps"));
  check_error(
      [] {
        struct Bad : nn::Module {
          Bad() { register_buffer("a.b", zeros({1})); }
        };
        Bad b;
      },
      {"contain no '.'"});
}

// torch.nn.utils.clip_grad_norm_(norm_type=inf): the largest absolute gradient element.
TEST_CASE("clip_grad_norm_ with the infinity norm") {
  Tensor a = zeros({2}).requires_grad_(), b = zeros({1}).requires_grad_();
  a.set_grad(tensor({3.0f, -7.0f}));
  b.set_grad(tensor({2.0f}));
  const float norm = nn::clip_grad_norm_({a, b}, 1.0f, INFINITY);
  CHECK(norm == 7.0f);
  const float scale = 1.0f / (7.0f + 1e-6f);  // torch: max_norm / (norm + 1e-6)
  CHECK_CLOSE(a.grad(), tensor({3.0f * scale, -7.0f * scale}), 1e-7, 1e-6);
  CHECK_CLOSE(b.grad(), tensor({2.0f * scale}), 1e-7, 1e-6);
}

// Gradients of 240007 values in all, on 2 threads: clip_grad_norm_ reads and scales them in one
// parallel pass whose chunks cut through tensors, so a piece lost, counted twice or scaled twice
// at a cut shows (a piece is thousands of values of size ~1: the norm moves by a percent or
// more). The middle gradient is a transposed view, scaled where it lies. The reference is
// computed here in double, value by value.
TEST_CASE("clip_grad_norm_ over gradients cut into chunks on 2 threads") {
  const int before = get_num_threads();
  set_num_threads(2);
  manual_seed(5);
  std::vector<Tensor> params{zeros({150000}).requires_grad_(), zeros({300, 300}).requires_grad_(),
                             zeros({7}).requires_grad_()};
  params[0].set_grad(randn({150000}));
  params[1].set_grad(randn({300, 300}).t());
  params[2].set_grad(randn({7}));
  REQUIRE_FALSE(params[1].grad().is_contiguous());
  std::vector<std::vector<float>> g;
  double sq = 0.0, largest = 0.0;
  for (const auto& p : params) {
    g.push_back(p.grad().contiguous().to_vector());
    for (float v : g.back()) {
      sq += static_cast<double>(v) * v;
      largest = std::max(largest, std::fabs(static_cast<double>(v)));
    }
  }
  SUBCASE("2-norm") {
    const float norm = nn::clip_grad_norm_(params, 10.0f);
    CHECK(norm == doctest::Approx(std::sqrt(sq)).epsilon(1e-5));
    const float scale = 10.0f / (norm + 1e-6f);
    for (size_t i = 0; i < params.size(); ++i) {
      std::vector<float> want;
      for (float v : g[i]) want.push_back(v * scale);
      CHECK_CLOSE(params[i].grad(), from_vector(want, params[i].shape()), 1e-7, 1e-6);
    }
  }
  SUBCASE("infinity norm") {
    const float norm = nn::clip_grad_norm_(params, 1.0f, INFINITY);
    CHECK(norm == static_cast<float>(largest));
    const float scale = 1.0f / (norm + 1e-6f);
    std::vector<float> want;
    for (float v : g[0]) want.push_back(v * scale);
    CHECK_CLOSE(params[0].grad(), from_vector(want, params[0].shape()), 1e-7, 1e-6);
  }
  // As torch: a parameter listed twice counts twice in the norm and is scaled twice (a pass that
  // skipped repeats would scale it once).
  SUBCASE("a parameter listed twice") {
    const float norm = nn::clip_grad_norm_({params[0], params[0]}, 1.0f);
    double sq0 = 0.0;
    for (float v : g[0]) sq0 += static_cast<double>(v) * v;
    CHECK(norm == doctest::Approx(std::sqrt(2.0 * sq0)).epsilon(1e-5));
    const float scale = 1.0f / (norm + 1e-6f);
    std::vector<float> want;
    for (float v : g[0]) want.push_back(v * scale * scale);
    CHECK_CLOSE(params[0].grad(), from_vector(want, params[0].shape()), 1e-9, 1e-5);
  }
  // As torch: the norm is NaN, and so is every gradient after (it multiplies by min(coef, 1)).
  SUBCASE("a NaN deep in a gradient") {
    for (float type : {2.0f, INFINITY}) {
      CAPTURE(type);
      Tensor grad = params[0].grad().clone();
      grad.data()[140000] = std::nanf("");
      params[0].set_grad(grad);
      CHECK(std::isnan(nn::clip_grad_norm_(params, 1.0f, type)));
      for (const auto& p : params) {
        const auto v = p.grad().contiguous().to_vector();
        CHECK(std::count_if(v.begin(), v.end(), [](float x) { return std::isnan(x); }) ==
              p.numel());
      }
      for (size_t i = 0; i < params.size(); ++i)  // fresh gradients for the next norm type
        params[i].set_grad(from_vector(g[i], params[i].shape()));
    }
  }
  set_num_threads(before);
}

// The 1e-6 that keeps the division finite is added to the norm, as torch does: with a norm of
// 2e-6 and max_norm 1e-6 the gradients shrink to a third (1e-6 / 3e-6), not to a half.
TEST_CASE("clip_grad_norm_ adds its epsilon to the norm") {
  Tensor a = zeros({1}).requires_grad_();
  a.set_grad(tensor({2e-6f}));
  const float norm = nn::clip_grad_norm_({a}, 1e-6f);
  CHECK(std::abs(norm - 2e-6) < 1e-12);  // absolute: Approx's default scale would admit 0
  CHECK(std::abs(a.grad().item() - 2e-6 / 3.0) < 1e-12);
}
