// Storage: the flat, SIMD-aligned buffer behind one or more tensors. It is an xtensor 1-D
// container, so its memory is aligned for xsimd loads; tensors add shape, strides and offset.
#pragma once

#include <cstdint>
#include <variant>

#include "autograd/tensor.hpp"
#include "autograd/xtensor.hpp"

namespace anatomy {

struct Storage {
  std::variant<xt::xtensor<float, 1>, xt::xtensor<int64_t, 1>> buffer;

  // Uninitialized storage for n elements.
  static std::shared_ptr<Storage> allocate(int64_t n, Dtype dtype) {
    auto s = std::make_shared<Storage>();
    const std::array<size_t, 1> shape{static_cast<size_t>(n)};
    if (dtype == Dtype::Float32)
      s->buffer = xt::xtensor<float, 1>::from_shape(shape);
    else
      s->buffer = xt::xtensor<int64_t, 1>::from_shape(shape);
    return s;
  }
  template <typename T>
  T* data() {
    return std::get<xt::xtensor<T, 1>>(buffer).data();
  }
};

}  // namespace anatomy
