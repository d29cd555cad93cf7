#include "data/batching.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "autograd/random.hpp"

namespace anatomy::data {

Tensor pad_batch(const std::vector<std::vector<int64_t>>& rows, int64_t pad) {
  size_t len = 1;
  for (const auto& r : rows) len = std::max(len, r.size());
  std::vector<int64_t> flat(rows.size() * len, pad);
  for (size_t i = 0; i < rows.size(); ++i)
    std::copy(rows[i].begin(), rows[i].end(), flat.begin() + i * len);
  return from_vector(flat, {static_cast<int64_t>(rows.size()), static_cast<int64_t>(len)});
}

std::vector<Batch> make_batches(const std::vector<std::vector<int64_t>>& sources,
                                const std::vector<std::vector<int64_t>>& targets,
                                const BatchOptions& o) {
  if (sources.size() != targets.size())
    throw Error(
        fmt::format("make_batches: {} sources but {} targets", sources.size(), targets.size()));
  Generator g(o.seed);
  std::vector<int64_t> order(sources.size());
  std::iota(order.begin(), order.end(), 0);
  if (o.shuffle)
    for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[g.next_u32() % i]);
  // Bucket by length (stable, so equal lengths keep the shuffled order).
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return std::max(sources[a].size(), targets[a].size() + 1) <
           std::max(sources[b].size(), targets[b].size() + 1);
  });
  std::vector<Batch> batches;
  std::vector<int64_t> rows;
  size_t longest = 0;
  auto flush = [&] {
    if (rows.empty()) return;
    Batch b;
    b.rows = rows;
    std::vector<std::vector<int64_t>> src, tin, tout;
    for (int64_t r : rows) {
      src.push_back(sources[r]);
      std::vector<int64_t> in{o.bos_id}, out;
      in.insert(in.end(), targets[r].begin(), targets[r].end());
      out.insert(out.end(), targets[r].begin(), targets[r].end());
      out.push_back(o.eos_id);
      b.target_tokens += static_cast<int64_t>(out.size());
      tin.push_back(std::move(in));
      tout.push_back(std::move(out));
    }
    b.source = pad_batch(src, o.pad_id);
    b.target_in = pad_batch(tin, o.pad_id);
    b.target_out = pad_batch(tout, o.pad_id);
    batches.push_back(std::move(b));
    rows.clear();
    longest = 0;
  };
  for (int64_t r : order) {
    const size_t len = std::max(sources[r].size(), targets[r].size() + 1);
    const size_t next_longest = std::max(longest, len);
    const bool full = (static_cast<int64_t>(next_longest * (rows.size() + 1)) > o.max_tokens) ||
                      (o.max_rows > 0 && static_cast<int64_t>(rows.size()) >= o.max_rows);
    if (!rows.empty() && full) flush();
    rows.push_back(r);
    longest = std::max(longest, len);
  }
  flush();
  if (o.shuffle)
    for (size_t i = batches.size(); i > 1; --i)
      std::swap(batches[i - 1], batches[g.next_u32() % i]);
  return batches;
}

}  // namespace anatomy::data
