#include "kernels/frozen_weights.hpp"

#include <map>
#include <memory>
#include <tuple>

#include "autograd/storage.hpp"
#include "kernels/gemm.hpp"

namespace anatomy {

namespace {

struct Packed {
  std::weak_ptr<Storage> storage;  // expired: the weight is gone, its address may be reused
  PackedB panels;                  // from the second product on
};

// Which weight: (first element, rows, columns, row stride, column stride). A freed weight's
// buffer may come back as another's: its entry then holds an expired storage.
using Key = std::tuple<const float*, int64_t, int64_t, int64_t, int64_t>;

struct Frozen {
  int depth = 0;
  std::map<Key, Packed> packed;
};

thread_local Frozen frozen;

}  // namespace

FrozenWeightsGuard::FrozenWeightsGuard() { ++frozen.depth; }

FrozenWeightsGuard::~FrozenWeightsGuard() {
  if (--frozen.depth == 0) frozen.packed.clear();
}

const float* frozen_packed_weight(const Tensor& weight, int64_t rows) {
  if (frozen.depth == 0 || rows < kGemmFewRows || !weight.defined() || weight.dim() != 2 ||
      weight.dtype() != Dtype::Float32 || !weight.is_leaf() || !weight.requires_grad())
    return nullptr;
  const std::shared_ptr<Storage>& storage = weight.impl()->storage;
  const int64_t K = weight.size(1), N = weight.size(0);
  const Key key{weight.data(), N, K, weight.stride(0), weight.stride(1)};
  auto it = frozen.packed.find(key);
  if (it != frozen.packed.end() && it->second.storage.lock() != storage) {
    frozen.packed.erase(it);
    it = frozen.packed.end();
  }
  if (it == frozen.packed.end()) {  // the first product packs in the call
    frozen.packed.emplace(key, Packed{storage, {}});
    return nullptr;
  }
  if (!it->second.panels.data())
    // linear's B is Wᵀ: [K, N] with row stride W's column stride and column stride W's row one.
    it->second.panels = pack_b_blocks(K, N, weight.data(), weight.stride(1), weight.stride(0));
  return it->second.panels.data();
}

}  // namespace anatomy
