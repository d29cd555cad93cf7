// Tensor: a float32 (or int64) N-dimensional array that remembers how it was computed.
//
// A Tensor is a cheap handle: copying it shares storage and autograd history, like a
// torch.Tensor in Python. Views (transpose, slice, expand, unsqueeze, ...) share storage and
// differ only in shape, strides and offset; kernels that need a flat buffer call contiguous().
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace anatomy {

enum class Dtype { Float32, Int64 };
inline constexpr Dtype kFloat32 = Dtype::Float32;
inline constexpr Dtype kInt64 = Dtype::Int64;
// PyTorch's names, as its errors print them ("expected scalar type Float but found Long").
const char* dtype_name(Dtype dtype);

// The shape of a tensor; prints as torch.Size([1, 5, 768]).
struct Shape : std::vector<int64_t> {
  using std::vector<int64_t>::vector;
  Shape() = default;
  Shape(std::vector<int64_t> v) : std::vector<int64_t>(std::move(v)) {}
  std::string str() const;  // "[1, 5, 768]"
};
std::string to_string(const Shape& shape);  // "torch.Size([1, 5, 768])"

// Thrown by every op on bad input; the message names the op, what it expected and what came.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Storage;  // the xtensor buffer, see storage.hpp
struct Node;     // a recorded op, see engine.hpp

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  Shape shape;
  std::vector<int64_t> strides;  // in elements
  int64_t offset = 0;            // in elements
  Dtype dtype = Dtype::Float32;
  bool requires_grad = false;
  std::shared_ptr<Node> grad_fn;     // null for leaves
  std::shared_ptr<TensorImpl> grad;  // accumulated by backward() into leaves
  std::string name;                  // optional, used in graph pictures
};

// Nested initializer lists for tensor({{1, 2}, {3, 4}}). As in PyTorch, a list of integer
// literals makes an int64 tensor and any floating literal makes a float32 one.
struct NestedList {
  NestedList(float v) : value(v) {}
  NestedList(double v) : value(v) {}
  NestedList(int v) : value(v), is_integer(true) {}
  NestedList(long v) : value(static_cast<double>(v)), is_integer(true) {}
  NestedList(long long v) : value(static_cast<double>(v)), is_integer(true) {}
  NestedList(std::initializer_list<NestedList> list);
  double value = 0;
  bool is_integer = false;
  bool is_list = false;
  std::vector<NestedList> items;
};

class Tensor {
 public:
  Tensor() = default;  // an undefined tensor, like an empty optional
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return impl_ != nullptr; }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }

  // --- metadata ---
  const Shape& shape() const;
  const Shape& sizes() const { return shape(); }
  int64_t size(int64_t dim) const;
  int64_t dim() const;
  int64_t numel() const;
  Dtype dtype() const;
  const std::vector<int64_t>& strides() const;
  int64_t stride(int64_t dim) const;
  int64_t storage_offset() const;
  bool is_contiguous() const;
  bool is_floating_point() const { return dtype() == Dtype::Float32; }

  // --- data ---
  // Pointer to element [0, ..., 0]; respect strides() unless is_contiguous().
  template <typename T>
  T* data_ptr() const;
  float* data() const { return data_ptr<float>(); }
  // The value of a one-element tensor (PyTorch's .item()).
  template <typename T = float>
  T item() const;
  // All values in row-major order (PyTorch's .flatten().tolist()).
  std::vector<float> to_vector() const;
  std::vector<int64_t> to_int_vector() const;

  // --- autograd ---
  bool requires_grad() const;
  Tensor& requires_grad_(bool requires_grad = true);
  Tensor grad() const;
  void set_grad(const Tensor& grad) const;
  // Forget the accumulated gradient (PyTorch 2's zero_grad(set_to_none=True)).
  void zero_grad() const;
  const std::shared_ptr<Node>& grad_fn() const;
  bool is_leaf() const;
  // Same storage, no history: gradients do not flow back through the result.
  Tensor detach() const;
  // Reverse-mode autodiff from this tensor. A non-scalar needs `gradient` (dL/dself).
  void backward(const Tensor& gradient = Tensor(), bool retain_graph = false) const;
  Tensor& set_name(std::string name);
  const std::string& name() const;

  // --- in place, never recorded by autograd (optimizers, initialization) ---
  Tensor& zero_();
  Tensor& fill_(float value);
  Tensor& copy_(const Tensor& src);  // src broadcast to this shape
  Tensor& add_(const Tensor& other, float alpha = 1.0f);
  Tensor& mul_(float value);
  Tensor clone() const;  // a contiguous copy that keeps history (CloneBackward0)

  // --- the ops as methods, as PyTorch spells them (defined in ops.hpp) ---
  Tensor view(Shape shape) const;
  Tensor reshape(Shape shape) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor squeeze(std::optional<int64_t> dim = std::nullopt) const;
  Tensor expand(Shape shape) const;
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor permute(std::vector<int64_t> dims) const;
  Tensor t() const { return transpose(0, 1); }
  Tensor contiguous() const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor slice(int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end,
               int64_t step = 1) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor operator[](int64_t index) const { return select(0, index); }

  Tensor sum(std::vector<int64_t> dims = {}, bool keepdim = false) const;
  Tensor mean(std::vector<int64_t> dims = {}, bool keepdim = false) const;
  Tensor var(std::vector<int64_t> dims = {}, bool unbiased = true, bool keepdim = false) const;
  Tensor max() const;
  Tensor min() const;
  Tensor argmax(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sqrt() const;
  Tensor rsqrt() const;
  Tensor tanh() const;
  Tensor sigmoid() const;
  Tensor relu() const;
  Tensor abs() const;
  Tensor pow(float exponent) const;
  Tensor pow(const Tensor& exponent) const;
  Tensor clamp(std::optional<float> min, std::optional<float> max = std::nullopt) const;
  Tensor matmul(const Tensor& other) const;
  Tensor softmax(int64_t dim) const;
  Tensor log_softmax(int64_t dim) const;
  Tensor masked_fill(const Tensor& mask, float value) const;
  Tensor eq(float value) const;
  Tensor to(Dtype dtype) const;

 private:
  std::shared_ptr<TensorImpl> impl_;
};

// --- factories (PyTorch's names) ---
Tensor empty(Shape shape, Dtype dtype = kFloat32);
Tensor zeros(Shape shape, Dtype dtype = kFloat32);
Tensor ones(Shape shape, Dtype dtype = kFloat32);
Tensor full(Shape shape, float value, Dtype dtype = kFloat32);
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor arange(double end, Dtype dtype = kInt64);
Tensor arange(double start, double end, double step = 1, Dtype dtype = kInt64);
Tensor tensor(const NestedList& values);
Tensor tensor(const NestedList& values, Dtype dtype);
Tensor from_vector(const std::vector<float>& values, Shape shape);
Tensor from_vector(const std::vector<int64_t>& values, Shape shape);
// Random tensors draw from the global generator (see random.hpp): reproducible after
// manual_seed, for a fixed thread count.
Tensor randn(Shape shape);
Tensor rand(Shape shape);
Tensor randint(int64_t low, int64_t high, Shape shape);
// Lower / upper triangle of the last two dims; the rest is zero.
Tensor tril(const Tensor& t, int64_t diagonal = 0);
Tensor triu(const Tensor& t, int64_t diagonal = 0);

// --- shape helpers shared by the ops ---
int64_t numel_of(const Shape& shape);
std::vector<int64_t> contiguous_strides(const Shape& shape);
// Wraps a possibly negative dim into [0, ndim), or throws "Dimension out of range".
int64_t wrap_dim(const char* op, int64_t dim, int64_t ndim);
Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b);
// Throws unless t is a defined float32 tensor (int64 tensors hold ids, not values).
void check_float(const char* op, const Tensor& t);
// Throws Error(describe(id)) for the first of `ids` outside [0, size).
template <typename Describe>
void check_ids(const std::vector<int64_t>& ids, int64_t size, Describe describe) {
  for (int64_t id : ids)
    if (id < 0 || id >= size) throw Error(describe(id));
}

}  // namespace anatomy
