#include "nn/checkpoint.hpp"

#include <bit>
#include "io/safetensors.hpp"

namespace anatomy::nn {

namespace {

// The generator's state as int64s (bit patterns), so it survives the file unchanged.
Tensor rng_to_tensor(const Generator::State& s) {
  return from_vector(std::vector<int64_t>{static_cast<int64_t>(s.state),
                                          static_cast<int64_t>(s.inc), s.has_spare ? 1 : 0,
                                          static_cast<int64_t>(std::bit_cast<uint32_t>(s.spare))},
                     {4});
}

Generator::State rng_from_tensor(const Tensor& t) {
  const auto v = t.to_int_vector();
  return {static_cast<uint64_t>(v[0]), static_cast<uint64_t>(v[1]), v[2] != 0,
          std::bit_cast<float>(static_cast<uint32_t>(v[3]))};
}

StateDict with_prefix(const std::map<std::string, Tensor>& all, const std::string& prefix) {
  StateDict out;
  for (const auto& [k, t] : all)
    if (k.starts_with(prefix)) out[k.substr(prefix.size())] = t;
  return out;
}

}  // namespace

void save_checkpoint(const std::string& path, const Module& model, const Optimizer& optimizer,
                     const LRScheduler* scheduler, int64_t step,
                     const std::map<std::string, std::string>& metadata) {
  std::map<std::string, Tensor> all;
  for (const auto& [k, t] : model.state_dict()) all["model." + k] = t;
  for (const auto& [k, t] : optimizer.state_dict()) all["optimizer." + k] = t;
  if (scheduler)
    all["scheduler.step"] = full({}, static_cast<float>(scheduler->last_step()), kInt64);
  all["rng"] = rng_to_tensor(default_generator().get_state());
  all["step"] = from_vector(std::vector<int64_t>{step}, {});
  save_safetensors(path, all, metadata);
}

Checkpoint load_checkpoint(const std::string& path, Module& model, Optimizer& optimizer,
                           LRScheduler* scheduler) {
  auto file = load_safetensors(path);
  const auto& all = file.tensors;
  std::vector<std::string> problems;
  auto need = [&](const std::string& key, Shape shape) {
    auto it = all.find(key);
    if (it == all.end() || it->second.dtype() != kInt64 || it->second.shape() != shape)
      problems.push_back(
          fmt::format("'{}' is missing or is not int64 of shape {}", key, shape.str()));
  };
  need("step", {});
  need("rng", {4});
  if (scheduler) need("scheduler.step", {});
  const StateDict model_state = with_prefix(all, "model.");
  const StateDict opt_state = with_prefix(all, "optimizer.");
  // Validate every part first: nothing is applied unless all of it fits.
  for (auto check : {std::function<void()>([&] { model.check_state_dict(model_state, true); }),
                     std::function<void()>([&] { optimizer.check_state_dict(opt_state); })}) {
    try {
      if (problems.empty()) check();
    } catch (const Error& e) {
      problems.push_back(e.what());
    }
  }
  if (!problems.empty()) {
    std::string msg = fmt::format("load_checkpoint: {} does not fit this model:", path);
    for (const auto& p : problems) msg += "\n  " + p;
    throw Error(msg);
  }
  model.load_state_dict(model_state, true);
  optimizer.load_state_dict(opt_state);
  if (scheduler) scheduler->set_last_step(all.at("scheduler.step").item<int64_t>());
  default_generator().set_state(rng_from_tensor(all.at("rng")));
  return {all.at("step").item<int64_t>(), file.metadata};
}

}  // namespace anatomy::nn
