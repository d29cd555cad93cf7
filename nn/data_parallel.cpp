#include "nn/data_parallel.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "autograd/dispatch.hpp"

namespace anatomy::nn {

namespace {

// The loops of the data-parallel step, plainly: one part (the whole batch on this thread), the
// parts run one after another, and each gradient plus the replicas', added in part order. Their
// fast kernels (kernels/data_parallel.cpp) split a batch into one part a thread, run the parts at
// once, and add all the gradients in one parallel loop.
int64_t parts_of(int64_t /*rows*/) { return 1; }

void run_parts(int64_t n, const std::function<void(int64_t k)>& part) {
  for (int64_t k = 0; k < n; ++k) part(k);
}

void add_gradients(const std::vector<Tensor>& into, const std::vector<std::vector<Tensor>>& from) {
  for (size_t i = 0; i < into.size(); ++i)
    for (const Tensor& g : from[i]) Tensor(into[i]).add_(g);
}

}  // namespace

DataParallel::DataParallel(Module& module, std::function<std::shared_ptr<Module>()> replicate)
    : module_(module), replicate_(std::move(replicate)) {
  if (!replicate_) throw Error("DataParallel: replicate must build a module (got none)");
}

int64_t DataParallel::parts(int64_t rows) const {
  if (auto fast = fast_kernel<decltype(parts_of)>("data_parallel.parts")) return fast(rows);
  return parts_of(rows);
}

std::pair<int64_t, int64_t> DataParallel::part_rows(int64_t rows, int64_t k, int64_t n) {
  if (n < 1 || k < 0 || k >= n || rows < n)
    throw Error(fmt::format(
        "DataParallel: part {} of {} of {} rows: expected 0 <= part < parts <= rows", k, n, rows));
  const int64_t size = rows / n, longer = rows % n;  // the first `longer` parts get one more
  const int64_t begin = k * size + std::min(k, longer);
  return {begin, begin + size + (k < longer ? 1 : 0)};
}

void DataParallel::check_alike(const Module& r) const {
  const auto mine = module_.named_parameters(), theirs = r.named_parameters();
  if (mine.size() != theirs.size())
    throw Error(fmt::format("DataParallel: the replica has {} parameters, the module {}",
                            theirs.size(), mine.size()));
  for (size_t i = 0; i < mine.size(); ++i) {
    const auto& [name, p] = mine[i];
    const auto& [rname, q] = theirs[i];
    if (name != rname || p.shape() != q.shape() || p.strides() != q.strides())
      throw Error(fmt::format(
          "DataParallel: the replica's parameter {} is '{}' of shape {}, the module's '{}' of "
          "shape {}: replicate must build a module like the trained one",
          i, rname, q.shape().str(), name, p.shape().str()));
  }
}

DataParallel::Tie& DataParallel::tie(int64_t k) {
  Tie& t = ties_[k - 1];
  const uint64_t version = Module::structure_version();
  if (t.version == version) return t;
  // Walked again only when a module's parameters changed: the walks visit modules and tensors that
  // are no longer in cache.
  check_alike(*replicas_[k - 1]);  // throws, naming the parameter
  t.mine = module_.parameters();
  t.theirs = replicas_[k - 1]->parameters();
  t.version = version;
  return t;
}

Module& DataParallel::replica(int64_t k) {
  while (static_cast<int64_t>(replicas_.size()) < k) {
    // Its initial values are overwritten, so the random numbers they took are given back: the
    // run draws the same numbers whether or not a replica was built.
    const Generator before = default_generator();
    std::shared_ptr<Module> r = replicate_();
    default_generator() = before;
    if (!r) throw Error("DataParallel: replicate returned no module");
    replicas_.push_back(std::move(r));
    ties_.emplace_back();
  }
  // Tied again at each use: cheap, and a module whose parameters got new storage is still
  // shared, not silently trained apart from its replicas.
  const Tie& t = tie(k);
  for (size_t i = 0; i < t.mine.size(); ++i) {
    TensorImpl &p = *t.mine[i].impl(), &q = *t.theirs[i].impl();
    if (q.storage != p.storage) q.storage = p.storage;
    q.offset = p.offset;
  }
  Module& r = *replicas_[k - 1];
  r.train(module_.is_training());
  return r;
}

void DataParallel::run(int64_t n, const std::function<void(int64_t, Module&)>& fn) {
  if (n < 1) throw Error(fmt::format("DataParallel: run needs at least one part (got {})", n));
  if (n == 1) {
    fn(0, module_);
    return;
  }
  std::vector<Module*> models{&module_};
  for (int64_t k = 1; k < n; ++k) models.push_back(&replica(k));
  // Part k's generator is seeded from the default generator's state and k. The default
  // generator moves on only when a part drew a number: a run without dropout then draws what a
  // one-thread run draws (the same batches), and one with dropout gets new masks each step.
  Generator& g = default_generator();
  const Generator::State at = g.get_state();
  std::vector<Generator> generators;
  for (int64_t k = 0; k < n; ++k) {
    uint64_t seed = at.state ^ (at.inc * 0x9E3779B97F4A7C15ULL) ^ static_cast<uint64_t>(k + 1);
    seed = (seed ^ (seed >> 31)) * 0xBF58476D1CE4E5B9ULL;  // splitmix64's mixing
    generators.emplace_back(seed ^ (seed >> 29));
  }
  const std::vector<Generator> fresh = generators;
  auto run_all = run_parts;
  if (auto fast = fast_kernel<decltype(run_parts)>("data_parallel.run")) run_all = fast;
  run_all(n, [&](int64_t k) {
    GeneratorGuard own(generators[k]);
    fn(k, *models[k]);
  });
  for (int64_t k = 0; k < n; ++k)
    if (generators[k].get_state().state != fresh[k].get_state().state) {
      g.next_u32();
      break;
    }
}

void DataParallel::reduce_gradients() {
  if (replicas_.empty()) return;
  // Each parameter's gradients summed in part order (the module's, then replica 1's, 2's, ...).
  // A module without a gradient takes the first replica's as it is.
  std::vector<const Tie*> ties;
  for (int64_t k = 1; k <= static_cast<int64_t>(replicas_.size()); ++k) ties.push_back(&tie(k));
  const std::vector<Tensor>& mine = ties[0]->mine;
  std::vector<Tensor> into;
  std::vector<std::vector<Tensor>> from;  // held: the replicas no longer hold them
  for (size_t i = 0; i < mine.size(); ++i) {
    Tensor sum = mine[i].grad();
    std::vector<Tensor> theirs;
    for (const Tie* t : ties) {
      const Tensor g = t->theirs[i].grad();
      t->theirs[i].zero_grad();
      if (!g.defined()) continue;
      if (sum.defined()) {
        theirs.push_back(g);
      } else {
        mine[i].set_grad(g);
        sum = g;
      }
    }
    if (theirs.empty()) continue;
    into.push_back(std::move(sum));
    from.push_back(std::move(theirs));
  }
  auto add = add_gradients;
  if (auto fast = fast_kernel<decltype(add_gradients)>("data_parallel.reduce_gradients"))
    add = fast;
  add(into, from);
}

}  // namespace anatomy::nn
