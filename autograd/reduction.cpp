// Reductions. Two primitives fold the values themselves, sum and amax/amin; max/min along a dim
// are an index search plus gather (whose backward routes the gradient to the index), and mean,
// var and logsumexp are composed from primitives, so their gradients come for free.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "autograd/dispatch.hpp"
#include "autograd/engine.hpp"
#include "autograd/ops.hpp"
#include "autograd/reduction.hpp"

namespace anatomy {

namespace {

// The plan of reducing `a` over `dims` (every dim when empty); throws, naming `op`, for a
// non-float tensor, a dim out of range or a dim given twice.
ReductionPlan reduction_plan(const char* op, const Tensor& a, std::vector<int64_t> dims,
                             bool keepdim) {
  if (a.dtype() != Dtype::Float32)
    throw Error(fmt::format("{}: expected a float32 tensor but got int64", op));
  ReductionPlan p;
  const int64_t nd = a.dim();
  if (dims.empty())
    for (int64_t d = 0; d < std::max<int64_t>(nd, 1); ++d) dims.push_back(d);
  for (auto& d : dims) d = wrap_dim(op, d, nd);
  std::sort(dims.begin(), dims.end());
  for (size_t i = 1; i < dims.size(); ++i)
    if (dims[i] == dims[i - 1])
      throw Error(
          fmt::format("{}: dim {} appears multiple times in the list of dims", op, dims[i]));
  p.dims = dims;
  if (nd == 0) {
    p.x = a.contiguous();
    return p;
  }
  auto reduced = [&](int64_t d) { return std::binary_search(dims.begin(), dims.end(), d); };
  for (int64_t d = 0; d < nd; ++d) {
    p.keep_shape.push_back(reduced(d) ? 1 : a.size(d));
    if (!reduced(d) || keepdim) p.out_shape.push_back(reduced(d) ? 1 : a.size(d));
  }
  const bool consecutive = dims.back() - dims.front() + 1 == static_cast<int64_t>(dims.size());
  if (consecutive) {
    p.x = a.contiguous();
    for (int64_t d = 0; d < nd; ++d)
      (d < dims.front() ? p.O : d > dims.back() ? p.I : p.R) *= a.size(d);
  } else {
    std::vector<int64_t> perm;
    for (int64_t d = 0; d < nd; ++d)
      if (!reduced(d)) perm.push_back(d);
    for (int64_t d : dims) perm.push_back(d);
    p.x = permute(a.detach(), perm).contiguous();
    for (int64_t d = 0; d < nd; ++d) (reduced(d) ? p.R : p.O) *= a.size(d);
  }
  return p;
}

// out[o, i] = fold over r of x[o, r, i], starting from x[o, 0, i].
template <typename Fold>
Tensor plain_fold(const ReductionPlan& p, Fold fold) {
  Tensor out = empty(p.out_shape);
  const float* x = p.x.data();
  float* y = out.data();
  if (out.numel() == 0) return out;
  if (p.R == 0) return out.fill_(0.0f);  // a sum over nothing (max and min refuse it earlier)
  for (int64_t o = 0; o < p.O; ++o)
    for (int64_t i = 0; i < p.I; ++i) {
      float acc = x[o * p.R * p.I + i];
      for (int64_t r = 1; r < p.R; ++r) acc = fold(acc, x[(o * p.R + r) * p.I + i]);
      y[o * p.I + i] = acc;
    }
  return out;
}

// The fold of a reduction: a fast kernel registered as `kernel`, or the plain loops above.
Tensor fold(const char* kernel, const ReductionPlan& p, float (*f)(float, float)) {
  if (auto fast = fast_kernel<ReductionKernel>(kernel)) return fast(p);
  return plain_fold(p, f);
}

// The larger (smaller) of two values; a NaN wins, as in PyTorch.
float larger(float acc, float v) {
  return std::isnan(acc) || std::isnan(v) ? NAN : std::max(acc, v);
}
float smaller(float acc, float v) {
  return std::isnan(acc) || std::isnan(v) ? NAN : std::min(acc, v);
}
float plus(float acc, float v) { return acc + v; }

// g of a reduction's output, broadcast back to the input's shape.
Tensor expand_back(const Tensor& g, const ReductionPlan& p, const Shape& input_shape) {
  return expand(reshape(g, p.keep_shape), input_shape);
}

Tensor amax_or_amin(const char* op, const char* node, const Tensor& a, std::vector<int64_t> dims,
                    bool keepdim, bool is_max) {
  if (a.numel() == 0)
    throw Error(
        fmt::format("{}: Expected reduction dim to be specified for input.numel() == 0", op));
  ReductionPlan p = reduction_plan(op, a, std::move(dims), keepdim);
  // NaN propagates, as in PyTorch: the extremum of a slice holding a NaN is NaN.
  Tensor out = fold(op, p, is_max ? larger : smaller);
  return record(out, node, {a}, [a, p, y = out.detach()](const Tensor& g) {
    // The gradient is shared evenly among the elements equal to the extremum.
    Tensor hit = eq(a, expand_back(y, p, a.shape()));
    Tensor share = div(hit, sum(hit, p.dims, true));
    return std::vector<Tensor>{mul(expand_back(g, p, a.shape()), share)};
  });
}

// Index of the first largest (smallest) element along `dim`.
Tensor arg_search(const char* op, const Tensor& a, int64_t dim, bool keepdim, bool is_max) {
  if (a.dtype() != Dtype::Float32)
    throw Error(fmt::format("{}: expected a float32 tensor but got int64", op));
  dim = wrap_dim(op, dim, a.dim());
  if (a.dim() > 0 && a.size(dim) == 0)
    throw Error(fmt::format("{}: Expected reduction dim {} to have non-zero size", op, dim));
  // Search along the last dim of a copy with `dim` moved last, then move the result back.
  Tensor x = a.dim() == 0 ? a.reshape({1}) : transpose(a.detach(), dim, -1).contiguous();
  const int64_t R = x.size(-1);
  Shape rows = x.shape();
  rows.pop_back();
  Tensor out = empty(rows, Dtype::Int64);
  int64_t* idx = out.data_ptr<int64_t>();
  if (auto fast = fast_kernel<ArgSearchKernel>(op)) {
    fast(x.reshape({-1, R}), out);
  } else {
    const float* px = x.data();
    for (int64_t o = 0; o < out.numel(); ++o) {
      const float* row = px + o * R;
      // The first extremum wins; a NaN counts as the extremum, as in PyTorch.
      int64_t best = 0;
      for (int64_t r = 1; r < R && !std::isnan(row[best]); ++r)
        if (std::isnan(row[r]) || (is_max ? row[r] > row[best] : row[r] < row[best])) best = r;
      idx[o] = best;
    }
  }
  if (a.dim() == 0) return out;
  Tensor t = unsqueeze(out, -1);
  if (dim != a.dim() - 1) t = transpose(t, dim, -1).contiguous();
  return keepdim ? t : squeeze(t, dim);
}

std::pair<Tensor, Tensor> max_or_min(const Tensor& a, int64_t dim, bool keepdim, bool is_max) {
  Tensor idx = is_max ? argmax(a, dim, true) : argmin(a, dim, true);
  if (a.dim() == 0) return {a, zeros({}, Dtype::Int64)};
  Tensor values = gather(a, dim, idx);
  if (!keepdim) {
    values = squeeze(values, dim);
    idx = squeeze(idx, dim);
  }
  return {values, idx};
}

}  // namespace

Tensor sum(const Tensor& a, std::vector<int64_t> dims, bool keepdim) {
  // PyTorch's names: x.sum() is SumBackward0, x.sum(dim) SumBackward1 (even over every dim).
  const char* name = dims.empty() ? "SumBackward0" : "SumBackward1";
  ReductionPlan p = reduction_plan("sum", a, std::move(dims), keepdim);
  Tensor out = fold("sum", p, plus);
  return record(out, name, {a}, [p, shape = a.shape()](const Tensor& g) {
    return std::vector<Tensor>{expand_back(g, p, shape)};  // d(Σx)/dx_i = 1
  });
}

Tensor mean(const Tensor& a, std::vector<int64_t> dims, bool keepdim) {
  const char* name = dims.empty() ? "MeanBackward0" : "MeanBackward1";
  ReductionPlan p = reduction_plan("mean", a, std::move(dims), keepdim);
  const auto count = static_cast<float>(p.R);
  Tensor out = fold("sum", p, plus);
  for (float* v = out.data(); v != out.data() + out.numel(); ++v) *v /= count;  // as torch rounds
  return record(out, name, {a}, [p, count, shape = a.shape()](const Tensor& g) {
    return std::vector<Tensor>{expand_back(g / count, p, shape)};  // d(Σx/n)/dx_i = 1/n
  });
}

Tensor var(const Tensor& a, std::vector<int64_t> dims, bool unbiased, bool keepdim) {
  Tensor m = mean(a, dims, true);
  Tensor d = sub(a, m);
  Tensor s = sum(mul(d, d), dims, keepdim);
  const int64_t count = a.numel() / std::max<int64_t>(m.numel(), 1);
  return s / static_cast<float>(count - (unbiased ? 1 : 0));
}

Tensor logsumexp(const Tensor& a, std::vector<int64_t> dims, bool keepdim) {
  // log Σ e^x = m + log Σ e^(x - m) with m = max x: no overflow, and m carries no gradient.
  Tensor m = amax(a, dims, true).detach();
  m = where(ne(abs(m), full({}, std::numeric_limits<float>::infinity())), m, zeros({}));
  Tensor out = add(log(sum(exp(sub(a, m)), dims, true)), m);
  if (keepdim) return out;
  if (dims.empty()) return reshape(out, {});
  std::vector<int64_t> wrapped;
  for (auto d : dims) wrapped.push_back(wrap_dim("logsumexp", d, a.dim()));
  std::sort(wrapped.rbegin(), wrapped.rend());
  for (auto d : wrapped) out = squeeze(out, d);
  return out;
}

Tensor amax(const Tensor& a, std::vector<int64_t> dims, bool keepdim) {
  return amax_or_amin("amax", "AmaxBackward0", a, std::move(dims), keepdim, true);
}
Tensor amin(const Tensor& a, std::vector<int64_t> dims, bool keepdim) {
  return amax_or_amin("amin", "AminBackward0", a, std::move(dims), keepdim, false);
}
Tensor max(const Tensor& a) { return amax(a); }
Tensor min(const Tensor& a) { return amin(a); }

std::pair<Tensor, Tensor> max(const Tensor& a, int64_t dim, bool keepdim) {
  return max_or_min(a, dim, keepdim, true);
}
std::pair<Tensor, Tensor> min(const Tensor& a, int64_t dim, bool keepdim) {
  return max_or_min(a, dim, keepdim, false);
}

Tensor argmax(const Tensor& a, std::optional<int64_t> dim, bool keepdim) {
  if (!dim) return arg_search("argmax", a.reshape({-1}), 0, false, true);
  return arg_search("argmax", a, *dim, keepdim, true);
}
Tensor argmin(const Tensor& a, std::optional<int64_t> dim, bool keepdim) {
  if (!dim) return arg_search("argmin", a.reshape({-1}), 0, false, false);
  return arg_search("argmin", a, *dim, keepdim, false);
}

}  // namespace anatomy
