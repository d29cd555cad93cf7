// Checkpoints on disk: module save/load, PyTorch-written files, broken files, exact resume.
#include <fstream>

#include "helpers.hpp"
#include "nn/nn.hpp"
#include "training/training.hpp"

using namespace anatomy;
using testing::check_error;

namespace {

std::string tmp(const std::string& name) {
  return (anatomy::testing::temp_root() / ("anatomy_ckpt_" + name)).string();
}

struct Net : nn::Module {
  std::shared_ptr<nn::Linear> fc1, fc2;
  std::shared_ptr<nn::Dropout> drop;
  Net() {
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(6, 16));
    drop = register_module("drop", std::make_shared<nn::Dropout>(0.2f));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(16, 3));
  }
  Tensor forward(const Tensor& x) override {
    return fc2->forward(drop->forward(gelu(fc1->forward(x))));
  }
};

// One training step on a random batch: uses the generator (data, dropout) like a real run.
float train_step(Net& net, nn::Optimizer& opt, nn::LRScheduler& sched) {
  Tensor x = randn({8, 6});
  Tensor y = randint(0, 3, {8});
  Tensor loss = cross_entropy(net.forward(x), y);
  opt.zero_grad();
  loss.backward();
  nn::clip_grad_norm_(net.parameters(), 1.0f);
  opt.step();
  sched.step();
  return loss.item();
}

}  // namespace

TEST_CASE("module save -> load round trip is bit-exact") {
  manual_seed(0);
  Net a, b;
  const std::string path = tmp("module.safetensors");
  a.save(path);
  b.load(path);
  for (const auto& [n, p] : a.named_parameters())
    CHECK(b.state_dict().at(n).to_vector() == p.to_vector());
  std::filesystem::remove(path);
}

TEST_CASE("a file written from PyTorch's state_dict loads by name") {
  // nn.safetensors holds torch.nn.Linear(768, 64)'s state_dict under "linear.param.".
  auto file = load_safetensors(testing::test_path("parity/golden/nn.safetensors"));
  CHECK(file.metadata.at("format") == "pt");
  nn::StateDict sd;
  for (const auto& [k, t] : file.tensors)
    if (k.starts_with("linear.param.")) sd[k.substr(13)] = t;
  nn::Linear lin(768, 64);
  lin.load_state_dict(sd);
  CHECK(lin.weight.to_vector() == sd.at("weight").to_vector());
}

TEST_CASE("broken checkpoints give a clear error and leave the module unchanged") {
  manual_seed(1);
  Net net, other;
  const std::string good = tmp("good.safetensors");
  other.save(good);
  std::ifstream f(good, std::ios::binary);
  const std::string bytes{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  const auto before = net.state_dict().at("fc1.weight").to_vector();
  auto write = [](const std::string& path, const std::string& data) {
    std::ofstream(path, std::ios::binary) << data;
    return path;
  };
  auto unchanged = [&] { CHECK(net.state_dict().at("fc1.weight").to_vector() == before); };

  check_error([&] { net.load(write(tmp("trunc.safetensors"), bytes.substr(0, bytes.size() / 2))); },
              {"truncated"});
  unchanged();
  std::string corrupt = bytes;
  corrupt[8] = '#';  // the JSON header's opening brace
  check_error([&] { net.load(write(tmp("corrupt.safetensors"), corrupt)); }, {"not valid JSON"});
  unchanged();

  nn::Linear small(6, 8);
  auto sd = other.state_dict();
  sd["fc1.weight"] = small.weight;
  save_safetensors(tmp("shape.safetensors"), sd);
  check_error([&] { net.load(tmp("shape.safetensors")); }, {"size mismatch for fc1.weight"});
  unchanged();
  sd = other.state_dict();
  sd.erase("fc2.weight");
  save_safetensors(tmp("missing.safetensors"), sd);
  check_error([&] { net.load(tmp("missing.safetensors")); }, {"Missing key(s)", "fc2.weight"});
  unchanged();
  sd = other.state_dict();
  sd["fc9.bias"] = ones({3});
  save_safetensors(tmp("unexpected.safetensors"), sd);
  check_error([&] { net.load(tmp("unexpected.safetensors")); }, {"Unexpected key(s)", "fc9.bias"});
  unchanged();
  // Non-strict loading reports what it skipped.
  auto result = net.load(tmp("unexpected.safetensors"), false);
  CHECK(result.unexpected_keys == std::vector<std::string>{"fc9.bias"});
  for (const auto* name : {"good", "trunc", "corrupt", "shape", "missing", "unexpected"})
    std::filesystem::remove(tmp(std::string(name) + ".safetensors"));
}

TEST_CASE("resume: N steps, save, M steps == N + M steps uninterrupted, bit for bit") {
  const std::string path = tmp("resume.safetensors");
  // Uninterrupted: 5 + 5 steps.
  manual_seed(7);
  Net a;
  nn::AdamW oa(a.parameters(), {.lr = 1e-2});
  nn::WarmupDecaySchedule sa(oa, 1e-2, 3, 10);
  for (int i = 0; i < 5; ++i) train_step(a, oa, sa);
  save_checkpoint(path, a, oa, &sa, 5, {{"note", "after 5"}});
  std::vector<float> losses_a;
  for (int i = 0; i < 5; ++i) losses_a.push_back(train_step(a, oa, sa));

  // Resumed: a fresh process state (other seed, fresh model), then load and 5 steps.
  manual_seed(999);
  Net b;
  nn::AdamW ob(b.parameters(), {.lr = 1e-2});
  nn::WarmupDecaySchedule sb(ob, 1e-2, 3, 10);
  auto info = nn::load_checkpoint(path, b, ob, &sb);
  CHECK(info.step == 5);
  CHECK(info.metadata.at("note") == "after 5");
  CHECK(sb.last_step() == 5);
  std::vector<float> losses_b;
  for (int i = 0; i < 5; ++i) losses_b.push_back(train_step(b, ob, sb));
  CHECK(losses_a == losses_b);
  for (const auto& [n, p] : a.named_parameters())
    CHECK(b.state_dict().at(n).to_vector() == p.to_vector());

  // A checkpoint of another model is refused whole.
  struct Other : nn::Module {
    Other() { register_module("fc1", std::make_shared<nn::Linear>(6, 4)); }
  } o;
  nn::SGD os(o.parameters(), {});
  check_error([&] { nn::load_checkpoint(path, o, os, nullptr); }, {"does not fit", "fc1.weight"});
  // The same parameters and one more tensor the checkpoint lacks (a buffer: the optimizer's
  // state still fits): the model part alone must be refused, by name, and nothing applied
  // (a non-strict check would let the missing key through to the load).
  struct Wider : Net {
    Wider() { register_buffer("running_mean", zeros({3})); }
  } wider;
  nn::AdamW ow(wider.parameters(), {.lr = 1e-2});
  const auto before = wider.state_dict().at("fc1.weight").to_vector();
  check_error([&] { nn::load_checkpoint(path, wider, ow, nullptr); },
              {"load_checkpoint", "does not fit", "running_mean"});
  CHECK(wider.state_dict().at("fc1.weight").to_vector() == before);

  // A training state without its step, or with a generator state of the wrong type, is named.
  auto broken = load_safetensors(path).tensors;
  broken.erase("step");
  broken["rng"] = zeros({4});  // float32, not int64
  const std::string bad = tmp("broken_state.safetensors");
  save_safetensors(bad, broken);
  check_error([&] { nn::load_checkpoint(bad, b, ob, &sb); },
              {"does not fit", "'step' is missing or is not int64 of shape []",
               "'rng' is missing or is not int64 of shape [4]"});
  std::filesystem::remove(bad);
  std::filesystem::remove(path);
}

TEST_CASE("checkpoint averaging: the element-wise mean, and files that do not match") {
  std::vector<std::string> files;
  std::vector<std::vector<float>> a(3);
  for (int f = 0; f < 3; ++f) {
    manual_seed(static_cast<uint64_t>(f));
    Net net;
    files.push_back(tmp(fmt::format("average_{}.safetensors", f)));
    net.save(files.back());
    a[f] = net.fc1->weight.contiguous().to_vector();
  }
  const auto mean = training::average_state_dicts(files);
  CHECK(mean.size() == Net().state_dict().size());
  const auto w = mean.at("fc1.weight").to_vector();
  REQUIRE(w.size() == a[0].size());
  for (size_t i = 0; i < w.size(); ++i)
    CHECK(w[i] == doctest::Approx((a[0][i] + a[1][i] + a[2][i]) / 3).epsilon(1e-6));
  // The mean is not one of its inputs (a wrong "average" that returns the last file).
  CHECK(w[0] != a[2][0]);
  // A file of another model: the error names it and the tensor.
  const std::string other = tmp("average_other.safetensors");
  nn::Linear(6, 4).save(other);
  CHECK_THROWS_WITH_AS(training::average_state_dicts({files[0], other}),
                       doctest::Contains("average_other"), Error);
  // As many tensors as the first file, but one of another name, or of another shape: each is
  // refused by name, before any sum reads past a tensor's end.
  const std::string first = tmp("average_ab.safetensors"), renamed = tmp("average_ac.safetensors"),
                    reshaped = tmp("average_ab_wide.safetensors");
  save_safetensors(first, {{"a", tensor({1.0f, 2.0f})}, {"b", tensor({3.0f})}});
  save_safetensors(renamed, {{"a", tensor({1.0f, 2.0f})}, {"c", tensor({3.0f})}});
  save_safetensors(reshaped, {{"a", tensor({1.0f, 2.0f, 5.0f})}, {"b", tensor({3.0f})}});
  CHECK_THROWS_WITH_AS(training::average_state_dicts({first, renamed}),
                       doctest::Contains("'c' has no twin of its shape and type"), Error);
  CHECK_THROWS_WITH_AS(training::average_state_dicts({first, reshaped}),
                       doctest::Contains("'a' has no twin of its shape and type"), Error);
  for (const auto& f : {first, renamed, reshaped}) std::filesystem::remove(f);
}

TEST_CASE("a run's data spec round-trips through run.json, and older runs split by pair") {
  training::DataSpec s;
  s.corpus = "c.tsv";
  s.valid = "v.tsv";
  s.reverse = true;
  s.read.max_chars = 80;
  const auto back = training::DataSpec::from_json(s.to_json());
  CHECK(back.corpus == "c.tsv");
  CHECK(back.valid == "v.tsv");
  CHECK(back.test.empty());
  CHECK(back.reverse);
  CHECK(back.read.max_chars == 80);
  CHECK(back.split == "source");
  // run.json of a run trained before the split by source: the split it was trained with.
  CHECK(training::DataSpec::from_json({{"corpus", "c.tsv"}}).split == "pair");
  CHECK_THROWS_WITH_AS(training::DataSpec::from_json({{"corpus", "c.tsv"}, {"split", "random"}}),
                       doctest::Contains("data.split"), Error);
}
