// The elementwise ops on SIMD vectors, split between threads: fast kernels of the ops in
// autograd/elementwise.cpp, which they must equal. A kernel is written once as a lambda over
// xsimd::batch<float> (simd.hpp); the core's op has checked the arguments before it hands over.
#include <fmt/format.h>

#include <cmath>
#include <numbers>

#include "autograd/dispatch.hpp"
#include "autograd/engine.hpp"
#include "autograd/ops.hpp"
#include "autograd/strided.hpp"
#include "kernels/gelu_math.hpp"
#include "kernels/simd.hpp"

namespace anatomy {

using simd::batch;

namespace {

// out = f(a) elementwise, on a contiguous copy of a when a is a view.
template <typename F>
Tensor unary_kernel(const char* op, const Tensor& a, F f) {
  check_float(op, a);
  Tensor x = a.contiguous();
  Tensor out = empty(a.shape());
  simd::map(x.data(), out.data(), x.numel(), f);
  return out;
}

// out = f(a, b) with broadcasting. Runs whose strides are 0 or 1 go straight to SIMD; other
// strides (a transposed view) are gathered into a small buffer first.
template <typename F>
Tensor binary_kernel(const char* op, const Tensor& a, const Tensor& b, F f) {
  check_float(op, a);
  check_float(op, b);
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
  Tensor out = binary_kernel("add", a, b, [](batch x, batch y) { return x + y; });
  return record(out, "AddBackward0", {a, b},
                [sa = a.shape(), sb = b.shape()](const Tensor& g) -> std::vector<Tensor> {
                  return {sum_to(g, sa), sum_to(g, sb)};  // d(a+b)/da = d(a+b)/db = 1
                });
}

Tensor fast_sub(const Tensor& a, const Tensor& b) {
  Tensor out = binary_kernel("sub", a, b, [](batch x, batch y) { return x - y; });
  return record(out, "SubBackward0", {a, b},
                [sa = a.shape(), sb = b.shape()](const Tensor& g) -> std::vector<Tensor> {
                  return {sum_to(g, sa), sum_to(neg(g), sb)};  // d/da = 1, d/db = -1
                });
}

Tensor fast_mul(const Tensor& a, const Tensor& b) {
  Tensor out = binary_kernel("mul", a, b, [](batch x, batch y) { return x * y; });
  return record(out, "MulBackward0", {a, b}, [a, b](const Tensor& g) -> std::vector<Tensor> {
    Tensor ga = a.requires_grad() ? sum_to(mul(g, b), a.shape()) : Tensor();  // d/da = b
    Tensor gb = b.requires_grad() ? sum_to(mul(g, a), b.shape()) : Tensor();  // d/db = a
    return {ga, gb};
  });
}

Tensor fast_div(const Tensor& a, const Tensor& b) {
  Tensor out = binary_kernel("div", a, b, [](batch x, batch y) { return x / y; });
  return record(out, "DivBackward0", {a, b},
                [a, b, y = out.detach()](const Tensor& g) -> std::vector<Tensor> {
                  Tensor ga = a.requires_grad() ? sum_to(div(g, b), a.shape()) : Tensor();
                  // d(a/b)/db = -a/b² = -y/b
                  Tensor gb =
                      b.requires_grad() ? sum_to(neg(div(mul(g, y), b)), b.shape()) : Tensor();
                  return {ga, gb};
                });
}

// x + s and x - s: PyTorch names the node after the Python operator (AddBackward0, SubBackward0).
Tensor fast_add_scalar(const Tensor& a, float s, const char* name) {
  const batch bs(s);
  Tensor out = unary_kernel("add", a, [&](batch x) { return x + bs; });
  return record(out, name, {a}, [](const Tensor& g) -> std::vector<Tensor> { return {g}; });
}

Tensor fast_mul_scalar(const Tensor& a, float s) {
  const batch bs(s);
  Tensor out = unary_kernel("mul", a, [&](batch x) { return x * bs; });
  return record(out, "MulBackward0", {a},
                [s](const Tensor& g) -> std::vector<Tensor> { return {mul(g, s)}; });
}

Tensor fast_neg(const Tensor& a) {
  Tensor out = unary_kernel("neg", a, [](batch x) { return -x; });
  return record(out, "NegBackward0", {a},
                [](const Tensor& g) -> std::vector<Tensor> { return {neg(g)}; });
}

Tensor fast_pow_scalar(const Tensor& a, float e) {
  const batch be(e);
  // Exact forms for the common exponents; xsimd::pow is exp(e log|x|), a little less precise.
  Tensor out = e == 2.0f   ? unary_kernel("pow", a, [](batch x) { return x * x; })
               : e == 1.0f ? unary_kernel("pow", a, [](batch x) { return x; })
               : e == 0.0f ? unary_kernel("pow", a, [](batch) { return batch(1.0f); })
               : e == 0.5f ? unary_kernel("pow", a, [](batch x) { return xsimd::sqrt(x); })
                           : unary_kernel("pow", a, [&](batch x) { return xsimd::pow(x, be); });
  return record(out, "PowBackward0", {a}, [a, e](const Tensor& g) -> std::vector<Tensor> {
    if (e == 0.0f) return {zeros_like(a)};
    const batch be(e), be1(e - 1.0f);
    if (e == 2.0f)
      return {unary_backward(g, a, [](batch gy, batch x) { return gy * batch(2.0f) * x; })};
    return {unary_backward(g, a, [&](batch gy, batch x) {
      return gy * be * xsimd::pow(x, be1);  // d(x^e)/dx = e x^(e-1)
    })};
  });
}

// --- unary math ---

Tensor fast_exp(const Tensor& a) {
  Tensor out = unary_kernel("exp", a, [](batch x) { return xsimd::exp(x); });
  return record(out, "ExpBackward0", {a}, [y = out.detach()](const Tensor& g) {
    return std::vector<Tensor>{mul(g, y)};  // d(e^x)/dx = e^x
  });
}

Tensor fast_log(const Tensor& a) {
  Tensor out = unary_kernel("log", a, [](batch x) { return xsimd::log(x); });
  return record(out, "LogBackward0", {a}, [a](const Tensor& g) {
    return std::vector<Tensor>{div(g, a)};  // d(log x)/dx = 1/x
  });
}

Tensor fast_sqrt(const Tensor& a) {
  Tensor out = unary_kernel("sqrt", a, [](batch x) { return xsimd::sqrt(x); });
  return record(out, "SqrtBackward0", {a}, [y = out.detach()](const Tensor& g) {
    return std::vector<Tensor>{unary_backward(g, y, [](batch gy, batch s) {
      return gy / (batch(2.0f) * s);  // d(√x)/dx = 1 / (2√x)
    })};
  });
}

Tensor fast_rsqrt(const Tensor& a) {
  // 1/sqrt rather than xsimd::rsqrt, which is a low-precision approximation.
  Tensor out = unary_kernel("rsqrt", a, [](batch x) { return batch(1.0f) / xsimd::sqrt(x); });
  return record(out, "RsqrtBackward0", {a}, [y = out.detach()](const Tensor& g) {
    return std::vector<Tensor>{unary_backward(g, y, [](batch gy, batch r) {
      return gy * batch(-0.5f) * r * r * r;  // d(x^-1/2)/dx = -x^(-3/2)/2
    })};
  });
}

Tensor fast_tanh(const Tensor& a) {
  Tensor out = unary_kernel("tanh", a, [](batch x) { return xsimd::tanh(x); });
  return record(out, "TanhBackward0", {a}, [y = out.detach()](const Tensor& g) {
    return std::vector<Tensor>{unary_backward(g, y, [](batch gy, batch t) {
      return gy * (batch(1.0f) - t * t);  // d(tanh x)/dx = 1 - tanh²x
    })};
  });
}

Tensor fast_sigmoid(const Tensor& a) {
  Tensor out = unary_kernel("sigmoid", a,
                            [](batch x) { return batch(1.0f) / (batch(1.0f) + xsimd::exp(-x)); });
  return record(out, "SigmoidBackward0", {a}, [y = out.detach()](const Tensor& g) {
    return std::vector<Tensor>{unary_backward(g, y, [](batch gy, batch s) {
      return gy * s * (batch(1.0f) - s);  // dσ/dx = σ(1 - σ)
    })};
  });
}

Tensor fast_relu(const Tensor& a) {
  // NaN stays NaN, as in PyTorch (a bare max would turn it into 0).
  Tensor out = unary_kernel("relu", a, [](batch x) {
    return xsimd::select(xsimd::isnan(x), x, xsimd::max(x, batch(0.0f)));
  });
  return record(out, "ReluBackward0", {a}, [y = out.detach()](const Tensor& g) {
    return std::vector<Tensor>{unary_backward(g, y, [](batch gy, batch r) {
      return xsimd::select(r > batch(0.0f), gy, batch(0.0f));  // 1 where x > 0
    })};
  });
}

Tensor fast_gelu(const Tensor& a, const std::string& approximate) {
  if (approximate == "none") {
    Tensor out = unary_kernel("gelu", a, gelu_math::gelu_erf);
    return record(out, "GeluBackward0", {a}, [a](const Tensor& g) {
      return std::vector<Tensor>{
          unary_backward(g, a, [](batch gy, batch x) { return gy * gelu_math::gelu_erf_grad(x); })};
    });
  }
  if (approximate == "tanh") {
    Tensor out = unary_kernel("gelu", a, gelu_math::gelu_tanh);
    return record(out, "GeluBackward0", {a}, [a](const Tensor& g) {
      return std::vector<Tensor>{unary_backward(
          g, a, [](batch gy, batch x) { return gy * gelu_math::gelu_tanh_grad(x); })};
    });
  }
  throw Error(fmt::format("gelu: approximate argument must be either none or tanh (got '{}')",
                          approximate));
}

Tensor fast_abs(const Tensor& a) {
  Tensor out = unary_kernel("abs", a, [](batch x) { return xsimd::abs(x); });
  return record(out, "AbsBackward0", {a}, [a](const Tensor& g) {
    return std::vector<Tensor>{
        unary_backward(g, a, [](batch gy, batch x) { return gy * sign(x); })};  // sign(x)
  });
}

Tensor fast_masked_fill(const Tensor& a, const Tensor& m, float value) {
  const batch v(value);
  Tensor out = binary_kernel(
      "masked_fill", a, m, [&](batch x, batch k) { return xsimd::select(k != batch(0.0f), v, x); });
  return record(out, "MaskedFillBackward0", {a}, [m](const Tensor& g) {
    return std::vector<Tensor>{where(m, zeros({}), g)};  // 0 where filled, 1 elsewhere
  });
}

}  // namespace

void register_elementwise_kernels() {
  using Unary = Tensor(const Tensor&);
  using Binary = Tensor(const Tensor&, const Tensor&);
  register_kernel<Binary>("add.Tensor", fast_add);
  register_kernel<Binary>("sub.Tensor", fast_sub);
  register_kernel<Binary>("mul.Tensor", fast_mul);
  register_kernel<Binary>("div.Tensor", fast_div);
  register_kernel<Tensor(const Tensor&, float, const char*)>("add.Scalar", fast_add_scalar);
  register_kernel<Tensor(const Tensor&, float)>("mul.Scalar", fast_mul_scalar);
  register_kernel<Tensor(const Tensor&, float)>("pow.Tensor_Scalar", fast_pow_scalar);
  register_kernel<Unary>("neg", fast_neg);
  register_kernel<Unary>("exp", fast_exp);
  register_kernel<Unary>("log", fast_log);
  register_kernel<Unary>("sqrt", fast_sqrt);
  register_kernel<Unary>("rsqrt", fast_rsqrt);
  register_kernel<Unary>("tanh", fast_tanh);
  register_kernel<Unary>("sigmoid", fast_sigmoid);
  register_kernel<Unary>("relu", fast_relu);
  register_kernel<Tensor(const Tensor&, const std::string&)>("gelu", fast_gelu);
  register_kernel<Unary>("abs", fast_abs);
  register_kernel<Tensor(const Tensor&, const Tensor&, float)>("masked_fill", fast_masked_fill);
}

}  // namespace anatomy
