// nn::DataParallel and the Trainer's data-parallel step: the parts' gradients add up to the whole
// batch's (parts of unequal size weighted by their tokens), replicas share the module's weights,
// a part's dropout draws do not depend on which thread runs it, and a replica unlike the module
// is refused. GeneratorGuard, which gives each part its generator, is tested here too, and the
// Trainer creating a run folder of its own.
#include <mutex>
#include <thread>

#include "helpers.hpp"
#include "models/models.hpp"
#include "training/trainer.hpp"

using namespace anatomy;
using namespace anatomy::testing;

namespace {

struct Threads {  // sets the thread count for one test and puts the old one back
  int before = get_num_threads();
  explicit Threads(int n) { set_num_threads(n); }
  ~Threads() { set_num_threads(before); }
};

models::TransformerConfig tiny_gpt(double dropout) {
  models::TransformerConfig c = models::TransformerConfig::preset("tiny");  // hidden 64, 2 layers
  c.vocab_size = 23;
  c.max_position_embeddings = 16;
  c.hidden_dropout_prob = c.attention_probs_dropout_prob = dropout;
  c.embedding_layer_norm = false;
  c.final_layer_norm = true;
  c.tie_word_embeddings = true;
  // nanoGPT's: no biases. (The key projection's bias has a gradient of zero up to rounding, and
  // Adam turns whatever rounding leaves into steps of the full learning rate.)
  c.bias = false;
  return c;
}

Tensor lm_loss(nn::Module& m, const Tensor& x, const Tensor& y) {
  Tensor logits = dynamic_cast<models::TransformerForCausalLM&>(m).forward(x);
  return cross_entropy(logits.reshape({-1, logits.size(-1)}), y.reshape({-1}));
}

// The parameters' gradients, cloned.
std::vector<Tensor> grads(const nn::Module& m) {
  std::vector<Tensor> out;
  for (const Tensor& p : m.parameters()) out.push_back(p.grad().defined() ? p.grad().clone() : p);
  return out;
}

// Two linear layers of 4 x 4.
struct Pair : nn::Module {
  std::shared_ptr<nn::Linear> a = register_module("a", std::make_shared<nn::Linear>(4, 4)),
                              b = register_module("b", std::make_shared<nn::Linear>(4, 4));
};

// One data-parallel step's forward and backward of the mean loss over `x`'s rows in two parts
// (what dp.parts gives on two threads; on the reference path they run one after the other): the
// parts' losses weighted by their rows, as the Trainer weights them by tokens. Returns the
// batch's loss.
double data_parallel_step(nn::DataParallel& dp, const Tensor& x, const Tensor& y,
                          std::vector<nn::Module*>* models_seen = nullptr) {
  const int64_t rows = x.size(0), n = 2;
  std::vector<Tensor> losses(n);
  std::mutex m;
  dp.run(n, [&](int64_t k, nn::Module& model) {
    const auto [b, e] = nn::DataParallel::part_rows(rows, k, n);
    losses[k] = lm_loss(model, x.slice(0, b, e), y.slice(0, b, e));
    if (models_seen) {
      std::lock_guard lock(m);
      (*models_seen)[k] = &model;
    }
  });
  double total = 0;
  for (int64_t k = 0; k < n; ++k) {
    const auto [b, e] = nn::DataParallel::part_rows(rows, k, n);
    total += losses[k].item<double>() * static_cast<double>(e - b) / static_cast<double>(rows);
  }
  dp.run(n, [&](int64_t k, nn::Module&) {
    const auto [b, e] = nn::DataParallel::part_rows(rows, k, n);
    losses[k].backward(full({}, static_cast<float>(e - b) / static_cast<float>(rows)));
  });
  dp.reduce_gradients();
  return total;
}

}  // namespace

TEST_CASE("DataParallel: parts of a batch are split in order, the first ones a row longer") {
  using DP = nn::DataParallel;
  CHECK(DP::part_rows(5, 0, 2) == std::pair<int64_t, int64_t>{0, 3});
  CHECK(DP::part_rows(5, 1, 2) == std::pair<int64_t, int64_t>{3, 5});
  CHECK(DP::part_rows(6, 2, 3) == std::pair<int64_t, int64_t>{4, 6});
  CHECK(DP::part_rows(7, 0, 1) == std::pair<int64_t, int64_t>{0, 7});
  check_error([] { DP::part_rows(5, 2, 2); }, {"DataParallel", "part 2 of 2 of 5 rows"});
  check_error([] { DP::part_rows(1, 0, 2); }, {"part 0 of 2 of 1 rows", "parts <= rows"});
  models::TransformerForCausalLM model(tiny_gpt(0.0));
  nn::DataParallel dp(
      model, [] { return std::make_shared<models::TransformerForCausalLM>(tiny_gpt(0.0)); });
  {
    // One part a thread: the fast kernel "data_parallel.parts" (kernels/data_parallel.cpp).
    FastKernels fast;
    Threads two(2);
    CHECK(dp.parts(12) == 2);
    CHECK(dp.parts(1) == 1);  // never more parts than rows
    Threads one(1);
    CHECK(dp.parts(12) == 1);
  }
  {
    // On the reference path the whole batch is one part, whatever the threads.
    const std::string before = kernels();
    set_kernels("reference");
    Threads two(2);
    CHECK(dp.parts(12) == 1);
    set_kernels(before);
  }
  check_error([&] { dp.run(0, [](int64_t, nn::Module&) {}); }, {"DataParallel", "got 0"});
}

TEST_CASE("DataParallel on two threads: the summed gradients are the whole batch's") {
  Threads two(2);
  manual_seed(3);
  const auto config = tiny_gpt(0.0);
  models::TransformerForCausalLM model(config), whole(config);
  whole.load_state_dict(model.state_dict());
  int built = 0;
  nn::DataParallel dp(model, [&] {
    ++built;
    return std::make_shared<models::TransformerForCausalLM>(config);
  });
  // 5 rows: parts of 3 and 2, so weighting the parts equally would be wrong.
  const Tensor x = randint(0, 23, {5, 16}), y = randint(0, 23, {5, 16});
  const Generator before = default_generator();
  std::vector<nn::Module*> seen(2, nullptr);
  const double loss = data_parallel_step(dp, x, y, &seen);
  CHECK(built == 1);
  CHECK(seen[0] == &model);
  CHECK(seen[1] != &model);  // part 1 ran on the replica
  CHECK(seen[1] != nullptr);
  // No dropout: no part drew a number, so the default generator did not move.
  CHECK(default_generator().get_state().state == before.get_state().state);

  Tensor expected = lm_loss(whole, x, y);
  CHECK(loss == doctest::Approx(expected.item<double>()).epsilon(1e-6));
  expected.backward();
  const auto got = grads(model), want = grads(whole);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK_CLOSE(got[i], want[i], 1e-6, 1e-4);
  // The replica's own gradients were handed over, not left to add into the next step.
  for (const auto& named : seen[1]->named_parameters())
    CHECK_MESSAGE(!named.second.grad().defined(), named.first);

  // An optimizer step on the module is what the replica computes with next.
  nn::AdamW opt(model.parameters(), {.lr = 1e-2});
  opt.step();
  opt.zero_grad();
  whole.load_state_dict(model.state_dict());
  whole.zero_grad();
  const double second = data_parallel_step(dp, x, y);
  CHECK(built == 1);  // built once, reused
  Tensor again = lm_loss(whole, x, y);
  CHECK(second == doctest::Approx(again.item<double>()).epsilon(1e-6));
  CHECK(second < loss);
}

TEST_CASE("DataParallel with dropout: each part's masks depend on the seed, not on the threads") {
  Threads two(2);
  const auto config = tiny_gpt(0.3);
  manual_seed(5);
  const Tensor x = randint(0, 23, {4, 16}), y = randint(0, 23, {4, 16});
  // The same step twice from one seed: the same bits. A part drawing from the shared generator
  // while the other does would give masks that depend on which thread drew first.
  auto step = [&](uint64_t seed) {
    manual_seed(seed);
    models::TransformerForCausalLM model(config);
    model.train();
    nn::DataParallel dp(model,
                        [&] { return std::make_shared<models::TransformerForCausalLM>(config); });
    std::vector<double> losses;
    for (int i = 0; i < 2; ++i) {
      model.zero_grad();
      losses.push_back(data_parallel_step(dp, x, y));
    }
    return std::pair{losses, grads(model)};
  };
  const auto [a, ga] = step(11);
  for (int run = 0; run < 5; ++run) {
    const auto [b, gb] = step(11);
    CHECK(a == b);
    for (size_t i = 0; i < ga.size(); ++i) CHECK(ga[i].to_vector() == gb[i].to_vector());
  }
  CHECK(a[0] != a[1]);  // the second step drew new masks: the default generator moved on

  // The masks are the parts' own: without dropout the same weights give another loss.
  manual_seed(11);
  models::TransformerForCausalLM plain(tiny_gpt(0.0));
  plain.eval();
  CHECK(lm_loss(plain, x, y).item<double>() != a[0]);
}

TEST_CASE("DataParallel refuses a replica unlike the module, naming the parameter") {
  Threads two(2);
  models::TransformerForCausalLM model(tiny_gpt(0.0));
  auto wider = tiny_gpt(0.0);
  wider.vocab_size = 24;
  nn::DataParallel dp(model,
                      [&] { return std::make_shared<models::TransformerForCausalLM>(wider); });
  check_error([&] { dp.run(2, [](int64_t, nn::Module&) {}); },
              {"DataParallel", "shape [24, 64]", "shape [23, 64]", "like the trained one"});
  // Unlike only later: a module tied after its replica was built has one parameter fewer.
  Pair pair;
  nn::DataParallel tied(pair, [] { return std::make_shared<Pair>(); });
  tied.run(2, [](int64_t, nn::Module&) {});
  pair.b->tie_weight(pair.a->weight);
  check_error([&] { tied.run(2, [](int64_t, nn::Module&) {}); },
              {"DataParallel", "the replica has 4 parameters, the module 3"});
  nn::DataParallel none(model, [] { return std::shared_ptr<nn::Module>(); });
  check_error([&] { none.run(2, [](int64_t, nn::Module&) {}); }, {"replicate returned no module"});
  check_error([&] { nn::DataParallel(model, nullptr); }, {"replicate must build a module"});
}

TEST_CASE("DataParallel: a parameter set anew after the replica was built is the replica's too") {
  Threads two(2);
  Pair pair;
  nn::DataParallel dp(pair, [] { return std::make_shared<Pair>(); });
  nn::Module* replica = nullptr;
  auto run = [&] {
    dp.run(2, [&](int64_t k, nn::Module& m) {
      if (k == 1) replica = &m;  // written by part 1's thread only
    });
  };
  run();
  REQUIRE(replica != nullptr);
  CHECK(replica->parameters()[0].data() == pair.a->weight.data());
  // DataParallel keeps its lists of parameters from run to run; a new tensor in the module's
  // tree (set_parameter) must not leave the replica on the old one.
  const Tensor w = randn({4, 4});
  pair.a->tie_weight(w);
  run();
  CHECK(replica->parameters()[0].data() == w.data());
}

TEST_CASE("DataParallel: reduce_gradients adds a replica's strided gradient too") {
  Threads two(2);
  Pair pair;
  nn::DataParallel dp(pair, [] { return std::make_shared<Pair>(); });
  nn::Module* replica = nullptr;
  dp.run(2, [&](int64_t k, nn::Module& m) {
    if (k == 1) replica = &m;  // written by part 1's thread only
  });
  REQUIRE(replica != nullptr);
  // a.weight: the replica's gradient a transposed view (not contiguous); b.weight: contiguous.
  const Tensor mine_a = randn({4, 4}), theirs_a = randn({4, 4}), mine_b = randn({4, 4}),
               theirs_b = randn({4, 4});
  pair.a->weight.set_grad(mine_a.clone());
  pair.b->weight.set_grad(mine_b.clone());
  const auto replica_params = replica->parameters();
  replica_params[0].set_grad(theirs_a.t());
  replica_params[2].set_grad(theirs_b.clone());
  replica_params[3].set_grad(theirs_b.select(0, 0).clone());  // b.bias: the module has none
  dp.reduce_gradients();
  CHECK_CLOSE(pair.a->weight.grad(), mine_a + theirs_a.t(), 0.0, 0.0);
  CHECK_CLOSE(pair.b->weight.grad(), mine_b + theirs_b, 0.0, 0.0);
  CHECK_CLOSE(pair.b->bias.grad(), theirs_b.select(0, 0), 0.0, 0.0);  // handed over as it is
  for (const Tensor& p : replica_params) CHECK_FALSE(p.grad().defined());
}

TEST_CASE("GeneratorGuard: this thread draws from the guard's generator, others do not") {
  manual_seed(7);
  const Generator process = default_generator();
  Generator mine(99), copy(99);
  {
    GeneratorGuard guard(mine);
    const Tensor r = randn({3});
    for (float v : r.to_vector()) CHECK(v == copy.normal());
    Generator inner(5);
    {
      GeneratorGuard nested(inner);
      CHECK(&default_generator() == &inner);
    }
    CHECK(&default_generator() == &mine);
    // Another thread still has the process's generator.
    const Generator* elsewhere = nullptr;
    std::thread([&] { elsewhere = &default_generator(); }).join();
    CHECK(elsewhere != &mine);
  }
  CHECK(default_generator().get_state().state == process.get_state().state);  // untouched
}

TEST_CASE("Trainer with batch, batch_loss and replicate: two threads train as one does") {
  // Two threads split the batch on the fast kernels ("data_parallel.parts"); on the reference
  // path the batch is one part, whatever the threads.
  FastKernels fast;
  const auto config = tiny_gpt(0.0);
  // Eight steps of one fixed-seed run; returns the weights and the logged train loss curve.
  auto train = [&](int threads, bool parallel) {
    Threads t(threads);
    manual_seed(21);
    auto model = std::make_shared<models::TransformerForCausalLM>(config);
    nn::AdamW opt(model->parameters(), {.lr = 1e-2});
    training::Trainer trainer(*model, opt, nullptr,
                              {.epochs = 1, .clip = 1.0, .curve_every = 1, .quiet = true});
    trainer.batches = [](int64_t) { return 8; };
    trainer.batch = [](int64_t, int64_t) {
      return training::Batch{.input = randint(0, 23, {5, 16}), .labels = randint(0, 23, {5, 16})};
    };
    trainer.batch_loss = [](nn::Module& m, const training::Batch& b) {
      return training::BatchLoss{lm_loss(m, b.input, b.labels), b.input.numel()};
    };
    if (parallel)
      trainer.replicate = [&] { return std::make_shared<models::TransformerForCausalLM>(config); };
    const auto r = trainer.fit();
    CHECK(r.step == 8);
    return model->state_dict();
  };
  const auto one = train(1, true), two = train(2, true), start = train(1, false);
  int moved = 0, differ = 0;
  for (const auto& named : one) {
    const std::string& name = named.first;
    const Tensor& w = named.second;
    CHECK_MESSAGE(compare(two.at(name), w, 2e-5, 1e-3).empty(), name);
    differ += two.at(name).to_vector() != w.to_vector();  // the parts' sum: other rounding
    moved += start.at(name).to_vector() != w.to_vector();
  }
  CHECK(differ > 0);  // so two threads did split the batch
  CHECK(moved == 0);  // one thread: replicate or not, the same bits
  check_error(
      [&] {
        models::TransformerForCausalLM model(config);
        nn::AdamW opt(model.parameters(), {});
        training::Trainer trainer(model, opt, nullptr, {.quiet = true});
        trainer.batches = [](int64_t) { return 1; };
        trainer.batch = [](int64_t, int64_t) {
          return training::Batch{.input = zeros({2, 3}), .labels = zeros({3, 3})};
        };
        trainer.batch_loss = [](nn::Module&, const training::Batch& b) {
          return training::BatchLoss{b.input.sum()};
        };
        trainer.fit();
      },
      {"Trainer", "first dimension", "input has shape [2, 3]", "labels [3, 3]"});
}

TEST_CASE(
    "Trainer: a run folder that does not exist yet is created, as the guide's example needs") {
  const auto dir = anatomy::testing::temp_root() / "anatomy_trainer_new_folder" / "run";
  std::filesystem::remove_all(dir.parent_path());
  const auto config = tiny_gpt(0.0);
  models::TransformerForCausalLM model(config);
  nn::AdamW opt(model.parameters(), {});
  training::Trainer trainer(model, opt, nullptr, {.run_dir = dir.string(), .quiet = true});
  trainer.batches = [](int64_t) { return 2; };
  trainer.batch = [](int64_t, int64_t) {
    return training::Batch{.input = randint(0, 23, {2, 16}), .labels = randint(0, 23, {2, 16})};
  };
  trainer.batch_loss = [](nn::Module& m, const training::Batch& b) {
    return training::BatchLoss{lm_loss(m, b.input, b.labels), b.input.numel()};
  };
  CHECK(trainer.fit().step == 2);
  CHECK(std::filesystem::exists(dir / "last" / "model.safetensors"));
  CHECK(std::filesystem::exists(dir / "last" / "training.safetensors"));
  CHECK(std::filesystem::exists(dir / "run.json"));
  std::filesystem::remove_all(dir.parent_path());
}
