// Storage: the flat, aligned buffer behind one or more tensors. It is an xtensor 1-D container
// whose memory comes from allocate_bytes (memory.hpp); tensors add shape, strides and offset.
#pragma once

#include <cstdint>
#include <variant>

#include "autograd/memory.hpp"
#include "autograd/tensor.hpp"
#include "autograd/xtensor.hpp"

namespace anatomy {

template <typename T>
using StorageBuffer = xt::xtensor<T, 1, xt::layout_type::row_major, BufferAllocator<T>>;

struct Storage {
  std::variant<StorageBuffer<float>, StorageBuffer<int64_t>> buffer;

  // Uninitialized storage for n elements.
  static std::shared_ptr<Storage> allocate(int64_t n, Dtype dtype) {
    auto s = std::make_shared<Storage>();
    const std::array<size_t, 1> shape{static_cast<size_t>(n)};
    if (dtype == Dtype::Float32)
      s->buffer = StorageBuffer<float>::from_shape(shape);
    else
      s->buffer = StorageBuffer<int64_t>::from_shape(shape);
    return s;
  }
  template <typename T>
  T* data() {
    return std::get<StorageBuffer<T>>(buffer).data();
  }
};

}  // namespace anatomy
