// View ops: the result shares storage with the input and differs in shape, strides and offset
// only, so x.transpose(1, 2) or x[:, 0, :] costs no copy. Their backward maps the gradient back
// to the input's shape: the inverse view, or (for select and slice) a zero tensor with the
// gradient written into the viewed part.
#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "autograd/engine.hpp"
#include "autograd/ops.hpp"

namespace anatomy {

namespace {

Tensor make_view(const Tensor& a, Shape shape, std::vector<int64_t> strides, int64_t offset) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = a.impl()->storage;
  impl->shape = std::move(shape);
  impl->strides = std::move(strides);
  impl->offset = offset;
  impl->dtype = a.dtype();
  return Tensor(impl);
}

// Replaces one -1 in `shape` so that it holds `numel` elements.
Shape infer_size(const char* op, Shape shape, int64_t numel, const Shape& from) {
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer >= 0) throw Error(fmt::format("{}: only one dimension can be inferred", op));
      infer = static_cast<int64_t>(i);
    } else if (shape[i] < 0) {
      throw Error(fmt::format("{}: invalid shape dimension {}", op, shape[i]));
    } else {
      known *= shape[i];
    }
  }
  if (infer >= 0 && known != 0 && numel % known == 0) shape[infer] = numel / known;
  if (numel_of(shape) != numel || (infer >= 0 && shape[infer] == -1))
    throw Error(fmt::format("{}: shape '{}' is invalid for input of size {} (shape {})", op,
                            shape.str(), numel, from.str()));
  return shape;
}

// Zeros of `shape` with `g` written into the part picked by `pick`.
template <typename Pick>
Tensor scatter_into_zeros(const Tensor& g, const Shape& shape, Pick pick) {
  Tensor out = zeros(shape);
  pick(out).copy_(g);
  return out;
}

// Records a view that picks part of `a` (select, slice): its backward writes the gradient into
// that part of zeros shaped like `a`, and the engine may add it into its producer's gradient
// directly (Node::input_part).
template <typename Pick>
Tensor record_part(Tensor out, std::string name, const Tensor& a, Pick pick) {
  out = record(out, std::move(name), {a}, [from = a.shape(), pick](const Tensor& g) {
    return std::vector<Tensor>{scatter_into_zeros(g, from, pick)};
  });
  if (out.grad_fn()) out.grad_fn()->input_part = pick;
  return out;
}

}  // namespace

Tensor view(const Tensor& a, Shape shape) {
  shape = infer_size("view", std::move(shape), a.numel(), a.shape());
  if (!a.is_contiguous())
    throw Error(
        fmt::format("view: view size is not compatible with input tensor's size and "
                    "stride (shape {}, strides {}); use .reshape(...) instead",
                    a.shape().str(), Shape(a.strides()).str()));
  auto strides = contiguous_strides(shape);
  Tensor out = make_view(a, std::move(shape), std::move(strides), a.storage_offset());
  return record(out, "ViewBackward0", {a}, [from = a.shape()](const Tensor& g) {
    return std::vector<Tensor>{reshape(g, from)};
  });
}

Tensor reshape(const Tensor& a, Shape shape) {
  return view(a.is_contiguous() ? a : contiguous(a), std::move(shape));
}

Tensor flatten(const Tensor& a, int64_t start_dim, int64_t end_dim) {
  if (a.dim() == 0) return reshape(a, {1});
  start_dim = wrap_dim("flatten", start_dim, a.dim());
  end_dim = wrap_dim("flatten", end_dim, a.dim());
  if (start_dim > end_dim) throw Error("flatten: start_dim cannot come after end_dim");
  Shape shape;
  for (int64_t d = 0; d < a.dim(); ++d) {
    if (d <= start_dim || d > end_dim)
      shape.push_back(a.size(d));
    else
      shape.back() *= a.size(d);
  }
  return reshape(a, shape);
}

Tensor unsqueeze(const Tensor& a, int64_t dim) {
  dim = wrap_dim("unsqueeze", dim, a.dim() + 1);
  Shape shape = a.shape();
  auto strides = a.strides();
  const int64_t s = dim < a.dim() ? strides[dim] * shape[dim] : 1;
  shape.insert(shape.begin() + dim, 1);
  strides.insert(strides.begin() + dim, s);
  Tensor out = make_view(a, shape, strides, a.storage_offset());
  return record(out, "UnsqueezeBackward0", {a}, [from = a.shape()](const Tensor& g) {
    return std::vector<Tensor>{reshape(g, from)};
  });
}

Tensor squeeze(const Tensor& a, std::optional<int64_t> dim) {
  Shape shape;
  std::vector<int64_t> strides;
  const int64_t d0 = dim ? wrap_dim("squeeze", *dim, a.dim()) : -1;
  for (int64_t d = 0; d < a.dim(); ++d) {
    const bool drop = a.size(d) == 1 && (!dim || d == d0);
    if (!drop) {
      shape.push_back(a.size(d));
      strides.push_back(a.stride(d));
    }
  }
  Tensor out = make_view(a, shape, strides, a.storage_offset());
  return record(out, "SqueezeBackward0", {a}, [from = a.shape()](const Tensor& g) {
    return std::vector<Tensor>{reshape(g, from)};
  });
}

Tensor expand(const Tensor& a, Shape shape) {
  const int64_t nd = static_cast<int64_t>(shape.size());
  if (nd < a.dim())
    throw Error(
        fmt::format("expand: the number of sizes provided ({}) must be greater or equal "
                    "to the number of dimensions in the tensor ({})",
                    nd, a.dim()));
  std::vector<int64_t> strides(nd, 0);
  for (int64_t i = 0; i < nd; ++i) {
    const int64_t j = i - (nd - a.dim());  // the matching dim of a, if any
    if (j < 0) {
      if (shape[i] < 0)
        throw Error(
            fmt::format("expand: the expanded size {} is not allowed in a leading, "
                        "non-existing dimension",
                        shape[i]));
      continue;
    }
    if (shape[i] == -1) shape[i] = a.size(j);
    if (a.size(j) == shape[i]) {
      strides[i] = a.stride(j);
    } else if (a.size(j) != 1) {
      throw Error(
          fmt::format("expand: The expanded size of the tensor ({}) must match the "
                      "existing size ({}) at non-singleton dimension {}.  Target sizes: "
                      "{}.  Tensor sizes: {}",
                      shape[i], a.size(j), i, shape.str(), a.shape().str()));
    }
  }
  if (shape == a.shape()) return a;
  Tensor out = make_view(a, shape, strides, a.storage_offset());
  return record(out, "ExpandBackward0", {a}, [from = a.shape()](const Tensor& g) {
    return std::vector<Tensor>{sum_to(g, from)};
  });
}

Tensor transpose(const Tensor& a, int64_t dim0, int64_t dim1) {
  dim0 = wrap_dim("transpose", dim0, a.dim());
  dim1 = wrap_dim("transpose", dim1, a.dim());
  if (a.dim() == 0) return a;
  Shape shape = a.shape();
  auto strides = a.strides();
  std::swap(shape[dim0], shape[dim1]);
  std::swap(strides[dim0], strides[dim1]);
  Tensor out = make_view(a, shape, strides, a.storage_offset());
  return record(out, "TransposeBackward0", {a}, [dim0, dim1](const Tensor& g) {
    return std::vector<Tensor>{transpose(g, dim0, dim1)};
  });
}

Tensor permute(const Tensor& a, std::vector<int64_t> dims) {
  if (static_cast<int64_t>(dims.size()) != a.dim())
    throw Error(
        fmt::format("permute: number of dims don't match in permute (input has {} dims, "
                    "got {})",
                    a.dim(), dims.size()));
  std::vector<bool> seen(dims.size(), false);
  Shape shape;
  std::vector<int64_t> strides, inverse(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = wrap_dim("permute", dims[i], a.dim());
    if (seen[d]) throw Error("permute: repeated dim in permute");
    seen[d] = true;
    shape.push_back(a.size(d));
    strides.push_back(a.stride(d));
    inverse[d] = static_cast<int64_t>(i);
  }
  Tensor out = make_view(a, shape, strides, a.storage_offset());
  return record(out, "PermuteBackward0", {a},
                [inverse](const Tensor& g) { return std::vector<Tensor>{permute(g, inverse)}; });
}

Tensor contiguous(const Tensor& a) {
  if (a.is_contiguous()) return a;
  return a.clone();
}

Tensor select(const Tensor& a, int64_t dim, int64_t index) {
  if (a.dim() == 0) throw Error("select: select() cannot be applied to a 0-dim tensor.");
  dim = wrap_dim("select", dim, a.dim());
  const int64_t size = a.size(dim);
  if (index < -size || index >= size)
    throw Error(fmt::format("select: index {} out of range for tensor of size {} at dimension {}",
                            index, a.shape().str(), dim));
  if (index < 0) index += size;
  Shape shape = a.shape();
  auto strides = a.strides();
  const int64_t offset = a.storage_offset() + index * strides[dim];
  shape.erase(shape.begin() + dim);
  strides.erase(strides.begin() + dim);
  Tensor out = make_view(a, shape, strides, offset);
  return record_part(out, "SelectBackward0", a,
                     [dim, index](const Tensor& z) { return select(z, dim, index); });
}

Tensor slice(const Tensor& a, int64_t dim, std::optional<int64_t> start_opt,
             std::optional<int64_t> end_opt, int64_t step) {
  if (a.dim() == 0) throw Error("slice: slice() cannot be applied to a 0-dim tensor.");
  if (step <= 0) throw Error(fmt::format("slice: slice step must be positive (got {})", step));
  dim = wrap_dim("slice", dim, a.dim());
  const int64_t size = a.size(dim);
  // Python's rules: negative counts from the end, out-of-range clamps.
  auto clampi = [size](int64_t i) {
    if (i < 0) i += size;
    return std::clamp<int64_t>(i, 0, size);
  };
  const int64_t start = start_opt ? clampi(*start_opt) : 0;
  const int64_t end = std::max(start, end_opt ? clampi(*end_opt) : size);
  Shape shape = a.shape();
  auto strides = a.strides();
  const int64_t offset = a.storage_offset() + start * strides[dim];
  shape[dim] = (end - start + step - 1) / step;
  strides[dim] *= step;
  Tensor out = make_view(a, shape, strides, offset);
  return record_part(out, "SliceBackward0", a, [dim, start, end, step](const Tensor& z) {
    return slice(z, dim, start, end, step);
  });
}

Tensor narrow(const Tensor& a, int64_t dim, int64_t start, int64_t length) {
  dim = wrap_dim("narrow", dim, a.dim());
  const int64_t size = a.size(dim);
  if (start < 0) start += size;
  if (start < 0 || length < 0 || start + length > size)
    throw Error(fmt::format("narrow: start ({}) + length ({}) exceeds dimension size ({}).", start,
                            length, size));
  return slice(a, dim, start, start + length);
}

std::vector<Tensor> split(const Tensor& a, const std::vector<int64_t>& sizes, int64_t dim) {
  dim = wrap_dim("split", dim, a.dim());
  const int64_t total = std::accumulate(sizes.begin(), sizes.end(), int64_t{0});
  if (total != a.size(dim))
    throw Error(
        fmt::format("split_with_sizes: expects split_sizes to sum exactly to {} (input "
                    "tensor's size at dimension {}), but got split_sizes={}",
                    a.size(dim), dim, Shape(sizes).str()));
  std::vector<Tensor> parts;
  int64_t start = 0;
  for (int64_t s : sizes) {
    parts.push_back(narrow(a, dim, start, s));
    start += s;
  }
  return parts;
}

std::vector<Tensor> split(const Tensor& a, int64_t split_size, int64_t dim) {
  dim = wrap_dim("split", dim, a.dim());
  // As torch: 0 only splits an empty dimension (into one empty part).
  if (split_size < 0)
    throw Error(fmt::format("split: split_size must be non-negative (got {})", split_size));
  if (split_size == 0 && a.size(dim) != 0)
    throw Error(fmt::format(
        "split: split_size can only be 0 if dimension size is 0, but got dimension size of {}",
        a.size(dim)));
  std::vector<int64_t> sizes;
  for (int64_t left = a.size(dim); left > 0; left -= split_size)
    sizes.push_back(std::min(left, split_size));
  if (sizes.empty()) sizes.push_back(0);
  return split(a, sizes, dim);
}

std::vector<Tensor> chunk(const Tensor& a, int64_t chunks, int64_t dim) {
  if (chunks <= 0) throw Error("chunk: chunk expects `chunks` to be greater than 0");
  dim = wrap_dim("chunk", dim, a.dim());
  const int64_t size = a.size(dim);
  return split(a, std::max<int64_t>(1, (size + chunks - 1) / chunks), dim);
}

}  // namespace anatomy
