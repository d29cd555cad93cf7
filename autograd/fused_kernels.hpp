// What the fused ops (functional.cpp, linalg.cpp, attention.cpp) hand their fast kernels in
// kernels/ and what the kernels give back: numbers only. The op checks the arguments and records
// the node, whose backward calls the backward kernel. N rows, C the values of a row.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autograd/ops.hpp"

namespace anatomy {

// dropout: mask = scale where the default generator's draw (in element order) is >= p, else 0.
using DropoutKernel = void(const Tensor& x, float p, float scale, const Tensor& mask,
                           const Tensor& out);

// layer_norm of x's rows, with x̂ and 1/σ [N] for its backward: {dx, dw, db} (where defined).
struct LayerNormSaved {
  Tensor out, xhat, rstd;
};
using LayerNormKernel = LayerNormSaved(const Tensor& x, int64_t N, int64_t C, const Tensor& weight,
                                       const Tensor& bias, float eps);
using LayerNormBackward = std::vector<Tensor>(const Tensor& grad, const Tensor& xhat,
                                              const Tensor& rstd, const Tensor& weight,
                                              const Tensor& bias, int64_t N, int64_t C);

// dropout_add_layer_norm: sum = residual + x ⊙ mask (no mask: no dropout), and sum's layer norm.
struct DropoutAddSaved {
  Tensor sum, mask;
  LayerNormSaved norm;
};
using DropoutAddLayerNormKernel = DropoutAddSaved(const Tensor& x, const Tensor& residual, float p,
                                                  bool training, int64_t N, int64_t C,
                                                  const Tensor& weight, const Tensor& bias,
                                                  float eps);

// linear_gelu: {gelu(h), h = x Wᵀ + b when asked for}; backward: {g ⊙ gelu'(h), Σ_rows of it}.
using LinearGeluKernel = std::pair<Tensor, Tensor>(const Tensor& x, const Tensor& weight,
                                                   const Tensor& bias,
                                                   const std::string& approximate,
                                                   bool keep_pre_activation);
using LinearGeluBackward = std::pair<Tensor, Tensor>(const Tensor& grad, const Tensor& h,
                                                     const std::string& approximate, bool want_db);

// flash_attention: the output, each query row's log-sum-exp, and the kernel's own plan of the
// problem; backward: {dq, dk, dv, d bias with the scores' shape (when asked for)}.
struct FlashAttentionSaved {
  Tensor out, lse;
  std::shared_ptr<const void> plan;
};
using FlashAttentionKernel = FlashAttentionSaved(const Tensor& query, const Tensor& key,
                                                 const Tensor& value,
                                                 const FlashAttentionOptions& options);
using FlashAttentionBackward = std::vector<Tensor>(const Tensor& grad, const Tensor& lse,
                                                   const std::shared_ptr<const void>& plan,
                                                   bool bias_grad);

// cross_entropy's logits as rows: [C] -> [1, C]; [N, C, d...] -> [N·d..., C] (target order).
struct CrossEntropyRows {
  Tensor x;                      // [N, C], contiguous, detached
  std::vector<int64_t> targets;  // [N]
  int64_t N = 0, C = 0;
  int64_t count = 0;  // targets that are not ignore_index: what "mean" divides by
};
// cross_entropy: losses[n] (and nlls[n] when options.nll is set) of the rows not ignored; its
// backward: grad_rows[n] = (softmax(x_n) - (1-ε) onehot(t_n) - ε/C) · scales[n], ε the smoothing.
using CrossEntropyForward = void(const CrossEntropyRows& rows, const CrossEntropyOptions& options,
                                 std::vector<float>& losses, std::vector<float>& nlls);
using CrossEntropyBackward = void(const CrossEntropyRows& rows, const std::vector<float>& scales,
                                  float label_smoothing, const Tensor& grad_rows);

}  // namespace anatomy
