// Schedules at chosen steps, optimizer argument checks, optimizer state round trip.
#include "helpers.hpp"
#include "nn/nn.hpp"

using namespace anatomy;
using testing::check_error;

TEST_CASE("Noam schedule: the paper's warmup then inverse square root") {
  Tensor w = zeros({1}).requires_grad_();
  nn::Adam opt({w}, {.lr = 1.0});
  nn::NoamSchedule sched(opt, 512, 4000);
  // 512^-0.5 · min(s^-0.5, s · 4000^-1.5)
  CHECK(opt.lr() == doctest::Approx(1.746928e-7).epsilon(1e-5));  // step 0 counts as 1
  sched.step();
  CHECK(opt.lr() == doctest::Approx(1.746928e-7).epsilon(1e-5));
  CHECK(sched.lr_at(4000) == doctest::Approx(6.987712e-4).epsilon(1e-5));  // the peak
  CHECK(sched.lr_at(16000) == doctest::Approx(3.493856e-4).epsilon(1e-5));
  CHECK(sched.lr_at(2000) < sched.lr_at(4000));
  CHECK(sched.lr_at(8000) < sched.lr_at(4000));
}

TEST_CASE("warmup then linear or cosine decay, and constant") {
  Tensor w = zeros({1}).requires_grad_();
  nn::SGD opt({w}, {.lr = 0.5});
  nn::WarmupDecaySchedule lin(opt, 1e-3, 100, 1100);
  CHECK(opt.lr() == 0.0);
  CHECK(lin.lr_at(50) == doctest::Approx(5e-4));
  CHECK(lin.lr_at(100) == doctest::Approx(1e-3));
  CHECK(lin.lr_at(600) == doctest::Approx(5e-4));
  CHECK(lin.lr_at(1100) == doctest::Approx(0.0));
  CHECK(lin.lr_at(5000) == doctest::Approx(0.0));
  nn::WarmupDecaySchedule cos(opt, 1e-3, 0, 1000, nn::WarmupDecaySchedule::Decay::Cosine, 1e-4);
  CHECK(cos.lr_at(0) == doctest::Approx(1e-3));
  CHECK(cos.lr_at(500) == doctest::Approx(5.5e-4));
  CHECK(cos.lr_at(1000) == doctest::Approx(1e-4));
  nn::ConstantSchedule c(opt, 0.25);
  CHECK(opt.lr() == 0.25);
  c.step();
  CHECK(opt.lr() == 0.25);
}

TEST_CASE("optimizer arguments are checked") {
  Tensor w = zeros({2}).requires_grad_();
  check_error([&] { nn::SGD({w}, {.lr = -1}); }, {"SGD", "Invalid learning rate"});
  check_error([&] { nn::Adam({w}, {.beta1 = 1.5}); }, {"Adam", "Invalid beta"});
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
}
