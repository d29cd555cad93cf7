// Every op of the library, named as in torch and torch.nn.functional. Each is defined with its
// backward beside its forward in the .cpp file named in its section.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "autograd/tensor.hpp"

namespace anatomy {

// --- elementwise.cpp: NumPy/PyTorch broadcasting ---
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor add(const Tensor& a, float b);
Tensor mul(const Tensor& a, float b);
Tensor rsub(float a, const Tensor& b);  // a - b
Tensor rdiv(float a, const Tensor& b);  // a / b
Tensor neg(const Tensor& a);
Tensor pow(const Tensor& a, float exponent);
Tensor pow(const Tensor& a, const Tensor& exponent);
Tensor exp(const Tensor& a);
Tensor log(const Tensor& a);
Tensor sqrt(const Tensor& a);
Tensor rsqrt(const Tensor& a);
Tensor tanh(const Tensor& a);
Tensor sigmoid(const Tensor& a);
Tensor relu(const Tensor& a);
// approximate: "none" (exact, with erf) or "tanh", as in torch.nn.functional.gelu.
Tensor gelu(const Tensor& a, const std::string& approximate = "none");
Tensor abs(const Tensor& a);
Tensor clamp(const Tensor& a, std::optional<float> min, std::optional<float> max);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
// cond is a mask (nonzero = true): cond ? a : b.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor masked_fill(const Tensor& a, const Tensor& mask, float value);
// Comparisons give masks of 0 and 1 (float32; this library has no bool dtype) with no gradient.
// Each against another tensor (broadcast) or against a number, as torch.eq(input, other).
Tensor eq(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, float b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, float b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, float b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, float b);
Tensor ge(const Tensor& a, const Tensor& b);
// Sums a gradient of a broadcast result back down to `shape` (undoes broadcasting).
Tensor sum_to(const Tensor& grad, const Shape& shape);

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a);
Tensor operator+(const Tensor& a, float b);
Tensor operator+(float a, const Tensor& b);
Tensor operator-(const Tensor& a, float b);
Tensor operator-(float a, const Tensor& b);
Tensor operator*(const Tensor& a, float b);
Tensor operator*(float a, const Tensor& b);
Tensor operator/(const Tensor& a, float b);
Tensor operator/(float a, const Tensor& b);

// --- reduction.cpp: dims empty = all dims ---
Tensor sum(const Tensor& a, std::vector<int64_t> dims = {}, bool keepdim = false);
Tensor mean(const Tensor& a, std::vector<int64_t> dims = {}, bool keepdim = false);
Tensor var(const Tensor& a, std::vector<int64_t> dims = {}, bool unbiased = true,
           bool keepdim = false);
Tensor logsumexp(const Tensor& a, std::vector<int64_t> dims, bool keepdim = false);
// Largest (smallest) value of all elements; the gradient is shared evenly among ties.
Tensor amax(const Tensor& a, std::vector<int64_t> dims = {}, bool keepdim = false);
Tensor amin(const Tensor& a, std::vector<int64_t> dims = {}, bool keepdim = false);
// Values and int64 indices along one dim (torch.max(x, dim)); the gradient goes to the index.
std::pair<Tensor, Tensor> max(const Tensor& a, int64_t dim, bool keepdim = false);
std::pair<Tensor, Tensor> min(const Tensor& a, int64_t dim, bool keepdim = false);
Tensor max(const Tensor& a);
Tensor min(const Tensor& a);
Tensor argmax(const Tensor& a, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor argmin(const Tensor& a, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);

// --- linalg.cpp ---
// torch.matmul: 1-D dot, 2-D mm, 1-D/2-D promotion, batched N-D with broadcast batch dims.
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor mm(const Tensor& a, const Tensor& b);
Tensor bmm(const Tensor& a, const Tensor& b);
// x Wᵀ + b, with W of shape [out_features, in_features]; bias may be undefined.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());
// gelu(linear(x, weight, bias), approximate) in one pass over the output: the GEMM applies GELU
// to each block of C it finishes (PyTorch's _addmm_activation), and the backward computes GELU's
// derivative and the bias gradient together. The feed-forward layer's first half.
Tensor linear_gelu(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
                   const std::string& approximate = "none");

// --- view.cpp: results share storage with the input ---
Tensor view(const Tensor& a, Shape shape);
Tensor reshape(const Tensor& a, Shape shape);
Tensor flatten(const Tensor& a, int64_t start_dim = 0, int64_t end_dim = -1);
Tensor unsqueeze(const Tensor& a, int64_t dim);
Tensor squeeze(const Tensor& a, std::optional<int64_t> dim = std::nullopt);
Tensor expand(const Tensor& a, Shape shape);  // -1 keeps a size
Tensor transpose(const Tensor& a, int64_t dim0, int64_t dim1);
Tensor permute(const Tensor& a, std::vector<int64_t> dims);
Tensor contiguous(const Tensor& a);
// The book's x[:, 0, :] is select(x, 1, 0); x[:, 1:3] is slice(x, 1, 1, 3).
Tensor select(const Tensor& a, int64_t dim, int64_t index);
Tensor slice(const Tensor& a, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end,
             int64_t step = 1);
Tensor narrow(const Tensor& a, int64_t dim, int64_t start, int64_t length);
std::vector<Tensor> split(const Tensor& a, int64_t split_size, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& a, const std::vector<int64_t>& sizes, int64_t dim = 0);
std::vector<Tensor> chunk(const Tensor& a, int64_t chunks, int64_t dim = 0);

// --- indexing.cpp: copies ---
Tensor index_select(const Tensor& a, int64_t dim, const Tensor& index);
Tensor gather(const Tensor& a, int64_t dim, const Tensor& index);
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);

// --- functional.cpp: fused kernels of torch.nn.functional ---
Tensor softmax(const Tensor& a, int64_t dim);
Tensor log_softmax(const Tensor& a, int64_t dim);
// Normalizes over the trailing dims given by normalized_shape; weight and bias may be undefined.
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), float eps = 1e-5f);
Tensor dropout(const Tensor& x, float p = 0.5f, bool training = true);
// A Transformer layer's residual connection and the norm after it, in two passes instead of
// three, with no buffer for the dropped-out x: sum = residual + dropout(x, p, training) (the same
// random draws as dropout()), and normed = layer_norm(sum, ...). Pre-LN layers use both (sum is the
// next residual, normed the next sublayer's input), post-LN layers only normed. Gradients are those
// of the composed ops.
struct DropoutAddLayerNorm {
  Tensor sum, normed;
};
DropoutAddLayerNorm dropout_add_layer_norm(const Tensor& x, const Tensor& residual, float p,
                                           bool training, const Shape& normalized_shape,
                                           const Tensor& weight = Tensor(),
                                           const Tensor& bias = Tensor(), float eps = 1e-5f);
// Rows of `weight` picked by int64 `indices`; no gradient flows to row padding_idx.
Tensor embedding(const Tensor& indices, const Tensor& weight,
                 std::optional<int64_t> padding_idx = std::nullopt);
struct CrossEntropyOptions {
  int64_t ignore_index = -100;
  float label_smoothing = 0.0f;
  std::string reduction = "mean";  // "mean", "sum" or "none"
  // If set, also receives the loss without label smoothing (the plain NLL), reduced the same way
  // ("mean" or "sum"), from the same pass: what fairseq's label_smoothed_nll_loss returns beside
  // the loss, and what a validation loss is compared with.
  double* nll = nullptr;
};
// Logits [N, C] (or [C], or [N, C, d1, ...]) against int64 class targets [N] ([], [N, d1, ...]).
Tensor cross_entropy(const Tensor& logits, const Tensor& target,
                     const CrossEntropyOptions& options = {});
Tensor mse_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean");

// --- flash_attention.cpp ---
struct FlashAttentionOptions {
  Tensor bias;  // float, broadcasting to [..., Tq, Tk], added to the scaled scores (may need grad)
  Tensor mask;  // 0/1, broadcasting to [..., Tq, Tk]: where 0 the key is hidden (score -inf)
  float dropout_p = 0.0f;  // dropout on the weights, in training only
  bool training = false;
};
// softmax(query keyᵀ / √D + bias, masked) value for query [..., Tq, D], key [..., Tk, D] and
// value [..., Tk, Dv] with the same batch dims, fused: the [..., Tq, Tk] weights are never formed
// (see flash_attention.cpp). A query whose every key is hidden gets zeros. Its result and
// gradients are those of the composed ops, dropout's random draws included.
Tensor flash_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                       const FlashAttentionOptions& options = {});

}  // namespace anatomy
