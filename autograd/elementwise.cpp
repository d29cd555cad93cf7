// Elementwise ops with NumPy/PyTorch broadcasting. Each op's backward sits right below its
// forward; the derivative is in the comment on the line that computes it. Broadcasting is undone
// by sum_to(), once, for every op.
//
// Every op checks its arguments, computes its values and records its node; the values, and a
// gradient that is a loop of its own, come from a fast kernel when one is chosen (dispatch.hpp).
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <numbers>

#include "autograd/dispatch.hpp"
#include "autograd/engine.hpp"
#include "autograd/ops.hpp"

namespace anatomy {

namespace {

using Unary = Tensor(const Tensor&);
using Binary = Tensor(const Tensor&, const Tensor&);

// out[i] = f(a[i]).
template <typename F>
Tensor map(const Tensor& a, F f) {
  Tensor x = a.contiguous(), out = empty(a.shape());
  const float* px = x.data();
  float* po = out.data();
  for (int64_t i = 0; i < out.numel(); ++i) po[i] = f(px[i]);
  return out;
}

// The same values from the fast kernel registered as `kernel`, when fast kernels are chosen.
template <typename F>
Tensor map(const char* kernel, const Tensor& a, F f) {
  if (auto fast = fast_kernel<Unary>(kernel)) return fast(a);
  return map(a, f);
}

// out[i] = f(a[i], b[i]) after broadcasting a and b to a common shape.
template <typename F>
Tensor map2(const char* op, const Tensor& a, const Tensor& b, F f) {
  const Shape shape = broadcast_shapes(op, a.shape(), b.shape());
  Tensor x = expand(a.detach(), shape).contiguous();
  Tensor y = expand(b.detach(), shape).contiguous();
  Tensor out = empty(shape);
  const float* px = x.data();
  const float* py = y.data();
  float* po = out.data();
  for (int64_t i = 0; i < out.numel(); ++i) po[i] = f(px[i], py[i]);
  return out;
}

// A unary op's input gradient: dx[i] = f(g[i], v[i]), where v is the saved input or output (of
// g's shape). Plain arithmetic, not ops: the backward of one op is one node's work.
template <typename F>
Tensor grad_map(const Tensor& g, const Tensor& v, F f) {
  Tensor gc = g.contiguous(), vc = v.contiguous();
  Tensor dx = empty(g.shape());
  for (int64_t i = 0; i < dx.numel(); ++i) dx.data()[i] = f(gc.data()[i], vc.data()[i]);
  return dx;
}
// The same gradient from the fast kernel registered as `kernel`, when fast kernels are chosen.
template <typename F>
Tensor grad_map(const char* kernel, const Tensor& g, const Tensor& v, F f) {
  if (auto fast = fast_kernel<Binary>(kernel)) return fast(g, v);  // (grad, saved)
  return grad_map(g, v, f);
}

float sign(float x) { return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : 0.0f; }

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
  check_float("add", a), check_float("add", b);
  auto fast = fast_kernel<Binary>("add.Tensor");
  Tensor out = fast ? fast(a, b) : map2("add", a, b, [](float x, float y) { return x + y; });
  return record(out, "AddBackward0", {a, b},
                [sa = a.shape(), sb = b.shape()](const Tensor& g) -> std::vector<Tensor> {
                  return {sum_to(g, sa), sum_to(g, sb)};  // d(a+b)/da = d(a+b)/db = 1
                });
}

Tensor sub(const Tensor& a, const Tensor& b) {
  check_float("sub", a), check_float("sub", b);
  auto fast = fast_kernel<Binary>("sub.Tensor");
  Tensor out = fast ? fast(a, b) : map2("sub", a, b, [](float x, float y) { return x - y; });
  return record(out, "SubBackward0", {a, b},
                [sa = a.shape(), sb = b.shape()](const Tensor& g) -> std::vector<Tensor> {
                  return {sum_to(g, sa), sum_to(neg(g), sb)};  // d/da = 1, d/db = -1
                });
}

Tensor mul(const Tensor& a, const Tensor& b) {
  check_float("mul", a), check_float("mul", b);
  auto fast = fast_kernel<Binary>("mul.Tensor");
  Tensor out = fast ? fast(a, b) : map2("mul", a, b, [](float x, float y) { return x * y; });
  return record(out, "MulBackward0", {a, b}, [a, b](const Tensor& g) -> std::vector<Tensor> {
    Tensor ga = a.requires_grad() ? sum_to(mul(g, b), a.shape()) : Tensor();  // d/da = b
    Tensor gb = b.requires_grad() ? sum_to(mul(g, a), b.shape()) : Tensor();  // d/db = a
    return {ga, gb};
  });
}

Tensor div(const Tensor& a, const Tensor& b) {
  check_float("div", a), check_float("div", b);
  auto fast = fast_kernel<Binary>("div.Tensor");
  Tensor out = fast ? fast(a, b) : map2("div", a, b, [](float x, float y) { return x / y; });
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
static Tensor add_scalar(const Tensor& a, float s, const char* node) {
  check_float("add", a);
  auto fast = fast_kernel<Tensor(const Tensor&, float)>("add.Scalar");
  Tensor out = fast ? fast(a, s) : map(a, [s](float x) { return x + s; });
  return record(out, node, {a}, [](const Tensor& g) -> std::vector<Tensor> { return {g}; });
}

Tensor add(const Tensor& a, float s) { return add_scalar(a, s, "AddBackward0"); }

Tensor mul(const Tensor& a, float s) {
  check_float("mul", a);
  auto fast = fast_kernel<Tensor(const Tensor&, float)>("mul.Scalar");
  Tensor out = fast ? fast(a, s) : map(a, [s](float x) { return x * s; });
  return record(out, "MulBackward0", {a},
                [s](const Tensor& g) -> std::vector<Tensor> { return {mul(g, s)}; });
}

Tensor rsub(float s, const Tensor& a) {
  check_float("rsub", a);
  Tensor out = map(a, [s](float x) { return s - x; });
  return record(out, "RsubBackward1", {a},
                [](const Tensor& g) -> std::vector<Tensor> { return {neg(g)}; });
}

Tensor rdiv(float s, const Tensor& a) {
  check_float("div", a);
  Tensor out = map(a, [s](float x) { return s / x; });
  // PyTorch computes s / x as s * x.reciprocal(), so its node is MulBackward0.
  return record(out, "MulBackward0", {a}, [a, y = out.detach()](const Tensor& g) {
    Tensor gy = grad_map(g, y, [](float gv, float yv) { return gv * yv; });
    return std::vector<Tensor>{
        grad_map(gy, a, [](float v, float x) { return -v / x; })};  // d(s/x)/dx = -s/x² = -y/x
  });
}

Tensor neg(const Tensor& a) {
  check_float("neg", a);
  Tensor out = map("neg", a, [](float x) { return -x; });
  return record(out, "NegBackward0", {a},
                [](const Tensor& g) -> std::vector<Tensor> { return {neg(g)}; });
}

Tensor pow(const Tensor& a, float e) {
  check_float("pow", a);
  auto fast = fast_kernel<Tensor(const Tensor&, float)>("pow.Tensor_Scalar");
  Tensor out =
      fast ? fast(a, e) : map(a, [e](float x) { return e == 2.0f ? x * x : std::pow(x, e); });
  return record(out, "PowBackward0", {a}, [a, e](const Tensor& g) -> std::vector<Tensor> {
    if (e == 0.0f) return {zeros_like(a)};
    if (auto fast = fast_kernel<Tensor(const Tensor&, const Tensor&, float)>("pow_backward"))
      return {fast(g, a, e)};
    return {grad_map(g, a, [e](float gy, float x) {
      return gy * e * std::pow(x, e - 1.0f);  // d(x^e)/dx = e x^(e-1)
    })};
  });
}

Tensor pow(const Tensor& a, const Tensor& b) {
  check_float("pow", a), check_float("pow", b);
  Tensor out = map2("pow", a, b, [](float x, float y) { return std::pow(x, y); });
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
  check_float("exp", a);
  Tensor out = map("exp", a, [](float x) { return std::exp(x); });
  return record(out, "ExpBackward0", {a}, [y = out.detach()](const Tensor& g) {
    return std::vector<Tensor>{mul(g, y)};  // d(e^x)/dx = e^x
  });
}

Tensor log(const Tensor& a) {
  check_float("log", a);
  Tensor out = map("log", a, [](float x) { return std::log(x); });
  return record(out, "LogBackward0", {a}, [a](const Tensor& g) {
    return std::vector<Tensor>{div(g, a)};  // d(log x)/dx = 1/x
  });
}

Tensor sqrt(const Tensor& a) {
  check_float("sqrt", a);
  Tensor out = map("sqrt", a, [](float x) { return std::sqrt(x); });
  return record(out, "SqrtBackward0", {a}, [y = out.detach()](const Tensor& g) {
    return std::vector<Tensor>{grad_map("sqrt_backward", g, y, [](float gy, float s) {
      return gy / (2.0f * s);  // d(√x)/dx = 1 / (2√x)
    })};
  });
}

Tensor rsqrt(const Tensor& a) {
  check_float("rsqrt", a);
  Tensor out = map("rsqrt", a, [](float x) { return 1.0f / std::sqrt(x); });
  return record(out, "RsqrtBackward0", {a}, [y = out.detach()](const Tensor& g) {
    return std::vector<Tensor>{grad_map("rsqrt_backward", g, y, [](float gy, float r) {
      return gy * -0.5f * r * r * r;  // d(x^-1/2)/dx = -x^(-3/2)/2
    })};
  });
}

Tensor tanh(const Tensor& a) {
  check_float("tanh", a);
  Tensor out = map("tanh", a, [](float x) { return std::tanh(x); });
  return record(out, "TanhBackward0", {a}, [y = out.detach()](const Tensor& g) {
    return std::vector<Tensor>{grad_map("tanh_backward", g, y, [](float gy, float t) {
      return gy * (1.0f - t * t);  // d(tanh x)/dx = 1 - tanh²x
    })};
  });
}

Tensor sigmoid(const Tensor& a) {
  check_float("sigmoid", a);
  Tensor out = map("sigmoid", a, [](float x) { return 1.0f / (1.0f + std::exp(-x)); });
  return record(out, "SigmoidBackward0", {a}, [y = out.detach()](const Tensor& g) {
    return std::vector<Tensor>{grad_map("sigmoid_backward", g, y, [](float gy, float s) {
      return gy * s * (1.0f - s);  // dσ/dx = σ(1 - σ)
    })};
  });
}

Tensor relu(const Tensor& a) {
  check_float("relu", a);
  // NaN stays NaN, as in PyTorch (a bare max would turn it into 0).
  Tensor out = map("relu", a, [](float x) { return std::isnan(x) || x > 0.0f ? x : 0.0f; });
  return record(out, "ReluBackward0", {a}, [y = out.detach()](const Tensor& g) {
    return std::vector<Tensor>{grad_map("relu_backward", g, y, [](float gy, float r) {
      return r > 0.0f ? gy : 0.0f;  // 1 where x > 0
    })};
  });
}

namespace {

// x Φ(x), with Φ the standard normal's cumulative distribution.
float gelu_erf(float x) {
  return 0.5f * x * (1.0f + std::erf(x * std::numbers::sqrt2_v<float> / 2));
}
// d(x Φ(x))/dx = Φ(x) + x φ(x)
float gelu_erf_grad(float x) {
  const float cdf = 0.5f * (1.0f + std::erf(x * std::numbers::sqrt2_v<float> / 2));
  const float pdf =
      std::exp(-0.5f * x * x) * std::numbers::inv_sqrtpi_v<float> / std::numbers::sqrt2_v<float>;
  return cdf + x * pdf;
}
// ½ x (1 + tanh(k(x + c x³))), k = √(2/π): the "tanh" approximation (GPT-2's gelu_new).
constexpr float kSqrt2OverPi = 0.79788456080286536f, kCoeff = 0.044715f;
float gelu_tanh(float x) {
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * (x + kCoeff * x * x * x)));
}
// u = k(x + c x³): d/dx = ½(1 + tanh u) + ½ x (1 - tanh²u) k (1 + 3c x²)
float gelu_tanh_grad(float x) {
  const float t = std::tanh(kSqrt2OverPi * (x + kCoeff * x * x * x));
  const float du = kSqrt2OverPi * (1.0f + 3.0f * kCoeff * x * x);
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du;
}

}  // namespace

Tensor gelu(const Tensor& a, const std::string& approximate) {
  check_float("gelu", a);
  if (approximate != "none" && approximate != "tanh")
    throw Error(fmt::format("gelu: approximate argument must be either none or tanh (got '{}')",
                            approximate));
  auto fast = fast_kernel<Tensor(const Tensor&, const std::string&)>("gelu");
  const bool erf = approximate == "none";
  Tensor out = fast ? fast(a, approximate) : map(a, erf ? gelu_erf : gelu_tanh);
  return record(out, "GeluBackward0", {a}, [a, erf, approximate](const Tensor& g) {
    using GeluBackward = Tensor(const Tensor&, const Tensor&, const std::string&);
    if (auto fast = fast_kernel<GeluBackward>("gelu_backward"))
      return std::vector<Tensor>{fast(g, a, approximate)};
    return std::vector<Tensor>{grad_map(g, a, [erf](float gy, float x) {
      return gy * (erf ? gelu_erf_grad(x) : gelu_tanh_grad(x));
    })};
  });
}

Tensor abs(const Tensor& a) {
  check_float("abs", a);
  Tensor out = map("abs", a, [](float x) { return std::abs(x); });
  return record(out, "AbsBackward0", {a}, [a](const Tensor& g) {
    return std::vector<Tensor>{grad_map("abs_backward", g, a, [](float gy, float x) {
      return gy * sign(x);  // d|x|/dx = sign(x)
    })};
  });
}

Tensor clamp(const Tensor& a, std::optional<float> min, std::optional<float> max) {
  check_float("clamp", a);
  if (!min && !max) throw Error("clamp: At least one of 'min' or 'max' must not be None");
  const float lo = min.value_or(-std::numeric_limits<float>::infinity());
  const float hi = max.value_or(std::numeric_limits<float>::infinity());
  Tensor out = map(a, [=](float x) { return std::isnan(x) ? x : std::min(std::max(x, lo), hi); });
  return record(out, "ClampBackward1", {a}, [a, lo, hi](const Tensor& g) {
    return std::vector<Tensor>{grad_map(g, a, [=](float gy, float x) {
      return x >= lo && x <= hi ? gy : 0.0f;  // 1 inside [min, max]
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

// The larger (smaller) of x and y; a NaN in either wins, as in PyTorch.
static float extremum(float x, float y, bool larger) {
  if (std::isnan(x) || std::isnan(y)) return std::numeric_limits<float>::quiet_NaN();
  return larger ? std::max(x, y) : std::min(x, y);
}

Tensor maximum(const Tensor& a, const Tensor& b) {
  check_float("maximum", a), check_float("maximum", b);
  Tensor out = map2("maximum", a, b, [](float x, float y) { return extremum(x, y, true); });
  return record(out, "MaximumBackward0", {a, b}, [a, b](const Tensor& g) {
    return std::vector<Tensor>{a.requires_grad() ? pick_backward(g, a, b, true) : Tensor(),
                               b.requires_grad() ? pick_backward(g, b, a, true) : Tensor()};
  });
}

Tensor minimum(const Tensor& a, const Tensor& b) {
  check_float("minimum", a), check_float("minimum", b);
  Tensor out = map2("minimum", a, b, [](float x, float y) { return extremum(x, y, false); });
  return record(out, "MinimumBackward0", {a, b}, [a, b](const Tensor& g) {
    return std::vector<Tensor>{a.requires_grad() ? pick_backward(g, a, b, false) : Tensor(),
                               b.requires_grad() ? pick_backward(g, b, a, false) : Tensor()};
  });
}

// --- comparisons: masks without gradient ---

#define ANATOMY_COMPARISON(NAME, OP)                                                 \
  Tensor NAME(const Tensor& a, const Tensor& b) {                                    \
    check_float(#NAME, a), check_float(#NAME, b);                                    \
    return map2(#NAME, a, b, [](float x, float y) { return x OP y ? 1.0f : 0.0f; }); \
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
  Tensor ce = expand(c, shape).contiguous(), ae = expand(a.detach(), shape).contiguous(),
         be = expand(b.detach(), shape).contiguous();
  Tensor out = empty(shape);
  for (int64_t i = 0; i < out.numel(); ++i)
    out.data()[i] = ce.data()[i] != 0.0f ? ae.data()[i] : be.data()[i];
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
  auto fast = fast_kernel<Tensor(const Tensor&, const Tensor&, float)>("masked_fill");
  Tensor out =
      fast ? fast(a, m, value)
           : map2("masked_fill", a, m, [value](float x, float k) { return k != 0.0f ? value : x; });
  return record(out, "MaskedFillBackward0", {a}, [m](const Tensor& g) {
    return std::vector<Tensor>{where(m, zeros({}), g)};  // 0 where filled, 1 elsewhere
  });
}

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
