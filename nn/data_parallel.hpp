// DataParallel: one training step split between the cores by its batch, as PyTorch's
// DistributedDataParallel splits it between processes, here on one machine.
//
// Each part of the batch runs its whole forward and backward on a thread of its own, with a
// replica of the model: at the Tiny Shakespeare recipe's sizes one thread runs its products near
// a core's peak, while splitting each op of a step between two threads loses part of the step to
// packing shared operands, waits at the end of every loop, and ops too small to split. Parts
// wait for each other once a phase instead.
//
// A replica is a module built like the trained one whose parameters share its storage, so an
// optimizer step on the module is seen by every replica; its gradients are its own (two backward
// passes adding into one .grad at once would race), and reduce_gradients() adds them into the
// module's.
//
//   nn::DataParallel dp(model, [&] { return std::make_shared<Gpt>(config); });
//   const int64_t n = dp.parts(rows);
//   std::vector<Tensor> losses(n);
//   dp.run(n, [&](int64_t k, nn::Module& m) { losses[k] = loss_of(m, rows of part k); });
//   dp.run(n, [&](int64_t k, nn::Module&) { losses[k].backward(weight of part k); });
//   dp.reduce_gradients();  // the module's .grad: the whole batch's
#pragma once

#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "nn/module.hpp"

namespace anatomy::nn {

class DataParallel {
 public:
  // `replicate` builds a new module of the same structure as `module` (its initial values do not
  // matter: its parameters are pointed at the module's).
  DataParallel(Module& module, std::function<std::shared_ptr<Module>()> replicate);

  // How many parts a batch of `rows` rows is split into. On the fast kernels one a thread
  // (get_num_threads()), at most one a row, and 1 inside a parallel loop; on the reference path
  // 1, the whole batch as a plain step takes it.
  int64_t parts(int64_t rows) const;
  // Part k of n of `rows` rows: [begin, end), contiguous, the first parts one row longer when
  // rows do not divide evenly.
  static std::pair<int64_t, int64_t> part_rows(int64_t rows, int64_t k, int64_t n);

  // fn(k, model) for every part k of n, at once on the fast kernels (one a thread), one after
  // another on the reference path: model is the module for part 0 and
  // replica k for the others, in the module's training mode. With n > 1 each part draws random
  // numbers (dropout) from a generator of its own, seeded from the default generator's state and
  // k, so the result is the same for a fixed seed and thread count (the default generator moves
  // on by one number when a part drew); with n = 1, fn(0, module) runs here as a plain call
  // would. The first exception is rethrown.
  void run(int64_t n, const std::function<void(int64_t k, Module& model)>& fn);

  // Adds every replica's gradients into the module's (in part order, so the sum is the same each
  // time) and forgets the replicas': the module then holds the gradient of all the parts.
  void reduce_gradients();

 private:
  // The module's parameters and replica k's, in the same order, as of Module::structure_version
  // `version` (none yet: a value the version never takes).
  struct Tie {
    std::vector<Tensor> mine, theirs;
    uint64_t version = ~uint64_t{0};
  };
  Module& replica(int64_t k);  // k >= 1; built and tied to the module on first use
  // Replica k's Tie, taken again (and the replica checked against the module) when a module's
  // parameters changed.
  Tie& tie(int64_t k);
  // Throws, naming the first parameter where they differ, unless `r` has the module's
  // parameters: the same names, shapes and strides, in the same order.
  void check_alike(const Module& r) const;

  Module& module_;
  std::function<std::shared_ptr<Module>()> replicate_;
  std::vector<std::shared_ptr<Module>> replicas_;  // replicas_[k - 1] serves part k
  std::vector<Tie> ties_;                          // ties_[k - 1]: replica k's
};

}  // namespace anatomy::nn
