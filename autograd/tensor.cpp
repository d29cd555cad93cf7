#include "autograd/tensor.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "autograd/dispatch.hpp"
#include "autograd/engine.hpp"
#include "autograd/ops.hpp"
#include "autograd/storage.hpp"
#include "autograd/strided.hpp"

namespace anatomy {

const char* dtype_name(Dtype dtype) { return dtype == Dtype::Float32 ? "Float" : "Long"; }

std::string Shape::str() const {
  std::string s = "[";
  for (size_t i = 0; i < size(); ++i) s += (i ? ", " : "") + std::to_string((*this)[i]);
  return s + "]";
}
std::string to_string(const Shape& shape) { return "torch.Size(" + shape.str() + ")"; }

NestedList::NestedList(std::initializer_list<NestedList> list) : is_integer(true), is_list(true) {
  items.assign(list.begin(), list.end());
  for (const auto& item : items) is_integer = is_integer && item.is_integer;
}

// --- shape helpers ---

int64_t numel_of(const Shape& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t s = 1;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    strides[d] = s;
    s *= std::max<int64_t>(shape[d], 1);
  }
  return strides;
}

void check_float(const char* op, const Tensor& t) {
  if (!t.defined()) throw Error(fmt::format("{}: got an undefined tensor", op));
  if (t.dtype() != Dtype::Float32)
    throw Error(
        fmt::format("{}: expected a float32 tensor but got int64 of shape {} (int64 "
                    "tensors hold ids for embedding, gather and cross_entropy)",
                    op, t.shape().str()));
}

int64_t wrap_dim(const char* op, int64_t dim, int64_t ndim) {
  const int64_t n = std::max<int64_t>(ndim, 1);  // a 0-d tensor accepts dim 0 and -1
  if (dim < -n || dim >= n)
    throw Error(
        fmt::format("{}: Dimension out of range (expected to be in range of [{}, {}], but "
                    "got {})",
                    op, -n, n - 1, dim));
  return dim < 0 ? dim + n : dim;
}

Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      throw Error(
          fmt::format("{}: The size of tensor a ({}) must match the size of tensor b ({}) "
                      "at non-singleton dimension {} (shapes {} and {})",
                      op, da, db, i, a.str(), b.str()));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

namespace strided {
std::vector<int64_t> broadcast_strides(const Tensor& t, const Shape& shape) {
  const auto& ts = t.shape();
  std::vector<int64_t> out(shape.size(), 0);
  const size_t lead = shape.size() - ts.size();
  for (size_t i = 0; i < ts.size(); ++i)
    out[lead + i] = ts[i] == 1 && shape[lead + i] != 1 ? 0 : t.strides()[i];
  return out;
}
}  // namespace strided

// --- metadata ---

static TensorImpl& checked(const std::shared_ptr<TensorImpl>& impl) {
  if (!impl) throw Error("tensor: this Tensor is undefined (default-constructed)");
  return *impl;
}

const Shape& Tensor::shape() const { return checked(impl_).shape; }
int64_t Tensor::dim() const { return static_cast<int64_t>(shape().size()); }
int64_t Tensor::size(int64_t d) const { return shape()[wrap_dim("size", d, dim())]; }
int64_t Tensor::numel() const { return numel_of(shape()); }
Dtype Tensor::dtype() const { return checked(impl_).dtype; }
const std::vector<int64_t>& Tensor::strides() const { return checked(impl_).strides; }
int64_t Tensor::stride(int64_t d) const { return strides()[wrap_dim("stride", d, dim())]; }
int64_t Tensor::storage_offset() const { return checked(impl_).offset; }

bool Tensor::is_contiguous() const {
  const auto& sh = shape();
  const auto& st = strides();
  int64_t expected = 1;
  for (int64_t d = dim() - 1; d >= 0; --d) {
    if (sh[d] == 1) continue;
    if (st[d] != expected) return false;
    expected *= sh[d];
  }
  return true;
}

template <typename T>
T* Tensor::data_ptr() const {
  auto& impl = checked(impl_);
  constexpr Dtype want = std::is_same_v<T, float> ? Dtype::Float32 : Dtype::Int64;
  if (impl.dtype != want)
    throw Error(fmt::format("data_ptr: expected scalar type {} but found {}", dtype_name(want),
                            dtype_name(impl.dtype)));
  return impl.storage->data<T>() + impl.offset;
}
template float* Tensor::data_ptr<float>() const;
template int64_t* Tensor::data_ptr<int64_t>() const;

template <typename T>
T Tensor::item() const {
  if (numel() != 1)
    throw Error(
        fmt::format("item: a Tensor with {} elements cannot be converted to Scalar", numel()));
  if (dtype() == Dtype::Float32) return static_cast<T>(*data_ptr<float>());
  return static_cast<T>(*data_ptr<int64_t>());
}
template float Tensor::item<float>() const;
template double Tensor::item<double>() const;
template int64_t Tensor::item<int64_t>() const;
template int Tensor::item<int>() const;

std::vector<float> Tensor::to_vector() const {
  std::vector<float> out(numel());
  if (dtype() == Dtype::Float32) {
    strided::gather(data_ptr<float>(), shape(), strides(), out.data());
  } else {
    auto ints = to_int_vector();
    for (size_t i = 0; i < ints.size(); ++i) out[i] = static_cast<float>(ints[i]);
  }
  return out;
}

std::vector<int64_t> Tensor::to_int_vector() const {
  std::vector<int64_t> out(numel());
  if (dtype() == Dtype::Int64) {
    strided::gather(data_ptr<int64_t>(), shape(), strides(), out.data());
  } else {
    auto floats = to_vector();
    for (size_t i = 0; i < floats.size(); ++i) out[i] = static_cast<int64_t>(floats[i]);
  }
  return out;
}

// --- autograd accessors ---

bool Tensor::requires_grad() const { return checked(impl_).requires_grad; }

Tensor& Tensor::requires_grad_(bool requires_grad) {
  auto& impl = checked(impl_);
  if (requires_grad && impl.dtype != Dtype::Float32)
    throw Error("requires_grad_: only Tensors of floating point dtype can require gradients");
  if (!requires_grad && impl.grad_fn)
    throw Error(
        "requires_grad_: you can only change requires_grad flags of leaf variables. Use "
        "detach() to get a tensor that does not require grad.");
  impl.requires_grad = requires_grad;
  return *this;
}

Tensor Tensor::grad() const {
  auto& impl = checked(impl_);
  return impl.grad ? Tensor(impl.grad) : Tensor();
}

void Tensor::set_grad(const Tensor& grad) const {
  auto& impl = checked(impl_);
  if (grad.defined() && grad.shape() != impl.shape)
    throw Error(fmt::format("set_grad: assigned grad has shape {} but the tensor has shape {}",
                            grad.shape().str(), impl.shape.str()));
  impl.grad = grad.impl_ptr();
}

void Tensor::zero_grad() const { checked(impl_).grad.reset(); }
const std::shared_ptr<Node>& Tensor::grad_fn() const { return checked(impl_).grad_fn; }
bool Tensor::is_leaf() const { return checked(impl_).grad_fn == nullptr; }

Tensor Tensor::detach() const {
  auto& impl = checked(impl_);
  auto out = std::make_shared<TensorImpl>();
  out->storage = impl.storage;
  out->shape = impl.shape;
  out->strides = impl.strides;
  out->offset = impl.offset;
  out->dtype = impl.dtype;
  return Tensor(out);
}

void Tensor::backward(const Tensor& gradient, bool retain_graph) const {
  run_backward(*this, gradient, retain_graph);
}

Tensor& Tensor::set_name(std::string name) {
  checked(impl_).name = std::move(name);
  return *this;
}
const std::string& Tensor::name() const { return checked(impl_).name; }

// --- in place; these never record history ---

Tensor& Tensor::fill_(float value) {
  if (auto fast = fast_kernel<void(Tensor&, float)>("fill_")) return fast(*this, value), *this;
  std::array<std::vector<int64_t>, 1> s{strides()};
  auto run = [&](auto* p, auto v) {
    strided::for_each_run<1>(shape(), s, {0}, [&](auto off, int64_t n, auto inner) {
      for (int64_t i = 0; i < n; ++i) p[off[0] + i * inner[0]] = v;
    });
  };
  if (dtype() == Dtype::Float32)
    run(data_ptr<float>(), value);
  else
    run(data_ptr<int64_t>(), static_cast<int64_t>(value));
  return *this;
}

Tensor& Tensor::zero_() { return fill_(0.0f); }

Tensor& Tensor::copy_(const Tensor& src) {
  if (src.dim() > dim() || broadcast_shapes("copy_", src.shape(), shape()) != shape())
    throw Error(fmt::format("copy_: the source of shape {} cannot be broadcast to {}",
                            src.shape().str(), shape().str()));
  Tensor s = src.dtype() == dtype() ? src : src.to(dtype());
  if (auto fast = fast_kernel<void(Tensor&, const Tensor&)>("copy_")) return fast(*this, s), *this;
  // Element by element in row-major order: where the destination repeats an element (an
  // expanded view), the last write stays.
  std::array<std::vector<int64_t>, 2> st{strides(), strided::broadcast_strides(s, shape())};
  auto run = [&](auto* dst, auto* from) {
    strided::for_each_run<2>(shape(), st, {0, 0}, [&](auto off, int64_t n, auto inner) {
      for (int64_t i = 0; i < n; ++i) dst[off[0] + i * inner[0]] = from[off[1] + i * inner[1]];
    });
  };
  if (numel() == 0) return *this;
  if (dtype() == Dtype::Float32)
    run(data_ptr<float>(), s.data_ptr<float>());
  else
    run(data_ptr<int64_t>(), s.data_ptr<int64_t>());
  return *this;
}

Tensor& Tensor::add_(const Tensor& other, float alpha) {
  if (auto fast = fast_kernel<void(Tensor&, const Tensor&, float)>("add_"))
    return fast(*this, other, alpha), *this;
  NoGradGuard guard;
  return copy_(alpha == 1.0f ? add(*this, other) : add(*this, mul(other, alpha)));
}

Tensor& Tensor::mul_(float value) {
  if (auto fast = fast_kernel<void(Tensor&, float)>("mul_")) return fast(*this, value), *this;
  NoGradGuard guard;
  return copy_(mul(*this, value));
}

Tensor Tensor::clone() const {
  auto out = empty(shape(), dtype());
  out.copy_(*this);
  return record(out, "CloneBackward0", {*this},
                [](const Tensor& g) -> std::vector<Tensor> { return {g}; });
}

Tensor Tensor::to(Dtype target) const {
  if (target == dtype()) return *this;
  auto out = empty(shape(), target);
  if (target == Dtype::Float32) {
    auto v = to_int_vector();
    float* p = out.data();
    for (size_t i = 0; i < v.size(); ++i) p[i] = static_cast<float>(v[i]);
  } else {
    auto v = to_vector();
    int64_t* p = out.data_ptr<int64_t>();
    for (size_t i = 0; i < v.size(); ++i) p[i] = static_cast<int64_t>(v[i]);
  }
  return out;
}

// --- methods that forward to the ops ---

Tensor Tensor::view(Shape s) const { return anatomy::view(*this, std::move(s)); }
Tensor Tensor::reshape(Shape s) const { return anatomy::reshape(*this, std::move(s)); }
Tensor Tensor::flatten(int64_t a, int64_t b) const { return anatomy::flatten(*this, a, b); }
Tensor Tensor::unsqueeze(int64_t d) const { return anatomy::unsqueeze(*this, d); }
Tensor Tensor::squeeze(std::optional<int64_t> d) const { return anatomy::squeeze(*this, d); }
Tensor Tensor::expand(Shape s) const { return anatomy::expand(*this, std::move(s)); }
Tensor Tensor::transpose(int64_t a, int64_t b) const { return anatomy::transpose(*this, a, b); }
Tensor Tensor::permute(std::vector<int64_t> d) const {
  return anatomy::permute(*this, std::move(d));
}
Tensor Tensor::contiguous() const { return anatomy::contiguous(*this); }
Tensor Tensor::select(int64_t d, int64_t i) const { return anatomy::select(*this, d, i); }
Tensor Tensor::slice(int64_t d, std::optional<int64_t> s, std::optional<int64_t> e,
                     int64_t step) const {
  return anatomy::slice(*this, d, s, e, step);
}
Tensor Tensor::narrow(int64_t d, int64_t s, int64_t l) const {
  return anatomy::narrow(*this, d, s, l);
}
Tensor Tensor::sum(std::vector<int64_t> d, bool k) const { return anatomy::sum(*this, d, k); }
Tensor Tensor::mean(std::vector<int64_t> d, bool k) const { return anatomy::mean(*this, d, k); }
Tensor Tensor::var(std::vector<int64_t> d, bool u, bool k) const {
  return anatomy::var(*this, d, u, k);
}
Tensor Tensor::max() const { return anatomy::max(*this); }
Tensor Tensor::min() const { return anatomy::min(*this); }
Tensor Tensor::argmax(std::optional<int64_t> d, bool k) const {
  return anatomy::argmax(*this, d, k);
}
Tensor Tensor::exp() const { return anatomy::exp(*this); }
Tensor Tensor::log() const { return anatomy::log(*this); }
Tensor Tensor::sqrt() const { return anatomy::sqrt(*this); }
Tensor Tensor::rsqrt() const { return anatomy::rsqrt(*this); }
Tensor Tensor::tanh() const { return anatomy::tanh(*this); }
Tensor Tensor::sigmoid() const { return anatomy::sigmoid(*this); }
Tensor Tensor::relu() const { return anatomy::relu(*this); }
Tensor Tensor::abs() const { return anatomy::abs(*this); }
Tensor Tensor::pow(float e) const { return anatomy::pow(*this, e); }
Tensor Tensor::pow(const Tensor& e) const { return anatomy::pow(*this, e); }
Tensor Tensor::clamp(std::optional<float> lo, std::optional<float> hi) const {
  return anatomy::clamp(*this, lo, hi);
}
Tensor Tensor::matmul(const Tensor& o) const { return anatomy::matmul(*this, o); }
Tensor Tensor::softmax(int64_t d) const { return anatomy::softmax(*this, d); }
Tensor Tensor::log_softmax(int64_t d) const { return anatomy::log_softmax(*this, d); }
Tensor Tensor::masked_fill(const Tensor& m, float v) const {
  return anatomy::masked_fill(*this, m, v);
}
Tensor Tensor::eq(float v) const { return anatomy::eq(*this, v); }

// --- factories ---

Tensor empty(Shape shape, Dtype dtype) {
  for (int64_t s : shape)
    if (s < 0)
      throw Error(fmt::format("empty: Trying to create tensor with negative dimension {}: {}", s,
                              shape.str()));
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = Storage::allocate(numel_of(shape), dtype);
  impl->strides = contiguous_strides(shape);
  impl->shape = std::move(shape);
  impl->dtype = dtype;
  return Tensor(impl);
}

Tensor full(Shape shape, float value, Dtype dtype) {
  auto t = empty(std::move(shape), dtype);
  t.fill_(value);
  return t;
}
Tensor zeros(Shape shape, Dtype dtype) { return full(std::move(shape), 0.0f, dtype); }
Tensor ones(Shape shape, Dtype dtype) { return full(std::move(shape), 1.0f, dtype); }
Tensor zeros_like(const Tensor& t) { return zeros(t.shape(), t.dtype()); }
Tensor ones_like(const Tensor& t) { return ones(t.shape(), t.dtype()); }

Tensor arange(double end, Dtype dtype) { return arange(0, end, 1, dtype); }
Tensor arange(double start, double end, double step, Dtype dtype) {
  if (step == 0) throw Error("arange: step must be nonzero");
  if ((end - start) / step < 0)
    throw Error(
        fmt::format("arange: upper bound and larger bound inconsistent with step sign "
                    "(start {}, end {}, step {})",
                    start, end, step));
  const auto n = static_cast<int64_t>(std::ceil((end - start) / step));
  auto t = empty({n}, dtype);
  for (int64_t i = 0; i < n; ++i) {
    const double v = start + static_cast<double>(i) * step;
    if (dtype == Dtype::Float32)
      t.data()[i] = static_cast<float>(v);
    else
      t.data_ptr<int64_t>()[i] = static_cast<int64_t>(v);
  }
  return t;
}

static void nested_shape(const NestedList& list, Shape& shape, size_t depth) {
  if (!list.is_list) return;
  if (depth == shape.size()) {
    shape.push_back(static_cast<int64_t>(list.items.size()));
    if (!list.items.empty()) nested_shape(list.items[0], shape, depth + 1);
  }
}

static void nested_fill(const NestedList& list, const Shape& shape, size_t depth,
                        std::vector<double>& out) {
  if (depth == shape.size()) {
    if (list.is_list) throw Error("tensor: nested lists of uneven depth");
    out.push_back(list.value);
    return;
  }
  if (!list.is_list || static_cast<int64_t>(list.items.size()) != shape[depth])
    throw Error(fmt::format("tensor: expected sequence of length {} at dim {} (got {})",
                            shape[depth], depth, list.is_list ? list.items.size() : 0));
  for (const auto& item : list.items) nested_fill(item, shape, depth + 1, out);
}

Tensor tensor(const NestedList& values) {
  return tensor(values, values.is_integer ? Dtype::Int64 : Dtype::Float32);
}

Tensor tensor(const NestedList& values, Dtype dtype) {
  Shape shape;
  nested_shape(values, shape, 0);
  std::vector<double> flat;
  nested_fill(values, shape, 0, flat);
  auto t = empty(shape, dtype);
  for (size_t i = 0; i < flat.size(); ++i) {
    if (dtype == Dtype::Float32)
      t.data()[i] = static_cast<float>(flat[i]);
    else
      t.data_ptr<int64_t>()[i] = static_cast<int64_t>(flat[i]);
  }
  return t;
}

template <typename T>
static Tensor from_values(const std::vector<T>& values, Shape shape, Dtype dtype) {
  if (numel_of(shape) != static_cast<int64_t>(values.size()))
    throw Error(fmt::format("from_vector: shape {} is invalid for input of size {}", shape.str(),
                            values.size()));
  auto t = empty(std::move(shape), dtype);
  if (!values.empty()) std::memcpy(t.data_ptr<T>(), values.data(), sizeof(T) * values.size());
  return t;
}
Tensor from_vector(const std::vector<float>& v, Shape s) {
  return from_values(v, std::move(s), Dtype::Float32);
}
Tensor from_vector(const std::vector<int64_t>& v, Shape s) {
  return from_values(v, std::move(s), Dtype::Int64);
}

}  // namespace anatomy
