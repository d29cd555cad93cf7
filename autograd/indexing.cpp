// Ops that pick elements by int64 indices, and cat/stack. Their backward scatters (adds) the
// gradient back to where each element came from.
#include <fmt/format.h>

#include <algorithm>

#include "autograd/engine.hpp"
#include "autograd/ops.hpp"

namespace anatomy {

namespace {

void check_index(const char* op, const Tensor& index) {
  if (!index.defined() || index.dtype() != Dtype::Int64)
    throw Error(fmt::format("{}: expected an int64 index tensor (ids), got {}", op,
                            index.defined() ? dtype_name(index.dtype()) : "an undefined tensor"));
}

// Splits a shape at `dim` into (outer, size, inner) element counts.
struct Around {
  int64_t outer = 1, inner = 1;
};
Around around(const Shape& shape, int64_t dim) {
  Around r;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    if (d < dim) r.outer *= shape[d];
    if (d > dim) r.inner *= shape[d];
  }
  return r;
}

// out[o, index[k], i] += g[o, k, i]: the backward of index_select.
Tensor index_add_into_zeros(const Shape& shape, int64_t dim, const std::vector<int64_t>& index,
                            const Tensor& g) {
  Tensor out = zeros(shape);
  Tensor gc = g.contiguous();
  const Around a = around(shape, dim);
  const int64_t size = shape[dim], k_count = static_cast<int64_t>(index.size());
  const float* src = gc.data();
  float* dst = out.data();
  for (int64_t o = 0; o < a.outer; ++o)
    for (int64_t k = 0; k < k_count; ++k) {
      const float* s = src + (o * k_count + k) * a.inner;
      float* d = dst + (o * size + index[k]) * a.inner;
      for (int64_t i = 0; i < a.inner; ++i) d[i] += s[i];
    }
  return out;
}

// Row-major multi-index walk over `shape`, calling f(flat position, coordinates).
template <typename F>
void for_each_index(const Shape& shape, F f) {
  const int64_t n = numel_of(shape);
  std::vector<int64_t> coord(shape.size(), 0);
  for (int64_t flat = 0; flat < n; ++flat) {
    f(flat, coord);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++coord[d] < shape[d]) break;
      coord[d] = 0;
    }
  }
}

}  // namespace

Tensor index_select(const Tensor& a, int64_t dim, const Tensor& index) {
  check_index("index_select", index);
  if (index.dim() > 1)
    throw Error(fmt::format("index_select: Index is supposed to be a vector (got shape {})",
                            index.shape().str()));
  dim = wrap_dim("index_select", dim, a.dim());
  const int64_t size = a.dim() == 0 ? 1 : a.size(dim);
  const auto idx = index.to_int_vector();
  check_ids(idx, size, [&](int64_t i) {
    return fmt::format("index_select: index {} is out of range for dimension {} with size {}", i,
                       dim, size);
  });
  Shape shape = a.shape();
  if (a.dim() > 0) shape[dim] = static_cast<int64_t>(idx.size());
  Tensor x = a.contiguous();
  Tensor out = empty(shape, a.dtype());
  const Around ar = around(a.shape(), dim);
  const int64_t k_count = static_cast<int64_t>(idx.size());
  auto copy = [&](auto* src, auto* dst) {
    for (int64_t o = 0; o < ar.outer; ++o)
      for (int64_t k = 0; k < k_count; ++k)
        std::copy_n(src + (o * size + idx[k]) * ar.inner, ar.inner,
                    dst + (o * k_count + k) * ar.inner);
  };
  if (a.dtype() == Dtype::Float32)
    copy(x.data(), out.data());
  else
    copy(x.data_ptr<int64_t>(), out.data_ptr<int64_t>());
  return record(out, "IndexSelectBackward0", {a}, [shape = a.shape(), dim, idx](const Tensor& g) {
    return std::vector<Tensor>{index_add_into_zeros(shape, dim, idx, g)};
  });
}

Tensor gather(const Tensor& a, int64_t dim, const Tensor& index) {
  check_index("gather", index);
  dim = wrap_dim("gather", dim, a.dim());
  if (index.dim() != a.dim())
    throw Error(
        fmt::format("gather: Index tensor must have the same number of dimensions as "
                    "input tensor (input {}, index {})",
                    a.shape().str(), index.shape().str()));
  for (int64_t d = 0; d < a.dim(); ++d)
    if (d != dim && index.size(d) > a.size(d))
      throw Error(
          fmt::format("gather: Size does not match at dimension {} expected index {} to "
                      "be smaller than self {} apart from dimension {}",
                      d, index.shape().str(), a.shape().str(), dim));
  const auto idx = index.to_int_vector();
  const int64_t size = a.dim() == 0 ? 1 : a.size(dim);
  for (int64_t i : idx)
    if (i < 0 || i >= size)
      throw Error(fmt::format("gather: index {} is out of bounds for dimension {} with size {}", i,
                              dim, size));
  Tensor x = a.contiguous();
  const auto xs = x.strides();
  Tensor out = empty(index.shape(), a.dtype());
  auto offset_of = [&](const std::vector<int64_t>& c, int64_t flat) {
    int64_t off = 0;
    for (size_t d = 0; d < c.size(); ++d)
      off += (static_cast<int64_t>(d) == dim ? idx[flat] : c[d]) * xs[d];
    return off;
  };
  if (a.dtype() == Dtype::Float32) {
    const float* src = x.data();
    float* dst = out.data();
    for_each_index(index.shape(), [&](int64_t f, const auto& c) { dst[f] = src[offset_of(c, f)]; });
  } else {
    const int64_t* src = x.data_ptr<int64_t>();
    int64_t* dst = out.data_ptr<int64_t>();
    for_each_index(index.shape(), [&](int64_t f, const auto& c) { dst[f] = src[offset_of(c, f)]; });
  }
  return record(out, "GatherBackward0", {a},
                [shape = a.shape(), xs, idx, ishape = index.shape(), dim](const Tensor& g) {
                  // d out[c] / d a[c with index] = 1: scatter-add g back.
                  Tensor ga = zeros(shape);
                  Tensor gc = g.contiguous();
                  float* dst = ga.data();
                  const float* src = gc.data();
                  for_each_index(ishape, [&](int64_t f, const auto& c) {
                    int64_t off = 0;
                    for (size_t d = 0; d < c.size(); ++d)
                      off += (static_cast<int64_t>(d) == dim ? idx[f] : c[d]) * xs[d];
                    dst[off] += src[f];
                  });
                  return std::vector<Tensor>{ga};
                });
}

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  if (tensors.empty()) throw Error("cat: expected a non-empty list of Tensors");
  const Tensor& first = tensors[0];
  dim = wrap_dim("cat", dim, first.dim());
  if (first.dim() == 0)
    throw Error("cat: zero-dimensional tensor (at position 0) cannot be concatenated");
  Shape shape = first.shape();
  int64_t total = 0;
  std::vector<int64_t> sizes;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (t.dtype() != first.dtype())
      throw Error(fmt::format("cat: expected all tensors to have dtype {} but tensor {} has {}",
                              dtype_name(first.dtype()), i, dtype_name(t.dtype())));
    if (t.dim() != first.dim())
      throw Error(
          fmt::format("cat: Tensors must have same number of dimensions: got {} and {} "
                      "(tensor number {} in the list)",
                      first.dim(), t.dim(), i));
    for (int64_t d = 0; d < t.dim(); ++d)
      if (d != dim && t.size(d) != shape[d])
        throw Error(
            fmt::format("cat: Sizes of tensors must match except in dimension {}. "
                        "Expected size {} but got size {} for tensor number {} in the "
                        "list.",
                        dim, shape[d], t.size(d), i));
    sizes.push_back(t.size(dim));
    total += t.size(dim);
  }
  shape[dim] = total;
  Tensor out = empty(shape, first.dtype());
  int64_t start = 0;
  for (const auto& t : tensors) {
    out.detach().narrow(dim, start, t.size(dim)).copy_(t);
    start += t.size(dim);
  }
  return record(out, "CatBackward0", tensors,
                [sizes, dim](const Tensor& g) { return split(g, sizes, dim); });
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  if (tensors.empty()) throw Error("stack: expects a non-empty TensorList");
  dim = wrap_dim("stack", dim, tensors[0].dim() + 1);
  std::vector<Tensor> parts;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].shape() != tensors[0].shape())
      throw Error(
          fmt::format("stack: stack expects each tensor to be equal size, but got {} at "
                      "entry 0 and {} at entry {}",
                      tensors[0].shape().str(), tensors[i].shape().str(), i));
    parts.push_back(unsqueeze(tensors[i], dim));
  }
  return cat(parts, dim);
}

}  // namespace anatomy
