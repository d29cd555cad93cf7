// Tensor's in-place fill_, copy_, add_ and mul_ on SIMD vectors, split between threads: fast
// kernels of the methods in autograd/tensor.cpp, which they must equal. Gradients are zeroed,
// accumulated and copied every step, so these run on every parameter and activation.
#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "autograd/dispatch.hpp"
#include "autograd/engine.hpp"
#include "autograd/ops.hpp"
#include "autograd/strided.hpp"
#include "kernels/simd.hpp"

namespace anatomy {

namespace {

// Whether `t` refers to one element from several places (a zero stride over more than one
// element: an expanded view). Written into, the order of the writes decides what stays.
bool repeats_elements(const Tensor& t) {
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.stride(d) == 0 && t.size(d) > 1) return true;
  return false;
}

// Whether `a` and `b`, both viewed with a's shape and the strides given, may share elements: the
// byte ranges they reach overlap.
bool overlaps(const Tensor& a, const std::vector<int64_t>& a_strides, const Tensor& b,
              const std::vector<int64_t>& b_strides) {
  auto span = [&](const Tensor& t, const std::vector<int64_t>& strides) {  // [first, last + 1)
    int64_t lo = 0, hi = 0;
    for (int64_t d = 0; d < a.dim(); ++d) {
      const int64_t reach = (a.size(d) - 1) * strides[static_cast<size_t>(d)];
      (reach < 0 ? lo : hi) += reach;
    }
    const bool f32 = t.dtype() == Dtype::Float32;
    const auto at = f32 ? reinterpret_cast<intptr_t>(t.data_ptr<float>())
                        : reinterpret_cast<intptr_t>(t.data_ptr<int64_t>());
    const intptr_t bytes = f32 ? sizeof(float) : sizeof(int64_t);
    return std::pair{at + lo * bytes, at + (hi + 1) * bytes};
  };
  const auto [a0, a1] = span(a, a_strides);
  const auto [b0, b1] = span(b, b_strides);
  return a0 < b1 && b0 < a1;
}

void fast_fill_(Tensor& self, float value) {
  std::array<std::vector<int64_t>, 1> s{self.strides()};
  if (self.dtype() == Dtype::Float32 &&
      self.is_contiguous()) {  // gradients zeroed every step: both cores
    float* p = self.data_ptr<float>();
    parallel_for(self.numel(), simd::kGrain,
                 [&](int64_t b, int64_t e) { std::fill(p + b, p + e, value); });
  } else if (self.dtype() == Dtype::Float32) {
    float* p = self.data_ptr<float>();
    strided::for_each_run<1>(self.shape(), s, {0}, [&](auto off, int64_t n, auto inner) {
      for (int64_t i = 0; i < n; ++i) p[off[0] + i * inner[0]] = value;
    });
  } else {
    int64_t* p = self.data_ptr<int64_t>();
    const auto v = static_cast<int64_t>(value);
    strided::for_each_run<1>(self.shape(), s, {0}, [&](auto off, int64_t n, auto inner) {
      for (int64_t i = 0; i < n; ++i) p[off[0] + i * inner[0]] = v;
    });
  }
  return;
}

void fast_copy_(Tensor& self, const Tensor& s) {
  if (self.dtype() == Dtype::Float32 && s.shape() == self.shape() && self.is_contiguous() &&
      s.is_contiguous()) {
    float* dst = self.data_ptr<float>();
    const float* from = s.data_ptr<float>();
    const int64_t n = self.numel();
    if (dst + n <= from || from + n <= dst || dst == from) {  // no partial overlap
      parallel_for(n, simd::kGrain, [&](int64_t b, int64_t e) {
        std::memmove(dst + b, from + b, sizeof(float) * static_cast<size_t>(e - b));
      });
      return;
    }
  }
  std::array<std::vector<int64_t>, 2> st{self.strides(),
                                         strided::broadcast_strides(s, self.shape())};
  // Threads split dim 0 unless the two sides' elements may overlap, or the destination repeats
  // an element (a zero stride: an expanded view), where the copy goes one element at a time in
  // order (the last write wins, not whichever thread came last). A permuted gradient made
  // contiguous ([B, T, 3, H, D] from [3, B, H, T, D]) is large enough to split.
  auto run = [&](auto* dst, auto* from) {
    if (self.numel() == 0) return;
    if (self.dim() == 0) {
      *dst = *from;
      return;
    }
    auto rows = [&](int64_t b, int64_t e) {  // rows [b, e) of dim 0
      Shape part = self.shape();
      part[0] = e - b;
      strided::for_each_run<2>(part, st, {b * st[0][0], b * st[1][0]},
                               [&](auto off, int64_t n, auto inner) {
                                 for (int64_t i = 0; i < n; ++i)
                                   dst[off[0] + i * inner[0]] = from[off[1] + i * inner[1]];
                               });
    };
    if (repeats_elements(self) || overlaps(self, st[0], s, st[1])) return rows(0, self.size(0));
    const int64_t row = self.numel() / self.size(0);
    parallel_for(self.size(0), std::max<int64_t>(1, simd::kGrain / row), rows);
  };
  if (self.dtype() == Dtype::Float32)
    run(self.data_ptr<float>(), s.data_ptr<float>());
  else
    run(self.data_ptr<int64_t>(), s.data_ptr<int64_t>());
  return;
}

void fast_add_(Tensor& self, const Tensor& other, float alpha) {
  const bool floats = self.dtype() == Dtype::Float32 && other.dtype() == Dtype::Float32;
  if (floats && self.is_contiguous() && other.is_contiguous() && other.shape() == self.shape()) {
    const simd::batch a(alpha);
    simd::map2(self.data(), 1, other.data(), 1, self.data(), self.numel(),
               [&](auto x, auto y) { return xsimd::fma(y, a, x); });
    return;
  }
  // Strided, of the same shape, each element once and apart from `other` (a gradient added into
  // part of a buffer: the engine's q, k and v of one projection): in place, run by run, instead
  // of a sum into a new tensor and a copy back.
  if (floats && other.shape() == self.shape() && self.dim() > 0 && self.numel() > 0 &&
      !repeats_elements(self) && !overlaps(self, self.strides(), other, other.strides())) {
    const std::array<std::vector<int64_t>, 2> st{self.strides(), other.strides()};
    float* dst = self.data();
    const float* from = other.data();
    const simd::batch a(alpha);
    auto rows = [&](int64_t b, int64_t e) {  // rows [b, e) of dim 0
      Shape part = self.shape();
      part[0] = e - b;
      strided::for_each_run<2>(
          part, st, {b * st[0][0], b * st[1][0]}, [&](auto off, int64_t n, auto inner) {
            float* x = dst + off[0];
            const float* y = from + off[1];
            if (inner[0] == 1 && inner[1] == 1)
              simd::map2_range(x, 1, y, 1, x, n,
                               [&](auto u, auto v) { return xsimd::fma(v, a, u); });
            else
              for (int64_t i = 0; i < n; ++i)
                x[i * inner[0]] = std::fma(y[i * inner[1]], alpha, x[i * inner[0]]);
          });
    };
    parallel_for(self.size(0), std::max<int64_t>(1, simd::kGrain / (self.numel() / self.size(0))),
                 rows);
    return;
  }
  NoGradGuard guard;
  self.copy_(alpha == 1.0f ? add(self, other) : add(self, mul(other, alpha)));
}

void fast_mul_(Tensor& self, float value) {
  if (self.is_contiguous()) {
    const simd::batch v(value);
    simd::map(self.data(), self.data(), self.numel(), [&](auto x) { return x * v; });
    return;
  }
  NoGradGuard guard;
  self.copy_(mul(self, value));
}

}  // namespace

void register_tensor_kernels() {
  register_kernel<void(Tensor&, float)>("fill_", fast_fill_);
  register_kernel<void(Tensor&, const Tensor&)>("copy_", fast_copy_);
  register_kernel<void(Tensor&, const Tensor&, float)>("add_", fast_add_);
  register_kernel<void(Tensor&, float)>("mul_", fast_mul_);
}

}  // namespace anatomy
