// flash_attention: softmax(Q Kᵀ / √D + bias, masked) V as one op that never holds the whole
// [..., Tq, Tk] weights (FlashAttention, Dao et al. 2022, the way PyTorch's CPU kernel does it).
//
// Forward, per head and block of up to kRowBlock query rows: the block's scores go into a small
// scratch tile, become weights by a stable softmax, and are multiplied into the values at once;
// each row keeps only its log-sum-exp L. Backward recomputes the tile's weights from L
// (w = exp(s - L)) instead of reading them back, so memory stays O(Tq) per head, not O(Tq·Tk).
// Dropout on the weights draws the same numbers as dropout() would on the whole weight tensor:
// each row jumps the generator to its place in that stream, so forward and backward (and any
// thread count) agree with the composed version.
//
// A mask that hides every key past some point for a whole block of rows (the causal mask hides
// the upper triangle) lets that block skip those keys: their weights are exactly 0, so leaving
// them out of the products and the softmax changes no value. Such masks get blocks of
// kMaskedRowBlock rows, so that a causal block of 64 rows reads 40 keys on average, not 64.
//
// Dimension letters: G the batch dims flattened (B·H), Tq queries, Tk keys, D the size of a
// query and key, Dv the size of a value.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <unordered_map>

#include "autograd/dispatch.hpp"
#include "autograd/fused_kernels.hpp"
#include "autograd/ops.hpp"
#include "autograd/random.hpp"
#include "kernels/gemm.hpp"
#include "kernels/parallel_draws.hpp"
#include "kernels/simd.hpp"

namespace anatomy {

namespace {

constexpr int64_t kRowBlock = 64;
constexpr int64_t kMaskedRowBlock = 16;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// One operand as G matrices: where each starts, and its row and column strides. `full` is the
// operand's shape with the batch dims it broadcasts to (size-1 dims then get stride 0).
struct Matrices {
  const float* data = nullptr;
  std::vector<int64_t> offset;
  int64_t rs = 0, cs = 0;
};

Matrices matrices(const Tensor& t, const Shape& full) {
  Matrices m;
  if (!t.defined()) return m;
  const Tensor e = t.expand(full);
  const int64_t nd = e.dim();
  const int64_t G = e.numel() / std::max<int64_t>(e.size(-1) * e.size(-2), 1);
  m.data = e.data();
  m.rs = e.stride(-2);
  m.cs = e.stride(-1);
  m.offset.resize(static_cast<size_t>(G));
  // The batch dims' sizes and strides, read once: a decoding step has G = rows x heads of
  // one-query matrices, and this loop runs for each of them.
  std::vector<int64_t> sizes, strides;
  for (int64_t d = nd - 3; d >= 0; --d) sizes.push_back(e.size(d)), strides.push_back(e.stride(d));
  for (int64_t g = 0; g < G; ++g) {
    int64_t rem = g, off = 0;
    for (size_t d = 0; d < sizes.size(); ++d) {
      off += rem % sizes[d] * strides[d];
      rem /= sizes[d];
    }
    m.offset[static_cast<size_t>(g)] = off;
  }
  return m;
}

std::vector<float>& scratch(int which, size_t n) {
  static thread_local std::vector<float> tiles[3];
  auto& t = tiles[which];
  if (t.size() < n) t.resize(n);
  return t;
}

struct Problem {
  int64_t G, Tq, Tk, D, Dv;
  float scale;  // 1/√D, multiplied as PyTorch's CPU kernel does (a vector divide costs several)
  Matrices q, k, v, bias, mask;
  float dropout_p;
  bool dropout;
  Generator start;  // the generator before this op's draws
  int64_t row_block = kRowBlock, blocks = 0;
  std::vector<int64_t> key_end;  // per (g, block): keys past this one are hidden from all its rows

  int64_t keys(int64_t g, int64_t block) const {
    return key_end.empty() ? Tk : key_end[static_cast<size_t>(g * blocks + block)];
  }
};

// Splits the rows into blocks and finds, per block, how many leading keys any of its rows sees.
// Matrices that share one mask (every head of a sequence) are scanned once. Small blocks pay only
// when they skip keys; without a mask, or when a tenth or less would be skipped, blocks stay big.
void plan_blocks(Problem& p) {
  p.blocks = (p.Tq + kRowBlock - 1) / kRowBlock;
  if (!p.mask.data || p.Tq <= kMaskedRowBlock) return;
  const int64_t blocks = (p.Tq + kMaskedRowBlock - 1) / kMaskedRowBlock;
  std::vector<int64_t> ends(static_cast<size_t>(p.G * blocks));
  std::unordered_map<int64_t, int64_t> scanned;  // mask offset -> the first g with it
  int64_t visible = 0;
  for (int64_t g = 0; g < p.G; ++g) {
    const auto [first, fresh] = scanned.emplace(p.mask.offset[static_cast<size_t>(g)], g);
    for (int64_t b = 0; b < blocks; ++b) {
      int64_t end = 0;
      if (!fresh) {
        end = ends[static_cast<size_t>(first->second * blocks + b)];
      } else {
        for (int64_t i = b * kMaskedRowBlock; i < std::min(p.Tq, (b + 1) * kMaskedRowBlock); ++i) {
          const float* m = p.mask.data + first->first + i * p.mask.rs;
          for (int64_t j = p.Tk - 1; j >= end; --j)
            if (m[j * p.mask.cs] != 0.0f) {
              end = j + 1;
              break;
            }
        }
      }
      ends[static_cast<size_t>(g * blocks + b)] = end;
      visible += end;
    }
  }
  if (10 * visible >= 9 * p.G * blocks * p.Tk) return;
  p.row_block = kMaskedRowBlock;
  p.blocks = blocks;
  p.key_end = std::move(ends);
}

// The products q·k of rows [i0, i0 + rows) of matrix g with its first `keys` keys, into s
// (rows x keys): the scores before scaling, bias and mask.
void products(const Problem& p, int64_t g, int64_t i0, int64_t rows, int64_t keys, float* s) {
  const size_t gi = static_cast<size_t>(g);
  // (rows, D) x (D, keys): Kᵀ is K read with its strides swapped.
  gemm(rows, keys, p.D, p.q.data + p.q.offset[gi] + i0 * p.q.rs, p.q.rs, p.q.cs,
       p.k.data + p.k.offset[gi], p.k.cs, p.k.rs, s, keys, false);
}

// Where row i of matrix g's bias and mask begin (null: none).
const float* bias_row(const Problem& p, int64_t g, int64_t i) {
  return p.bias.data ? p.bias.data + p.bias.offset[static_cast<size_t>(g)] + i * p.bias.rs
                     : nullptr;
}
const float* mask_row(const Problem& p, int64_t g, int64_t i) {
  return p.mask.data ? p.mask.data + p.mask.offset[static_cast<size_t>(g)] + i * p.mask.rs
                     : nullptr;
}

// A row of up to simd::kRowVectors vectors of keys is computed in registers: its products are
// loaded once, scaled, biased, masked, made weights (or gradients) and stored once, where scalar
// loops and vector passes over the row would each store what the next one loads. Longer rows, or
// a bias or mask whose keys are not side by side, go through the passes (scale_rows,
// softmax_rows, weights_rows, softmax_grad_rows).
bool in_registers(const Problem& p, int64_t keys) {
  return simd::row_fits(keys) && (!p.bias.data || p.bias.cs == 1) &&
         (!p.mask.data || p.mask.cs == 1);
}

// A row's products as softmax's input: x · scale + bias, -inf where the mask hides a key, and -inf
// in the lanes past the last key, which then add nothing to a maximum or a sum of exps.
template <int NV>
[[gnu::always_inline]] inline void load_scores(const float* row, const float* bias,
                                               const float* mask, int64_t keys, float scale,
                                               simd::batch (&v)[NV]) {
  const simd::batch hidden(kNegInf), sb(scale);
  for (int c = 0; c < NV; ++c) {
    const simd::batch products = simd::row_load<NV>(row, c, keys, kNegInf);
    // One rounding with a bias (a fused multiply-add), whichever way the compiler would contract.
    simd::batch x =
        bias ? xsimd::fma(products, sb, simd::row_load<NV>(bias, c, keys)) : products * sb;
    if (mask) x = xsimd::select(simd::row_load<NV>(mask, c, keys) == simd::batch(0.0f), hidden, x);
    v[c] = x;
  }
}

// The rows of a block are computed in groups of R (kGroupRows), each group's vectors side by
// side. A row alone is one long chain of dependent steps (a maximum across lanes, the exps, a sum
// across lanes, a divide), and the core waits on each of them; R independent chains fill those
// waits. Each row's values are computed as they would be alone (R = 1), so the bits are the same.
// 8 vectors a group, sized for AVX-512's 32 registers.
template <int NV>
inline constexpr int kGroupRows = NV >= 8 ? 1 : 8 / NV;

// Where R consecutive rows from row i of matrix g find their bias, mask and dropout multipliers
// (drop: Tk per row; null: none).
template <int R>
struct RowInputs {
  const float *bias[R], *mask[R], *drop[R];
  RowInputs(const Problem& p, int64_t g, int64_t i, const float* drop_rows) {
    for (int r = 0; r < R; ++r) {
      bias[r] = bias_row(p, g, i + r);
      mask[r] = mask_row(p, g, i + r);
      drop[r] = drop_rows ? drop_rows + r * p.Tk : nullptr;
    }
  }
};

// fn(r, R) for the groups of rows [0, rows): R = kGroupRows<NV> rows from r, then the rows
// left one at a time (R = 1), R a std::integral_constant.
template <int NV, typename F>
void in_groups(int64_t rows, F&& fn) {
  constexpr int R = kGroupRows<NV>;
  int64_t r = 0;
  for (; r + R <= rows; r += R) fn(r, std::integral_constant<int, R>{});
  for (; r < rows; ++r) fn(r, std::integral_constant<int, 1>{});
}

// softmax of R rows of s (keys floats apart) in place, each weight times its dropout multiplier;
// their log-sum-exps into lse (-inf for a row with every key hidden: its weights are then 0, not
// NaN).
template <int NV, int R>
void softmax_group(float* s, const RowInputs<R>& in, int64_t keys, float scale, float* lse) {
  simd::batch v[R][NV];
  float top[R], total[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
    load_scores<NV>(s + r * keys, in.bias[r], in.mask[r], keys, scale, v[r]);
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    simd::batch top_v = v[r][0];
    for (int c = 1; c < NV; ++c) top_v = simd::extremum<true>(top_v, v[r][c]);
    top[r] = xsimd::any(xsimd::isnan(top_v)) ? std::numeric_limits<float>::quiet_NaN()
                                             : simd::hmax(top_v);
  }
  // A row with every key hidden (top -inf) computes NaNs here; it is written over below.
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    const simd::batch tb(top[r]);
    simd::batch total_v(0.0f);
    for (int c = 0; c < NV; ++c) {
      v[r][c] = xsimd::exp(v[r][c] - tb);
      total_v += v[r][c];
    }
    total[r] = xsimd::hadd(total_v);
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    const simd::batch inv(1.0f / total[r]);
    for (int c = 0; c < NV; ++c) {
      simd::batch w = v[r][c] * inv;
      if (in.drop[r]) w = w * simd::row_load<NV>(in.drop[r], c, keys);
      simd::row_store<NV>(s + r * keys, c, keys, w);
    }
  }
  for (int r = 0; r < R; ++r) {
    if (top[r] == kNegInf) {
      std::fill(s + r * keys, s + (r + 1) * keys, 0.0f);
      lse[r] = kNegInf;
    } else {
      lse[r] = top[r] + std::log(total[r]);
    }
  }
}

// The forward's weights of R rows again from their log-sum-exps l: w = exp(score - l), in place;
// with dropout, also a = w ⊙ the multipliers into `a` (keys floats from row to row, as s).
template <int NV, int R>
void weights_group(float* s, const RowInputs<R>& in, float* a, int64_t keys, float scale,
                   const float* l) {
  simd::batch v[R][NV];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
    load_scores<NV>(s + r * keys, in.bias[r], in.mask[r], keys, scale, v[r]);
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    const simd::batch lb(l[r]);
    for (int c = 0; c < NV; ++c) {
      const simd::batch w = l[r] == kNegInf ? simd::batch(0.0f) : xsimd::exp(v[r][c] - lb);
      simd::row_store<NV>(s + r * keys, c, keys, w);
      if (in.drop[r])
        simd::row_store<NV>(a + r * keys, c, keys, w * simd::row_load<NV>(in.drop[r], c, keys));
    }
  }
}

// dS = w ⊙ (dW - Σ w ⊙ dW) for R rows, dW = dA ⊙ the dropout multipliers, in place of dA (d),
// then times the scale (s = q·k / √D). The bias's gradient, dS itself, goes to db (row r's at
// db + r * Tk; null: none).
template <int NV, int R>
void softmax_grad_group(const float* w, float* d, const RowInputs<R>& in, float* db, int64_t Tk,
                        int64_t keys, float scale) {
  simd::batch wv[R][NV], dv[R][NV];
  float dot[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    simd::batch dot_v(0.0f);
    for (int c = 0; c < NV; ++c) {
      wv[r][c] = simd::row_load<NV>(w + r * keys, c, keys);
      dv[r][c] = simd::row_load<NV>(d + r * keys, c, keys);
      if (in.drop[r]) dv[r][c] = dv[r][c] * simd::row_load<NV>(in.drop[r], c, keys);
      dot_v = xsimd::fma(wv[r][c], dv[r][c], dot_v);
    }
    dot[r] = xsimd::hadd(dot_v);
  }
  const simd::batch sb(scale);
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    const simd::batch dot_r(dot[r]);
    for (int c = 0; c < NV; ++c) {
      const simd::batch ds = wv[r][c] * (dv[r][c] - dot_r);
      if (db) simd::row_store<NV>(db + r * Tk, c, keys, ds);
      simd::row_store<NV>(d + r * keys, c, keys, ds * sb);
    }
  }
}

// The passes, for rows that do not fit in registers (see in_registers).

// s's rows (rows x keys, from products) scaled, biased and masked.
void scale_rows(const Problem& p, int64_t g, int64_t i0, int64_t rows, int64_t keys, float* s) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = s + r * keys;
    const float* b = bias_row(p, g, i0 + r);
    const float* m = mask_row(p, g, i0 + r);
    for (int64_t j = 0; j < keys; ++j) row[j] *= p.scale;
    if (b)
      for (int64_t j = 0; j < keys; ++j) row[j] += b[j * p.bias.cs];
    if (m)
      for (int64_t j = 0; j < keys; ++j)
        if (m[j * p.mask.cs] == 0.0f) row[j] = kNegInf;
  }
}

// softmax of s's rows in place, times their dropout multipliers (drop, Tk per row; null: none),
// their log-sum-exps into l, as softmax_group.
void softmax_rows(float* s, int64_t rows, int64_t keys, const float* drop, int64_t Tk, float* l) {
  for (int64_t r = 0; r < rows; ++r) {
    float* w = s + r * keys;
    const float top = keys > 0 ? simd::max(w, keys) : kNegInf;
    if (top == kNegInf) {  // every key hidden: no weight anywhere, not NaN
      std::fill(w, w + keys, 0.0f);
      l[r] = kNegInf;
      continue;
    }
    const simd::batch mb(top);
    simd::map_range(w, w, keys, [&](simd::batch x) { return xsimd::exp(x - mb); });
    const float total = simd::sum(w, keys);
    const simd::batch inv(1.0f / total);
    simd::map_range(w, w, keys, [&](simd::batch x) { return x * inv; });
    if (drop)
      simd::map2_range(w, 1, drop + r * Tk, 1, w, keys,
                       [](simd::batch x, simd::batch mv) { return x * mv; });
    l[r] = top + std::log(total);
  }
}

// The weights of s's rows again from their log-sum-exps l, as weights_group.
void weights_rows(float* s, int64_t rows, int64_t keys, const float* drop, int64_t Tk,
                  const float* l, float* a) {
  for (int64_t r = 0; r < rows; ++r) {
    float* w = s + r * keys;
    if (l[r] == kNegInf) {
      std::fill(w, w + keys, 0.0f);
    } else {
      const simd::batch lb(l[r]);
      simd::map_range(w, w, keys, [&](simd::batch x) { return xsimd::exp(x - lb); });
    }
    if (drop)
      simd::map2_range(w, 1, drop + r * Tk, 1, a + r * keys, keys,
                       [](simd::batch x, simd::batch mv) { return x * mv; });
  }
}

// The softmax's gradients of rows, as softmax_grad_group (db: row r's at db + r * Tk).
void softmax_grad_rows(const float* w, float* d, int64_t rows, int64_t keys, const float* drop,
                       float* db, int64_t Tk, float scale) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* wr = w + r * keys;
    float* dr = d + r * keys;
    if (drop)
      simd::map2_range(dr, 1, drop + r * Tk, 1, dr, keys,
                       [](simd::batch x, simd::batch mv) { return x * mv; });
    const simd::batch dot(simd::dot(wr, dr, keys));
    simd::map2_range(wr, 1, dr, 1, dr, keys,
                     [&](simd::batch wv, simd::batch dv) { return wv * (dv - dot); });
    if (db) std::copy_n(dr, keys, db + r * Tk);
    for (int64_t j = 0; j < keys; ++j) dr[j] *= scale;
  }
}

// The dropout multipliers of rows [i0, i0 + rows) of matrix g (1/(1-p) kept, 0 dropped), Tk per
// row: the draws dropout() makes for those elements of the [G, Tq, Tk] weights. The rows are
// consecutive in the stream, so one jump and one fill serve them all, not a jump and a fill per
// short row.
void dropout_rows(const Problem& p, int64_t g, int64_t i0, int64_t rows, float* m) {
  Generator gen = p.start;
  gen.advance(static_cast<uint64_t>((g * p.Tq + i0) * p.Tk));
  const simd::batch keep(p.dropout_p == 1.0f ? 0.0f : 1.0f / (1.0f - p.dropout_p)),
      drop(p.dropout_p);
  uniform_fill(gen, m, rows * p.Tk);
  simd::map_range(m, m, rows * p.Tk,
                  [&](simd::batch u) { return xsimd::select(u >= drop, keep, simd::batch(0.0f)); });
}

// What one call computes on: the problem, the tensors its matrices point into, and the shapes
// of the operands and the output. The forward makes it; the backward reads it.
struct Plan {
  Problem p;
  Tensor q, k, v, bias, mask;  // detached; the mask as float
  Shape q_shape, k_shape, v_shape, scores_shape, out_shape;
};

// The plan of softmax(Q Kᵀ/√D + bias, masked) V; with dropout, the default generator moves past
// the op's draws, as dropout() over the whole weights would move it.
std::shared_ptr<Plan> plan(const Tensor& query, const Tensor& key, const Tensor& value,
                           const FlashAttentionOptions& o) {
  auto plan = std::make_shared<Plan>();
  Problem& p = plan->p;
  Shape lead(query.shape().begin(), query.shape().end() - 2);
  p.Tq = query.size(-2);
  p.Tk = key.size(-2);
  p.D = query.size(-1);
  p.Dv = value.size(-1);
  p.G = 1;
  for (int64_t s : lead) p.G *= s;
  p.scale = 1.0f / std::sqrt(static_cast<float>(p.D));
  plan->q_shape = query.shape(), plan->k_shape = key.shape(), plan->v_shape = value.shape();
  plan->scores_shape = plan->out_shape = lead;
  plan->scores_shape.insert(plan->scores_shape.end(), {p.Tq, p.Tk});
  plan->out_shape.insert(plan->out_shape.end(), {p.Tq, p.Dv});
  plan->q = query.detach(), plan->k = key.detach(), plan->v = value.detach();
  plan->bias = o.bias.defined() ? o.bias.detach() : Tensor();
  plan->mask = o.mask.defined() ? o.mask.detach().to(Dtype::Float32) : Tensor();
  Shape q_full = lead, k_full = lead, v_full = lead;
  q_full.insert(q_full.end(), {p.Tq, p.D});
  k_full.insert(k_full.end(), {p.Tk, p.D});
  v_full.insert(v_full.end(), {p.Tk, p.Dv});
  p.q = matrices(plan->q, q_full);
  p.k = matrices(plan->k, k_full);
  p.v = matrices(plan->v, v_full);
  p.bias = matrices(plan->bias, plan->scores_shape);
  p.mask = matrices(plan->mask, plan->scores_shape);
  p.dropout_p = o.dropout_p;
  p.dropout = o.training && o.dropout_p > 0.0f;
  p.start = default_generator();
  if (p.dropout)  // the draws of dropout() over the whole [G, Tq, Tk] weights
    default_generator().advance(static_cast<uint64_t>(p.G * p.Tq * p.Tk));
  plan_blocks(p);
  return plan;
}

// One block of rows of matrix g, forward: scores, weights, and weights x V into o (row stride
// out_rs); each row's log-sum-exp into l.
void forward_block(const Problem& p, int64_t g, int64_t block, float* o, int64_t out_rs, float* l) {
  float* s = scratch(0, static_cast<size_t>(p.row_block * p.Tk)).data();
  float* m = scratch(1, static_cast<size_t>(p.row_block * p.Tk)).data();
  const int64_t i0 = block * p.row_block;
  const int64_t rows = std::min(p.row_block, p.Tq - i0), keys = p.keys(g, block);
  products(p, g, i0, rows, keys, s);
  if (p.dropout) dropout_rows(p, g, i0, rows, m);
  if (in_registers(p, keys)) {
    simd::with_row_vectors(keys, [&](auto nv) {
      constexpr int NV = decltype(nv)::value;
      in_groups<NV>(rows, [&](int64_t r, auto group) {
        constexpr int R = decltype(group)::value;
        const RowInputs<R> in(p, g, i0 + r, p.dropout ? m + r * p.Tk : nullptr);
        softmax_group<NV, R>(s + r * keys, in, keys, p.scale, l + r);
      });
    });
  } else {
    scale_rows(p, g, i0, rows, keys, s);
    softmax_rows(s, rows, keys, p.dropout ? m : nullptr, p.Tk, l);
  }
  // (rows, keys) x (keys, Dv) -> (rows, Dv)
  const size_t gi = static_cast<size_t>(g);
  gemm(rows, p.Dv, keys, s, keys, 1, p.v.data + p.v.offset[gi], p.v.rs, p.v.cs, o + i0 * out_rs,
       out_rs, false);
}

FlashAttentionSaved fast_flash_attention(const Tensor& query, const Tensor& key,
                                         const Tensor& value, const FlashAttentionOptions& o) {
  std::shared_ptr<Plan> saved = plan(query, key, value, o);
  const Problem& p = saved->p;
  // Heads' outputs [B, H, Tq, Dv] are laid out as [B, Tq, H, Dv], as PyTorch's CPU flash
  // attention lays them: the usual next step, out.transpose(1, 2).reshape({B, Tq, H * Dv}), is
  // then a view, where it copied all of out (and its backward copied the gradient back).
  const bool heads_inner = saved->out_shape.size() == 4;
  const int64_t heads = heads_inner ? saved->out_shape[1] : 1;
  Tensor out = heads_inner ? empty({saved->out_shape[0], p.Tq, heads, p.Dv}).transpose(1, 2)
                           : empty(saved->out_shape);
  const int64_t out_rs = heads * p.Dv;  // from one query row of a head to the next
  Tensor lse = empty({p.G * p.Tq});     // log Σ exp(scores) per row; -inf for a row with no key
  parallel_for(p.G * p.blocks, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t g = t / p.blocks;
      float* o_g = out.data() + g / heads * p.Tq * out_rs + g % heads * p.Dv;
      forward_block(p, g, t % p.blocks, o_g, out_rs,
                    lse.data() + g * p.Tq + t % p.blocks * p.row_block);
    }
  });
  return {out, lse, saved};
}

// Where one head's backward writes: dQ, dK and dV of matrix g, and d bias (null: not wanted).
struct HeadGrads {
  float *dq, *dk, *dv, *db;
};

// One block of rows of matrix g, backward: recomputes the block's weights from the log-sum-exps l,
// then adds its share into dV and dK and writes its rows of dQ and d bias. dout: the block's
// first row of dO, rows dm_rs apart.
void backward_block(const Problem& p, int64_t g, int64_t block, const float* dout, int64_t dm_rs,
                    const float* l, const HeadGrads& d) {
  float* s = scratch(0, static_cast<size_t>(p.row_block * p.Tk)).data();
  float* da = scratch(1, static_cast<size_t>(p.row_block * p.Tk)).data();
  float* m = scratch(2, static_cast<size_t>(p.row_block * p.Tk)).data();
  const size_t gi = static_cast<size_t>(g);
  const int64_t i0 = block * p.row_block, rows = std::min(p.row_block, p.Tq - i0);
  const int64_t keys = p.keys(g, block);
  products(p, g, i0, rows, keys, s);
  if (p.dropout) dropout_rows(p, g, i0, rows, m);
  const float* drop = p.dropout ? m : nullptr;  // row r's at drop + r * p.Tk
  const bool fast = in_registers(p, keys);
  // s becomes the weights w, and with dropout da the dropped-out weights a = w ⊙ m
  if (fast) {
    simd::with_row_vectors(keys, [&](auto nv) {
      constexpr int NV = decltype(nv)::value;
      in_groups<NV>(rows, [&](int64_t r, auto group) {
        constexpr int R = decltype(group)::value;
        weights_group<NV, R>(s + r * keys,
                             RowInputs<R>(p, g, i0 + r, drop ? drop + r * p.Tk : nullptr),
                             da + r * keys, keys, p.scale, l + r);
      });
    });
  } else {
    scale_rows(p, g, i0, rows, keys, s);
    weights_rows(s, rows, keys, drop, p.Tk, l, da);
  }
  // dV += aᵀ dO: (keys, rows) x (rows, Dv); without dropout a is w itself
  gemm(keys, p.Dv, rows, drop ? da : s, 1, keys, dout, dm_rs, 1, d.dv, p.Dv, true);
  // dA = dO Vᵀ: (rows, Dv) x (Dv, keys)
  gemm(rows, keys, p.Dv, dout, dm_rs, 1, p.v.data + p.v.offset[gi], p.v.cs, p.v.rs, da, keys,
       false);
  // da becomes dS / √D; d bias = dS, 0 for the skipped keys
  float* db = d.db ? d.db + i0 * p.Tk : nullptr;  // row r's at db + r * Tk
  if (db)
    for (int64_t r = 0; r < rows; ++r) std::fill(db + r * p.Tk + keys, db + (r + 1) * p.Tk, 0.0f);
  if (fast) {
    simd::with_row_vectors(keys, [&](auto nv) {
      constexpr int NV = decltype(nv)::value;
      in_groups<NV>(rows, [&](int64_t r, auto group) {
        constexpr int R = decltype(group)::value;
        softmax_grad_group<NV, R>(s + r * keys, da + r * keys,
                                  RowInputs<R>(p, g, i0 + r, drop ? drop + r * p.Tk : nullptr),
                                  db ? db + r * p.Tk : nullptr, p.Tk, keys, p.scale);
      });
    });
  } else {
    softmax_grad_rows(s, da, rows, keys, drop, db, p.Tk, p.scale);
  }
  // dQ = dS K: (rows, keys) x (keys, D)
  gemm(rows, p.D, keys, da, keys, 1, p.k.data + p.k.offset[gi], p.k.rs, p.k.cs, d.dq + i0 * p.D,
       p.D, false);
  // dK += dSᵀ Q: (keys, rows) x (rows, D)
  gemm(keys, p.D, rows, da, 1, keys, p.q.data + p.q.offset[gi] + i0 * p.q.rs, p.q.rs, p.q.cs, d.dk,
       p.D, true);
}

// {dQ, dK, dV, d bias} (d bias with the scores' shape, undefined unless wanted).
std::vector<Tensor> fast_flash_attention_backward(const Tensor& grad, const Tensor& lse,
                                                  const std::shared_ptr<const void>& state,
                                                  bool bias_grad) {
  const Plan& plan = *static_cast<const Plan*>(state.get());
  const Problem& p = plan.p;
  // dO read with its strides (the gradient of the heads-inner layout has them), rows of
  // contiguous values: a view's gradient of another layout is copied first.
  const Tensor dout = grad.stride(-1) == 1 && grad.stride(-2) >= p.Dv ? grad : grad.contiguous();
  const Matrices dm = matrices(dout, plan.out_shape);
  Tensor dq = empty(plan.q_shape), dk = empty(plan.k_shape), dv = empty(plan.v_shape);
  Tensor dbias = bias_grad ? empty(plan.scores_shape) : Tensor();
  // One head per task: its dK and dV sum over all its query rows.
  parallel_for(p.G, 1, [&](int64_t g0, int64_t g1) {
    for (int64_t g = g0; g < g1; ++g) {
      const HeadGrads d{dq.data() + g * p.Tq * p.D, dk.data() + g * p.Tk * p.D,
                        dv.data() + g * p.Tk * p.Dv,
                        bias_grad ? dbias.data() + g * p.Tq * p.Tk : nullptr};
      // Every block adds into dK and dV, each into its first `keys` rows only.
      std::fill(d.dk, d.dk + p.Tk * p.D, 0.0f);
      std::fill(d.dv, d.dv + p.Tk * p.Dv, 0.0f);
      for (int64_t b = 0; b < p.blocks; ++b)
        backward_block(p, g, b,
                       dm.data + dm.offset[static_cast<size_t>(g)] + b * p.row_block * dm.rs, dm.rs,
                       lse.data() + g * p.Tq + b * p.row_block, d);
    }
  });
  return {dq, dk, dv, dbias};
}

}  // namespace

void register_attention_kernels() {
  register_kernel<FlashAttentionKernel>("flash_attention", fast_flash_attention);
  register_kernel<FlashAttentionBackward>("flash_attention_backward",
                                          fast_flash_attention_backward);
}

}  // namespace anatomy
