// Schedules at chosen steps, optimizer argument checks, optimizer state round trip, and the
// kernels path choosing the loops of a training step (the optimizer, clipping, data parallel).
#include "helpers.hpp"
#include "nn/nn.hpp"

using namespace anatomy;
using testing::check_error;

namespace {

// Every step of a schedule against torch's LambdaLR (tests/parity/make_golden_schedules.py), to a
// relative 1e-6: a schedule off by one step, or a wrong exponent, is far outside it.
void check_against_torch(nn::LRScheduler& sched, nn::Optimizer& opt, const std::string& name) {
  static const auto golden =
      load_safetensors(testing::test_path("parity/golden/schedules.safetensors")).tensors;
  const auto want = golden.at(name).to_vector();
  int64_t wrong = 0;
  for (size_t step = 0; step < want.size(); ++step) {
    if (step > 0) sched.step();
    const double got = opt.lr(), w = want[step];
    const bool ok = w == 0 ? got == 0 : std::abs(got - w) <= 1e-6 * std::abs(w);
    if (!ok && wrong++ < 5)
      FAIL_CHECK(name << " step " << step << ": " << got << " vs torch " << w);
  }
  CHECK_MESSAGE(wrong == 0, name);
}

}  // namespace

TEST_CASE("Noam schedule: every step as torch's LambdaLR with the paper's formula") {
  Tensor w = zeros({1}).requires_grad_();
  nn::Adam opt({w}, {.lr = 1.0});
  nn::NoamSchedule paper(opt, 512, 4000);
  // 512^-0.5 · min(s^-0.5, s · 4000^-1.5), step 0 counting as 1: by hand at three steps ...
  CHECK(opt.lr() == doctest::Approx(1.746928e-7).epsilon(1e-6).scale(0));
  CHECK(paper.lr_at(4000) == doctest::Approx(6.987712e-4).epsilon(1e-6).scale(0));  // the peak
  CHECK(paper.lr_at(16000) == doctest::Approx(3.493856e-4).epsilon(1e-6).scale(0));
  // ... and at every one of 20000 steps against PyTorch.
  check_against_torch(paper, opt, "noam_paper");
  // The schedule `anatomy train --corpus` uses: d_model 128, warmup 400, peak 1e-3.
  Tensor v = zeros({1}).requires_grad_();
  nn::AdamW opt2({v}, {.lr = 1.0});
  nn::NoamSchedule corpus(opt2, 128, 400, 1e-3 * std::sqrt(128.0 * 400.0));
  CHECK(corpus.lr_at(400) == doctest::Approx(1e-3).epsilon(1e-9).scale(0));
  check_against_torch(corpus, opt2, "noam_corpus");
}

TEST_CASE("warmup then linear or cosine decay (Hugging Face's, nanoGPT's), and constant") {
  Tensor w = zeros({1}).requires_grad_();
  nn::SGD opt({w}, {.lr = 0.5});
  nn::WarmupDecaySchedule lin(opt, 1e-3, 100, 1100);
  CHECK(opt.lr() == 0.0);
  CHECK(lin.lr_at(50) == doctest::Approx(5e-4).epsilon(1e-9).scale(0));
  CHECK(lin.lr_at(600) == doctest::Approx(5e-4).epsilon(1e-9).scale(0));
  CHECK(lin.lr_at(5000) == 0.0);
  check_against_torch(lin, opt, "linear");
  nn::SGD opt2({w}, {.lr = 0.5});
  nn::WarmupDecaySchedule cos(opt2, 1e-3, 50, 1000, nn::WarmupDecaySchedule::Decay::Cosine);
  check_against_torch(cos, opt2, "cosine");
  nn::SGD opt3({w}, {.lr = 0.5});
  nn::WarmupDecaySchedule floor(opt3, 1e-3, 100, 2000, nn::WarmupDecaySchedule::Decay::Cosine,
                                1e-4);
  check_against_torch(floor, opt3, "cosine_floor");
  nn::ConstantSchedule c(opt, 0.25);
  CHECK(opt.lr() == 0.25);
  c.step();
  CHECK(opt.lr() == 0.25);
}

TEST_CASE("optimizer and schedule arguments are checked") {
  Tensor w = zeros({2}).requires_grad_();
  nn::SGD sgd({w}, {.lr = 0.1});
  // Warmup 0 would divide by zero in the paper's formula (so it is refused).
  check_error([&] { nn::NoamSchedule(sgd, 512, 0); }, {"NoamSchedule", "positive", "0"});
  check_error([&] { nn::NoamSchedule(sgd, 0, 100); }, {"NoamSchedule", "positive"});
  // The smallest positive values are allowed: warmup 1 peaks at the first step, d_model^-0.5.
  nn::NoamSchedule shortest(sgd, 1, 1);
  CHECK(shortest.lr_at(1) == 1.0);
  CHECK(shortest.lr_at(4) == 0.5);
  check_error([&] { nn::WarmupDecaySchedule(sgd, 1e-3, 200, 100); },
              {"WarmupDecaySchedule", "warmup_steps <= total_steps"});
  check_error([&] { nn::WarmupDecaySchedule(sgd, 1e-3, -1, 100); },
              {"WarmupDecaySchedule", "0 <= warmup_steps", "got -1, 100"});
  // No warmup at all is allowed: the peak at step 0, then the decay (LambdaLR's 1 - t/T).
  nn::WarmupDecaySchedule none(sgd, 1e-3, 0, 100);
  CHECK(sgd.lr() == 1e-3);
  none.step();
  CHECK(sgd.lr() == doctest::Approx(1e-3 * 0.99).epsilon(1e-12).scale(0));
  // Nothing but warmup: the peak is never reached, and the end of training is the floor.
  for (const auto d :
       {nn::WarmupDecaySchedule::Decay::Linear, nn::WarmupDecaySchedule::Decay::Cosine}) {
    nn::WarmupDecaySchedule only_warmup(sgd, 1e-3, 10, 10, d, 1e-4);
    CHECK(only_warmup.lr_at(9) == doctest::Approx(9e-4).epsilon(1e-12).scale(0));
    CHECK(only_warmup.lr_at(10) == 1e-4);
    CHECK(only_warmup.lr_at(11) == 1e-4);
  }
  check_error([&] { nn::SGD({w}, {.lr = -1}); }, {"SGD", "Invalid learning rate"});
  check_error([&] { nn::Adam({w}, {.beta1 = 1.5}); }, {"Adam", "Invalid beta"});
  // torch's bounds are 0 <= beta < 1 for both: 1 itself is refused, 0 accepted.
  check_error([&] { nn::AdamW({w}, {.beta1 = 1.0}); }, {"AdamW", "Invalid beta parameters: (1,"});
  check_error([&] { nn::AdamW({w}, {.beta2 = 1.0}); }, {"AdamW", "Invalid beta", ", 1)"});
  check_error([&] { nn::AdamW({w}, {.beta2 = -0.1}); }, {"AdamW", "Invalid beta"});
  CHECK_NOTHROW(nn::AdamW({w}, {.beta1 = 0.0, .beta2 = 0.0}));
  check_error([&] { nn::SGD({zeros({2})}, {}); }, {"does not require grad"});
  check_error([&] { nn::SGD({w * 2.0f}, {}); }, {"non-leaf"});
  check_error([&] { nn::SGD({w}, {.nesterov = true}); }, {"Nesterov"});
}

TEST_CASE("optimizer state survives state_dict / load_state_dict") {
  manual_seed(3);
  Tensor a = randn({3}).requires_grad_(), b = a.clone().detach().requires_grad_();
  nn::AdamW oa({a}, {.lr = 0.1}), ob({b}, {.lr = 0.1});
  for (int i = 0; i < 3; ++i) {
    a.set_grad(ones({3}) * float(i));
    oa.step();
  }
  ob.load_state_dict(oa.state_dict());
  b.copy_(a.detach());
  CHECK(ob.steps_taken() == 3);
  a.set_grad(ones({3}));
  b.set_grad(ones({3}));
  oa.step();
  ob.step();
  CHECK(a.to_vector() == b.to_vector());
  auto bad = oa.state_dict();
  bad["state.0.exp_avg"] = zeros({4});
  check_error([&] { ob.load_state_dict(bad); }, {"AdamW", "state.0.exp_avg", "[4]"});
  // Every problem is named, and nothing is loaded: ob keeps its own state.
  const auto before = ob.state_dict().at("state.0.exp_avg").to_vector();
  auto many = oa.state_dict();
  many["state.1.exp_avg"] = zeros({3});     // a parameter index ob does not have
  many["state.0.momentum"] = zeros({3});    // a buffer AdamW does not keep
  many["junk"] = zeros({1});                // not state.N.name
  many["step"] = full({}, 3.0f, kFloat32);  // the step count must be int64
  many["state.0.exp_avg"] = ones({3}) * 7.0f;
  check_error([&] { ob.load_state_dict(many); },
              {"nothing was loaded", "unexpected key 'state.1.exp_avg'",
               "'state.0.momentum': AdamW has no buffer 'momentum'", "unexpected key 'junk'",
               "'step' is missing or not int64"});
  CHECK(ob.state_dict().at("state.0.exp_avg").to_vector() == before);
  auto no_step = oa.state_dict();
  no_step.erase("step");
  check_error([&] { ob.load_state_dict(no_step); }, {"'step' is missing"});
  // A loaded state is a copy: stepping the source afterwards does not change it.
  nn::AdamW oc({b}, {.lr = 0.1});
  oc.load_state_dict(oa.state_dict());
  const auto loaded = oc.state_dict().at("state.0.exp_avg").to_vector();
  a.set_grad(ones({3}) * 5.0f);
  oa.step();
  CHECK(oc.state_dict().at("state.0.exp_avg").to_vector() == loaded);
  CHECK(oc.state_dict().at("state.0.exp_avg_sq").defined());
}

TEST_CASE("AdamW's decoupled weight decay: p times (1 - lr * wd), whatever wd") {
  // With a zero gradient Adam's step is 0, so only the decay moves p (as in torch.optim.AdamW).
  for (const double wd : {0.0, 0.5, 1.0}) {
    CAPTURE(wd);
    Tensor p = tensor({2.0f, -4.0f}).requires_grad_();
    nn::AdamW opt({p}, {.lr = 0.1, .weight_decay = wd});
    p.set_grad(zeros({2}));
    opt.step();
    const float f = static_cast<float>(1.0 - 0.1 * wd);
    CHECK(p.to_vector() == std::vector<float>{2.0f * f, -4.0f * f});
  }
}

// nanoGPT's rule: vectors (biases, norm gains) are not decayed, matrices are. A vector first in
// the list, a matrix between two vectors (a loop that skips the first fails).
TEST_CASE("no_decay_for_vectors: every vector keeps its value, every matrix decays") {
  Tensor b1 = tensor({2.0f, -4.0f}).requires_grad_(), w = ones({2, 2}).requires_grad_(),
         b2 = tensor({3.0f}).requires_grad_();
  nn::AdamW opt({b1, w, b2}, {.lr = 0.1, .weight_decay = 0.5});
  opt.no_decay_for_vectors();
  for (Tensor* p : {&b1, &w, &b2}) p->set_grad(zeros(p->shape()));
  opt.step();  // a zero gradient: only the decay can move a parameter
  CHECK(b1.to_vector() == std::vector<float>{2.0f, -4.0f});
  CHECK(b2.to_vector() == std::vector<float>{3.0f});
  CHECK(w.to_vector() == std::vector<float>(4, static_cast<float>(1.0 - 0.1 * 0.5)));
}

// Adam and AdamW update every parameter in one loop over their concatenated elements, cut into
// chunks that start anywhere inside a parameter. Each element's update depends only on its own
// p, g, m, v, so stepping the parameters together must give the same bits as stepping each one
// alone: a segment read at the wrong offset, a parameter skipped at a chunk boundary or a tail
// left out would not. Sizes are odd and the total is several elementwise grains, so that 2
// threads cut inside parameters.
TEST_CASE("Adam and AdamW step many parameters together as each alone, on 1 and 2 threads") {
  const int before = get_num_threads();
  const std::vector<Shape> shapes = {{5}, {200, 201}, {17}, {3, 11000}, {1}, {70001}, {40}};
  for (const bool decoupled : {true, false}) {
    for (const int threads : {1, 2}) {
      CAPTURE(decoupled);
      CAPTURE(threads);
      set_num_threads(threads);
      manual_seed(4);
      std::vector<Tensor> together, alone;
      std::vector<std::vector<float>> initial;
      for (const auto& s : shapes) {
        together.push_back(randn(s).requires_grad_());
        initial.push_back(together.back().to_vector());
        alone.push_back(together.back().clone().detach().requires_grad_());
      }
      Tensor no_grad = randn({9}).requires_grad_();  // never gets a gradient: left as it is
      const auto no_grad_before = no_grad.to_vector();
      auto with_no_grad = together;
      with_no_grad.insert(with_no_grad.begin() + 2, no_grad);
      auto make = [&](std::vector<Tensor> p) -> std::unique_ptr<nn::Optimizer> {
        if (decoupled) return std::make_unique<nn::AdamW>(p, nn::AdamWOptions{.lr = 0.01});
        return std::make_unique<nn::Adam>(p, nn::AdamOptions{.lr = 0.01, .weight_decay = 0.1});
      };
      auto all = make(with_no_grad);
      all->set_weight_decay({together[1]}, 0.3);  // one parameter with its own decay
      std::vector<std::unique_ptr<nn::Optimizer>> each;
      for (size_t i = 0; i < alone.size(); ++i) {
        each.push_back(make({alone[i]}));
        if (i == 1) each.back()->set_weight_decay({alone[i]}, 0.3);
      }
      for (int step = 0; step < 3; ++step) {
        for (size_t i = 0; i < shapes.size(); ++i) {
          Tensor g = randn(shapes[i]);
          together[i].set_grad(g.clone());
          alone[i].set_grad(g.clone());
        }
        all->step();
        for (auto& o : each) o->step();
      }
      for (size_t i = 0; i < shapes.size(); ++i) {
        CAPTURE(i);
        CHECK(together[i].to_vector() == alone[i].to_vector());
        CHECK(together[i].to_vector() != initial[i]);  // it did move
      }
      CHECK(no_grad.to_vector() == no_grad_before);
      CHECK_FALSE(all->state_dict().count("state.2.exp_avg"));
    }
  }
  set_num_threads(before);
}

namespace {

// A registered fast kernel replaced, while alive, by one that counts its calls and passes them
// on. Tag tells the counters of kernels of the same type apart.
template <int Tag, typename R, typename... A>
struct CountCalls {
  static inline R (*real)(A...) = nullptr;
  static inline int calls = 0;
  static R counted(A... a) {
    ++calls;
    return real(a...);
  }
  const char* op;
  explicit CountCalls(const char* name) : op(name) {
    testing::FastKernels fast;
    real = fast_kernel<R(A...)>(op);
    const bool registered = real != nullptr;
    REQUIRE_MESSAGE(registered, op);
    register_kernel<R(A...)>(op, counted);
  }
  ~CountCalls() { register_kernel<R(A...)>(op, real); }
};

using Tensors = const std::vector<Tensor>&;

}  // namespace

TEST_CASE("ANATOMY_KERNELS=reference runs nn/'s plain loops for a whole step, fast its kernels") {
  CountCalls<0, void, Tensors, Tensors, Tensors, Tensors, const std::vector<double>&, int64_t,
             double, double, double, double, bool>
      adam("adam");
  CountCalls<1, std::vector<float>, Tensors, bool> norm("_foreach_norm");
  CountCalls<2, void, Tensors, float> scale("_foreach_mul_");
  CountCalls<3, int64_t, int64_t> parts("data_parallel.parts");
  CountCalls<4, void, int64_t, const std::function<void(int64_t)>&> run("data_parallel.run");
  CountCalls<5, void, Tensors, const std::vector<std::vector<Tensor>>&> reduce(
      "data_parallel.reduce_gradients");
  const std::string before = kernels();
  for (const char* path : {"reference", "fast"}) {
    CAPTURE(path);
    set_kernels(path);
    manual_seed(1);
    nn::Linear model(6, 3);
    nn::DataParallel dp(model, [] { return std::make_shared<nn::Linear>(6, 3); });
    nn::AdamW opt(model.parameters(), {.lr = 0.1});
    const Tensor x = randn({4, 6});
    dp.parts(4);
    std::vector<Tensor> losses(2);
    dp.run(2, [&](int64_t k, nn::Module& m) {
      losses[k] = sum(dynamic_cast<nn::Linear&>(m).forward(x.slice(0, 2 * k, 2 * k + 2)));
    });
    dp.run(2, [&](int64_t k, nn::Module&) { losses[k].backward(); });
    dp.reduce_gradients();
    nn::clip_grad_norm_(model.parameters(), 1e-3f);  // clips: scales every gradient
    opt.step();
    const int fast = std::string(path) == "fast" ? 1 : 0;
    CHECK(decltype(adam)::calls == fast);
    CHECK(decltype(norm)::calls == fast);
    CHECK(decltype(scale)::calls == fast);
    CHECK(decltype(parts)::calls == fast);
    CHECK(decltype(run)::calls == 2 * fast);
    CHECK(decltype(reduce)::calls == fast);
  }
  set_kernels(before);
}
