// The loops of the elementwise ops on SIMD vectors, split between threads: fast kernels of the
// ops in autograd/elementwise.cpp, which they must equal. A kernel is written once as a lambda
// over xsimd::batch<float> (simd.hpp). It only fills numbers: the op checks the arguments, calls
// the forward kernel for its values, and records its node, whose backward calls the backward
// kernel (`tanh_backward`, ...) where the gradient is a loop of its own.
#include <cmath>

#include "autograd/dispatch.hpp"
#include "autograd/ops.hpp"
#include "autograd/strided.hpp"
#include "kernels/gelu_math.hpp"
#include "kernels/simd.hpp"

namespace anatomy {

using simd::batch;

namespace {

// out = f(a) elementwise, on a contiguous copy of a when a is a view.
template <typename F>
Tensor unary_kernel(const Tensor& a, F f) {
  Tensor x = a.contiguous();
  Tensor out = empty(a.shape());
  simd::map(x.data(), out.data(), x.numel(), f);
  return out;
}

// out = f(a, b) with broadcasting. Runs whose strides are 0 or 1 go straight to SIMD; other
// strides (a transposed view) are gathered into a small buffer first.
template <typename F>
Tensor binary_kernel(const char* op, const Tensor& a, const Tensor& b, F f) {
  const Shape shape = broadcast_shapes(op, a.shape(), b.shape());
  Tensor out = empty(shape);
  const float* pa = a.data();
  const float* pb = b.data();
  float* po = out.data();
  if (a.shape() == shape && b.shape() == shape && a.is_contiguous() && b.is_contiguous()) {
    simd::map2(pa, 1, pb, 1, po, out.numel(), f);
    return out;
  }
  std::array<std::vector<int64_t>, 3> st{contiguous_strides(shape),
                                         strided::broadcast_strides(a, shape),
                                         strided::broadcast_strides(b, shape)};
  std::vector<float> ta, tb;
  strided::for_each_run<3>(shape, st, {0, 0, 0}, [&](auto off, int64_t n, auto in) {
    const float* ra = pa + off[1];
    const float* rb = pb + off[2];
    int64_t sa = in[1], sb = in[2];
    if (sa != 0 && sa != 1) {
      ta.resize(n);
      for (int64_t i = 0; i < n; ++i) ta[i] = ra[i * sa];
      ra = ta.data(), sa = 1;
    }
    if (sb != 0 && sb != 1) {
      tb.resize(n);
      for (int64_t i = 0; i < n; ++i) tb[i] = rb[i * sb];
      rb = tb.data(), sb = 1;
    }
    simd::map2(ra, sa, rb, sb, po + off[0], n, f);
  });
  return out;
}

// dL/dx = f(g, v) for a unary op, where v is the saved input or output (same shape as g).
template <typename F>
Tensor unary_backward(const Tensor& g, const Tensor& v, F f) {
  Tensor gc = g.contiguous(), vc = v.contiguous();
  Tensor out = empty(g.shape());
  simd::map2(gc.data(), 1, vc.data(), 1, out.data(), g.numel(), f);
  return out;
}

batch sign(batch x) {
  return xsimd::select(x > batch(0.0f), batch(1.0f),
                       xsimd::select(x < batch(0.0f), batch(-1.0f), batch(0.0f)));
}

// --- arithmetic ---

Tensor fast_add(const Tensor& a, const Tensor& b) {
  return binary_kernel("add", a, b, [](batch x, batch y) { return x + y; });
}

Tensor fast_sub(const Tensor& a, const Tensor& b) {
  return binary_kernel("sub", a, b, [](batch x, batch y) { return x - y; });
}

Tensor fast_mul(const Tensor& a, const Tensor& b) {
  return binary_kernel("mul", a, b, [](batch x, batch y) { return x * y; });
}

Tensor fast_div(const Tensor& a, const Tensor& b) {
  return binary_kernel("div", a, b, [](batch x, batch y) { return x / y; });
}

Tensor fast_add_scalar(const Tensor& a, float s) {
  const batch bs(s);
  return unary_kernel(a, [&](batch x) { return x + bs; });
}

Tensor fast_mul_scalar(const Tensor& a, float s) {
  const batch bs(s);
  return unary_kernel(a, [&](batch x) { return x * bs; });
}

Tensor fast_neg(const Tensor& a) {
  return unary_kernel(a, [](batch x) { return -x; });
}

Tensor fast_pow_scalar(const Tensor& a, float e) {
  const batch be(e);
  // Exact forms for the common exponents; xsimd::pow is exp(e log|x|), a little less precise.
  return e == 2.0f   ? unary_kernel(a, [](batch x) { return x * x; })
         : e == 1.0f ? unary_kernel(a, [](batch x) { return x; })
         : e == 0.0f ? unary_kernel(a, [](batch) { return batch(1.0f); })
         : e == 0.5f ? unary_kernel(a, [](batch x) { return xsimd::sqrt(x); })
                     : unary_kernel(a, [&](batch x) { return xsimd::pow(x, be); });
}

// The op handles e == 0 (a zero gradient) before it calls this.
Tensor fast_pow_backward(const Tensor& g, const Tensor& a, float e) {
  const batch be(e), be1(e - 1.0f);
  if (e == 2.0f)
    return unary_backward(g, a, [](batch gy, batch x) { return gy * batch(2.0f) * x; });
  return unary_backward(g, a, [&](batch gy, batch x) { return gy * be * xsimd::pow(x, be1); });
}

// --- unary math ---

Tensor fast_exp(const Tensor& a) {
  return unary_kernel(a, [](batch x) { return xsimd::exp(x); });
}

Tensor fast_log(const Tensor& a) {
  return unary_kernel(a, [](batch x) { return xsimd::log(x); });
}

Tensor fast_sqrt(const Tensor& a) {
  return unary_kernel(a, [](batch x) { return xsimd::sqrt(x); });
}
Tensor fast_sqrt_backward(const Tensor& g, const Tensor& y) {
  return unary_backward(g, y, [](batch gy, batch s) { return gy / (batch(2.0f) * s); });
}

Tensor fast_rsqrt(const Tensor& a) {
  // 1/sqrt rather than xsimd::rsqrt, which is a low-precision approximation.
  return unary_kernel(a, [](batch x) { return batch(1.0f) / xsimd::sqrt(x); });
}
Tensor fast_rsqrt_backward(const Tensor& g, const Tensor& y) {
  return unary_backward(g, y, [](batch gy, batch r) { return gy * batch(-0.5f) * r * r * r; });
}

Tensor fast_tanh(const Tensor& a) {
  return unary_kernel(a, [](batch x) { return xsimd::tanh(x); });
}
Tensor fast_tanh_backward(const Tensor& g, const Tensor& y) {
  return unary_backward(g, y, [](batch gy, batch t) { return gy * (batch(1.0f) - t * t); });
}

Tensor fast_sigmoid(const Tensor& a) {
  return unary_kernel(a, [](batch x) { return batch(1.0f) / (batch(1.0f) + xsimd::exp(-x)); });
}
Tensor fast_sigmoid_backward(const Tensor& g, const Tensor& y) {
  return unary_backward(g, y, [](batch gy, batch s) { return gy * s * (batch(1.0f) - s); });
}

Tensor fast_relu(const Tensor& a) {
  // NaN stays NaN, as in PyTorch (a bare max would turn it into 0).
  return unary_kernel(
      a, [](batch x) { return xsimd::select(xsimd::isnan(x), x, xsimd::max(x, batch(0.0f))); });
}
Tensor fast_relu_backward(const Tensor& g, const Tensor& y) {
  return unary_backward(
      g, y, [](batch gy, batch r) { return xsimd::select(r > batch(0.0f), gy, batch(0.0f)); });
}

// The op has checked `approximate` (none or tanh) before it calls these.
Tensor fast_gelu(const Tensor& a, const std::string& approximate) {
  return approximate == "none" ? unary_kernel(a, gelu_math::gelu_erf)
                               : unary_kernel(a, gelu_math::gelu_tanh);
}
Tensor fast_gelu_backward(const Tensor& g, const Tensor& a, const std::string& approximate) {
  if (approximate == "none")
    return unary_backward(g, a, [](batch gy, batch x) { return gy * gelu_math::gelu_erf_grad(x); });
  return unary_backward(g, a, [](batch gy, batch x) { return gy * gelu_math::gelu_tanh_grad(x); });
}

Tensor fast_abs(const Tensor& a) {
  return unary_kernel(a, [](batch x) { return xsimd::abs(x); });
}
Tensor fast_abs_backward(const Tensor& g, const Tensor& a) {
  return unary_backward(g, a, [](batch gy, batch x) { return gy * sign(x); });
}

Tensor fast_masked_fill(const Tensor& a, const Tensor& m, float value) {
  const batch v(value);
  return binary_kernel("masked_fill", a, m,
                       [&](batch x, batch k) { return xsimd::select(k != batch(0.0f), v, x); });
}

}  // namespace

void register_elementwise_kernels() {
  using Unary = Tensor(const Tensor&);
  using Binary = Tensor(const Tensor&, const Tensor&);
  using UnaryBackward = Tensor(const Tensor& grad, const Tensor& saved);
  register_kernel<Binary>("add.Tensor", fast_add);
  register_kernel<Binary>("sub.Tensor", fast_sub);
  register_kernel<Binary>("mul.Tensor", fast_mul);
  register_kernel<Binary>("div.Tensor", fast_div);
  register_kernel<Tensor(const Tensor&, float)>("add.Scalar", fast_add_scalar);
  register_kernel<Tensor(const Tensor&, float)>("mul.Scalar", fast_mul_scalar);
  register_kernel<Tensor(const Tensor&, float)>("pow.Tensor_Scalar", fast_pow_scalar);
  register_kernel<Tensor(const Tensor&, const Tensor&, float)>("pow_backward", fast_pow_backward);
  register_kernel<Unary>("neg", fast_neg);
  register_kernel<Unary>("exp", fast_exp);
  register_kernel<Unary>("log", fast_log);
  register_kernel<Unary>("sqrt", fast_sqrt);
  register_kernel<UnaryBackward>("sqrt_backward", fast_sqrt_backward);
  register_kernel<Unary>("rsqrt", fast_rsqrt);
  register_kernel<UnaryBackward>("rsqrt_backward", fast_rsqrt_backward);
  register_kernel<Unary>("tanh", fast_tanh);
  register_kernel<UnaryBackward>("tanh_backward", fast_tanh_backward);
  register_kernel<Unary>("sigmoid", fast_sigmoid);
  register_kernel<UnaryBackward>("sigmoid_backward", fast_sigmoid_backward);
  register_kernel<Unary>("relu", fast_relu);
  register_kernel<UnaryBackward>("relu_backward", fast_relu_backward);
  register_kernel<Tensor(const Tensor&, const std::string&)>("gelu", fast_gelu);
  using GeluBackward = Tensor(const Tensor&, const Tensor&, const std::string&);
  register_kernel<GeluBackward>("gelu_backward", fast_gelu_backward);
  register_kernel<Unary>("abs", fast_abs);
  register_kernel<UnaryBackward>("abs_backward", fast_abs_backward);
  register_kernel<Tensor(const Tensor&, const Tensor&, float)>("masked_fill", fast_masked_fill);
}

}  // namespace anatomy
