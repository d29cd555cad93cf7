// Walking strided views (internal). An elementwise kernel sees its operands as runs: the
// innermost dimension after merging dims that are laid out back to back, so a contiguous
// tensor is one long run and a broadcast bias is a run with stride 0.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "autograd/tensor.hpp"

namespace anatomy::strided {

// Operand strides for viewing `t` as `shape` (broadcast dims get stride 0). `shape` must be a
// valid broadcast of t's shape.
std::vector<int64_t> broadcast_strides(const Tensor& t, const Shape& shape);

// Calls f(offsets, run_length, run_strides) once per run, in row-major order of `shape`, where
// offsets[k] is operand k's element offset at the start of the run.
template <size_t N, typename F>
void for_each_run(const Shape& shape, const std::array<std::vector<int64_t>, N>& strides,
                  std::array<int64_t, N> base, F f) {
  // Merge dims: drop size-1 dims, fuse d into d+1 when every operand is laid out back to back.
  std::vector<int64_t> sizes;
  std::array<std::vector<int64_t>, N> st;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (!sizes.empty()) {
      bool fuse = true;
      for (size_t k = 0; k < N; ++k)
        if (st[k].back() != strides[k][d] * shape[d]) fuse = false;
      if (fuse) {
        sizes.back() *= shape[d];
        for (size_t k = 0; k < N; ++k) st[k].back() = strides[k][d];
        continue;
      }
    }
    sizes.push_back(shape[d]);
    for (size_t k = 0; k < N; ++k) st[k].push_back(strides[k][d]);
  }
  for (int64_t s : shape)
    if (s == 0) return;
  if (sizes.empty()) {  // a single element
    std::array<int64_t, N> one{};
    for (size_t k = 0; k < N; ++k) one[k] = 1;
    f(base, int64_t{1}, one);
    return;
  }
  const int64_t nd = static_cast<int64_t>(sizes.size());
  const int64_t len = sizes.back();
  std::array<int64_t, N> inner{};
  for (size_t k = 0; k < N; ++k) inner[k] = st[k].back();
  std::vector<int64_t> counter(nd, 0);
  std::array<int64_t, N> off = base;
  while (true) {
    f(off, len, inner);
    int64_t d = nd - 2;
    for (; d >= 0; --d) {
      if (++counter[d] < sizes[d]) {
        for (size_t k = 0; k < N; ++k) off[k] += st[k][d];
        break;
      }
      for (size_t k = 0; k < N; ++k) off[k] -= st[k][d] * (sizes[d] - 1);
      counter[d] = 0;
    }
    if (d < 0) return;
  }
}

// Copies the elements of `src` viewed with (shape, strides, offset) into a contiguous buffer.
template <typename T>
void gather(const T* src, const Shape& shape, const std::vector<int64_t>& strides, T* dst) {
  std::array<std::vector<int64_t>, 2> s{contiguous_strides(shape), strides};
  for_each_run<2>(shape, s, {0, 0}, [&](auto off, int64_t n, auto inner) {
    T* d = dst + off[0];
    const T* p = src + off[1];
    if (inner[1] == 1) {
      for (int64_t i = 0; i < n; ++i) d[i] = p[i];
    } else {
      for (int64_t i = 0; i < n; ++i) d[i] = p[i * inner[1]];
    }
  });
}

}  // namespace anatomy::strided
