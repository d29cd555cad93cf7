// Elementwise ops with NumPy/PyTorch broadcasting. Each op's backward sits right below its
// forward; the derivative is in the comment on the line that computes it. Broadcasting is undone
// by sum_to(), once, for every op.
#include <fmt/format.h>

#include <cmath>
#include <numbers>

#include "autograd/engine.hpp"
#include "autograd/gelu_math.hpp"
#include "autograd/ops.hpp"
#include "autograd/simd.hpp"
#include "autograd/strided.hpp"

namespace anatomy {

using simd::batch;

namespace {

void check_float(const char* op, const Tensor& t) {
  if (!t.defined()) throw Error(fmt::format("{}: got an undefined tensor", op));
  if (t.dtype() != Dtype::Float32)
    throw Error(
        fmt::format("{}: expected a float32 tensor but got int64 of shape {} (int64 "
                    "tensors hold ids for embedding, gather and cross_entropy)",
                    op, t.shape().str()));
}

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

}  // namespace

Tensor sum_to(const Tensor& grad, const Shape& shape) {
  if (grad.shape() == shape) return grad;
  const int64_t lead = grad.dim() - static_cast<int64_t>(shape.size());
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < grad.dim(); ++d)
    if (d < lead || (shape[d - lead] == 1 && grad.size(d) != 1)) dims.push_back(d);
  return reshape(sum(grad, dims, true), shape);
}

// --- arithmetic ---

Tensor add(const Tensor& a, const Tensor& b) {
  Tensor out = binary_kernel("add", a, b, [](batch x, batch y) { return x + y; });
  return record(out, "AddBackward0", {a, b},
                [sa = a.shape(), sb = b.shape()](const Tensor& g) -> std::vector<Tensor> {
                  return {sum_to(g, sa), sum_to(g, sb)};  // d(a+b)/da = d(a+b)/db = 1
                });
}

Tensor sub(const Tensor& a, const Tensor& b) {
  Tensor out = binary_kernel("sub", a, b, [](batch x, batch y) { return x - y; });
  return record(out, "SubBackward0", {a, b},
                [sa = a.shape(), sb = b.shape()](const Tensor& g) -> std::vector<Tensor> {
                  return {sum_to(g, sa), sum_to(neg(g), sb)};  // d/da = 1, d/db = -1
                });
}

Tensor mul(const Tensor& a, const Tensor& b) {
  Tensor out = binary_kernel("mul", a, b, [](batch x, batch y) { return x * y; });
  return record(out, "MulBackward0", {a, b}, [a, b](const Tensor& g) -> std::vector<Tensor> {
    Tensor ga = a.requires_grad() ? sum_to(mul(g, b), a.shape()) : Tensor();  // d/da = b
    Tensor gb = b.requires_grad() ? sum_to(mul(g, a), b.shape()) : Tensor();  // d/db = a
    return {ga, gb};
  });
}

Tensor div(const Tensor& a, const Tensor& b) {
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
static Tensor add_scalar(const Tensor& a, float s, const char* name) {
  const batch bs(s);
  Tensor out = unary_kernel("add", a, [&](batch x) { return x + bs; });
  return record(out, name, {a}, [](const Tensor& g) -> std::vector<Tensor> { return {g}; });
}

Tensor add(const Tensor& a, float s) { return add_scalar(a, s, "AddBackward0"); }

Tensor mul(const Tensor& a, float s) {
  const batch bs(s);
  Tensor out = unary_kernel("mul", a, [&](batch x) { return x * bs; });
  return record(out, "MulBackward0", {a},
                [s](const Tensor& g) -> std::vector<Tensor> { return {mul(g, s)}; });
}

Tensor rsub(float s, const Tensor& a) {
  const batch bs(s);
  Tensor out = unary_kernel("rsub", a, [&](batch x) { return bs - x; });
  return record(out, "RsubBackward1", {a},
                [](const Tensor& g) -> std::vector<Tensor> { return {neg(g)}; });
}

Tensor rdiv(float s, const Tensor& a) {
  const batch bs(s);
  Tensor out = unary_kernel("div", a, [&](batch x) { return bs / x; });
  // PyTorch computes s / x as s * x.reciprocal(), so its node is MulBackward0.
  return record(out, "MulBackward0", {a},
                [a, y = out.detach()](const Tensor& g) -> std::vector<Tensor> {
                  return {unary_backward(mul(g, y), a, [](batch gy, batch x) {
                    return -gy / x;  // d(s/x)/dx = -s/x² = -y/x
                  })};
                });
}

Tensor neg(const Tensor& a) {
  Tensor out = unary_kernel("neg", a, [](batch x) { return -x; });
  return record(out, "NegBackward0", {a},
                [](const Tensor& g) -> std::vector<Tensor> { return {neg(g)}; });
}

Tensor pow(const Tensor& a, float e) {
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

Tensor pow(const Tensor& a, const Tensor& b) {
  Tensor out = binary_kernel("pow", a, b, [](batch x, batch y) { return xsimd::pow(x, y); });
  return record(out, "PowBackward1", {a, b},
                [a, b, y = out.detach()](const Tensor& g) -> std::vector<Tensor> {
                  Tensor ga, gb;
                  if (a.requires_grad())  // d(a^b)/da = b a^(b-1)
                    ga = sum_to(mul(g, mul(b, pow(a, sub(b, ones({}))))), a.shape());
                  if (b.requires_grad()) {
                    // d(a^b)/db = a^b log(a); 0 where a == 0 and b >= 0, as PyTorch defines it.
                    Tensor d = mul(y, log(a));
                    d = where(mul(eq(a, 0.0f), ge(b, zeros({}))), zeros({}), d);
                    gb = sum_to(mul(g, d), b.shape());
                  }
                  return {ga, gb};
                });
}

// --- unary math ---

Tensor exp(const Tensor& a) {
  Tensor out = unary_kernel("exp", a, [](batch x) { return xsimd::exp(x); });
  return record(out, "ExpBackward0", {a}, [y = out.detach()](const Tensor& g) {
    return std::vector<Tensor>{mul(g, y)};  // d(e^x)/dx = e^x
  });
}

Tensor log(const Tensor& a) {
  Tensor out = unary_kernel("log", a, [](batch x) { return xsimd::log(x); });
  return record(out, "LogBackward0", {a}, [a](const Tensor& g) {
    return std::vector<Tensor>{div(g, a)};  // d(log x)/dx = 1/x
  });
}

Tensor sqrt(const Tensor& a) {
  Tensor out = unary_kernel("sqrt", a, [](batch x) { return xsimd::sqrt(x); });
  return record(out, "SqrtBackward0", {a}, [y = out.detach()](const Tensor& g) {
    return std::vector<Tensor>{unary_backward(g, y, [](batch gy, batch s) {
      return gy / (batch(2.0f) * s);  // d(√x)/dx = 1 / (2√x)
    })};
  });
}

Tensor rsqrt(const Tensor& a) {
  // 1/sqrt rather than xsimd::rsqrt, which is a low-precision approximation.
  Tensor out = unary_kernel("rsqrt", a, [](batch x) { return batch(1.0f) / xsimd::sqrt(x); });
  return record(out, "RsqrtBackward0", {a}, [y = out.detach()](const Tensor& g) {
    return std::vector<Tensor>{unary_backward(g, y, [](batch gy, batch r) {
      return gy * batch(-0.5f) * r * r * r;  // d(x^-1/2)/dx = -x^(-3/2)/2
    })};
  });
}

Tensor tanh(const Tensor& a) {
  Tensor out = unary_kernel("tanh", a, [](batch x) { return xsimd::tanh(x); });
  return record(out, "TanhBackward0", {a}, [y = out.detach()](const Tensor& g) {
    return std::vector<Tensor>{unary_backward(g, y, [](batch gy, batch t) {
      return gy * (batch(1.0f) - t * t);  // d(tanh x)/dx = 1 - tanh²x
    })};
  });
}

Tensor sigmoid(const Tensor& a) {
  Tensor out = unary_kernel("sigmoid", a,
                            [](batch x) { return batch(1.0f) / (batch(1.0f) + xsimd::exp(-x)); });
  return record(out, "SigmoidBackward0", {a}, [y = out.detach()](const Tensor& g) {
    return std::vector<Tensor>{unary_backward(g, y, [](batch gy, batch s) {
      return gy * s * (batch(1.0f) - s);  // dσ/dx = σ(1 - σ)
    })};
  });
}

Tensor relu(const Tensor& a) {
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

Tensor gelu(const Tensor& a, const std::string& approximate) {
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

Tensor abs(const Tensor& a) {
  Tensor out = unary_kernel("abs", a, [](batch x) { return xsimd::abs(x); });
  return record(out, "AbsBackward0", {a}, [a](const Tensor& g) {
    return std::vector<Tensor>{
        unary_backward(g, a, [](batch gy, batch x) { return gy * sign(x); })};  // sign(x)
  });
}

Tensor clamp(const Tensor& a, std::optional<float> min, std::optional<float> max) {
  if (!min && !max) throw Error("clamp: At least one of 'min' or 'max' must not be None");
  const batch lo(min.value_or(-std::numeric_limits<float>::infinity()));
  const batch hi(max.value_or(std::numeric_limits<float>::infinity()));
  Tensor out = unary_kernel("clamp", a, [&](batch x) {
    return xsimd::select(xsimd::isnan(x), x, xsimd::min(xsimd::max(x, lo), hi));
  });
  return record(out, "ClampBackward1", {a}, [a, lo, hi](const Tensor& g) {
    return std::vector<Tensor>{unary_backward(g, a, [&](batch gy, batch x) {
      return xsimd::select((x >= lo) && (x <= hi), gy, batch(0.0f));  // 1 inside [min, max]
    })};
  });
}

// PyTorch's rule for maximum/minimum: the gradient goes to the larger (smaller) input and is
// split in half between the two where they are equal.
static Tensor pick_backward(const Tensor& g, const Tensor& mine, const Tensor& other, bool larger) {
  Tensor win = larger ? gt(mine, other) : lt(mine, other);
  Tensor tie = eq(mine, other);
  return sum_to(mul(g, add(win, mul(tie, 0.5f))), mine.shape());
}

Tensor maximum(const Tensor& a, const Tensor& b) {
  Tensor out = binary_kernel("maximum", a, b, simd::extremum<true>);  // NaN propagates
  return record(out, "MaximumBackward0", {a, b}, [a, b](const Tensor& g) {
    return std::vector<Tensor>{a.requires_grad() ? pick_backward(g, a, b, true) : Tensor(),
                               b.requires_grad() ? pick_backward(g, b, a, true) : Tensor()};
  });
}

Tensor minimum(const Tensor& a, const Tensor& b) {
  Tensor out = binary_kernel("minimum", a, b, simd::extremum<false>);
  return record(out, "MinimumBackward0", {a, b}, [a, b](const Tensor& g) {
    return std::vector<Tensor>{a.requires_grad() ? pick_backward(g, a, b, false) : Tensor(),
                               b.requires_grad() ? pick_backward(g, b, a, false) : Tensor()};
  });
}

// --- comparisons: masks without gradient ---

#define ANATOMY_COMPARISON(NAME, OP)                          \
  Tensor NAME(const Tensor& a, const Tensor& b) {             \
    return binary_kernel(#NAME, a, b, [](batch x, batch y) {  \
      return xsimd::select(x OP y, batch(1.0f), batch(0.0f)); \
    });                                                       \
  }
ANATOMY_COMPARISON(eq, ==)
ANATOMY_COMPARISON(ne, !=)
ANATOMY_COMPARISON(lt, <)
ANATOMY_COMPARISON(le, <=)
ANATOMY_COMPARISON(gt, >)
ANATOMY_COMPARISON(ge, >=)
#undef ANATOMY_COMPARISON

static Tensor scalar_like(float v) { return full({}, v); }
Tensor eq(const Tensor& a, float b) { return eq(a.to(kFloat32), scalar_like(b)); }
Tensor ne(const Tensor& a, float b) { return ne(a.to(kFloat32), scalar_like(b)); }
Tensor lt(const Tensor& a, float b) { return lt(a.to(kFloat32), scalar_like(b)); }
Tensor gt(const Tensor& a, float b) { return gt(a.to(kFloat32), scalar_like(b)); }

// --- selection ---

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  Tensor c = cond.to(kFloat32);
  check_float("where", a);
  check_float("where", b);
  const Shape shape =
      broadcast_shapes("where", broadcast_shapes("where", c.shape(), a.shape()), b.shape());
  Tensor out = empty(shape);
  // Expanded contiguous copies keep this kernel simple; where() is not on a hot path.
  Tensor ce = expand(c, shape).contiguous(), ae = expand(a.detach(), shape).contiguous(),
         be = expand(b.detach(), shape).contiguous();
  simd::map3(ce.data(), 1, ae.data(), 1, be.data(), 1, out.data(), out.numel(),
             [](batch m, batch x, batch y) { return xsimd::select(m != batch(0.0f), x, y); });
  return record(out, "WhereBackward0", {a, b}, [c, a, b](const Tensor& g) {
    Tensor z = zeros({});
    return std::vector<Tensor>{a.requires_grad() ? sum_to(where(c, g, z), a.shape()) : Tensor(),
                               b.requires_grad() ? sum_to(where(c, z, g), b.shape()) : Tensor()};
  });
}

Tensor masked_fill(const Tensor& a, const Tensor& mask, float value) {
  check_float("masked_fill", a);
  Tensor m = mask.to(kFloat32);
  if (broadcast_shapes("masked_fill", a.shape(), m.shape()) != a.shape())
    throw Error(
        fmt::format("masked_fill: the mask of shape {} must broadcast to the input's "
                    "shape {}",
                    m.shape().str(), a.shape().str()));
  const batch v(value);
  Tensor out = binary_kernel(
      "masked_fill", a, m, [&](batch x, batch k) { return xsimd::select(k != batch(0.0f), v, x); });
  return record(out, "MaskedFillBackward0", {a}, [m](const Tensor& g) {
    return std::vector<Tensor>{where(m, zeros({}), g)};  // 0 where filled, 1 elsewhere
  });
}

Tensor tril(const Tensor& t, int64_t diagonal);
Tensor triu(const Tensor& t, int64_t diagonal);

// Keeps element (i, j) of each matrix where keep(j - i) holds.
template <typename Keep>
static Tensor triangle(const char* op, const char* node, const Tensor& t, int64_t diagonal,
                       Keep keep) {
  if (t.dim() < 2)
    throw Error(fmt::format("{}: input tensor must have at least 2 dimensions (got shape {})", op,
                            t.shape().str()));
  Tensor out = t.contiguous().clone().detach();
  const int64_t rows = t.size(-2), cols = t.size(-1);
  const int64_t mats = rows * cols == 0 ? 0 : t.numel() / (rows * cols);
  const bool is_float = t.dtype() == Dtype::Float32;
  for (int64_t m = 0; m < mats; ++m)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        if (!keep(j - i - diagonal)) {
          const int64_t k = (m * rows + i) * cols + j;
          if (is_float)
            out.data()[k] = 0.0f;
          else
            out.data_ptr<int64_t>()[k] = 0;
        }
  return record(out, node, {t}, [op, diagonal](const Tensor& g) {
    return std::vector<Tensor>{std::string(op) == "tril" ? tril(g, diagonal) : triu(g, diagonal)};
  });
}

Tensor tril(const Tensor& t, int64_t diagonal) {
  return triangle("tril", "TrilBackward0", t, diagonal, [](int64_t d) { return d <= 0; });
}
Tensor triu(const Tensor& t, int64_t diagonal) {
  return triangle("triu", "TriuBackward0", t, diagonal, [](int64_t d) { return d >= 0; });
}

// --- operators ---

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator-(const Tensor& a) { return neg(a); }
Tensor operator+(const Tensor& a, float b) { return add(a, b); }
Tensor operator+(float a, const Tensor& b) { return add(b, a); }
Tensor operator-(const Tensor& a, float b) { return add_scalar(a, -b, "SubBackward0"); }
Tensor operator-(float a, const Tensor& b) { return rsub(a, b); }
Tensor operator*(const Tensor& a, float b) { return mul(a, b); }
Tensor operator*(float a, const Tensor& b) { return mul(b, a); }
Tensor operator/(const Tensor& a, float b) { return div(a, full({}, b)); }
Tensor operator/(float a, const Tensor& b) { return rdiv(a, b); }

}  // namespace anatomy
