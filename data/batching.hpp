// Batches for training: sequences of similar length together (length bucketing), as many as
// fit a token budget, padded with [PAD] (id 0).
//   source      [B, S]  the source ids
//   target_in   [B, T]  [BOS] y1 ... yn   (what the decoder reads)
//   target_out  [B, T]  y1 ... yn [EOS]   (what it must predict; [PAD] is ignored by the loss)
#pragma once

#include <cstdint>
#include <vector>

#include "autograd/tensor.hpp"

namespace anatomy::data {

struct Batch {
  Tensor source, target_in, target_out;
  int64_t target_tokens = 0;  // non-pad targets, for tokens/s and loss normalization
  std::vector<int64_t> rows;  // which examples, in order
};

struct BatchOptions {
  int64_t max_tokens = 4096;  // per batch, counting padding: rows x longest sequence
  int64_t max_rows = 0;       // 0: no limit
  bool shuffle = true;        // shuffle within equal lengths and the order of batches
  uint64_t seed = 0;
  int64_t pad_id = 0, bos_id = 2, eos_id = 3;
};

std::vector<Batch> make_batches(const std::vector<std::vector<int64_t>>& sources,
                                const std::vector<std::vector<int64_t>>& targets,
                                const BatchOptions& options);

// Rows of ids padded into [B, max length] (for inference).
Tensor pad_batch(const std::vector<std::vector<int64_t>>& rows, int64_t pad_id = 0);

}  // namespace anatomy::data
