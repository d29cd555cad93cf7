#include "tokenizers/bpe_merges.hpp"

#include <queue>

namespace anatomy::text {

namespace {

// A merge that applies at a place of the word: the symbol `left` and the one after it.
struct Candidate {
  int64_t left, rank, merged;
};

// The queue's top is the lowest rank, then the leftmost place.
struct LaterFirst {
  bool operator()(const Candidate& a, const Candidate& b) const {
    return a.rank != b.rank ? a.rank > b.rank : a.left > b.left;
  }
};

}  // namespace

void BpeMerges::add(int64_t left, int64_t right, int64_t merged) {
  merges_.insert({key(left, right), {static_cast<int64_t>(merges_.size()), merged}});
}

const BpeMerges::Merge* BpeMerges::find(int64_t left, int64_t right) const {
  if (left < 0 || right < 0) return nullptr;
  const auto it = merges_.find(key(left, right));
  return it == merges_.end() ? nullptr : &it->second;
}

std::vector<BpeMerges::Symbol> BpeMerges::apply(const std::vector<Symbol>& word) const {
  // The symbols as a linked list, so that a merge joins two neighbours in place; a queue of the
  // merges that apply, checked again when taken, since the neighbours may have changed since.
  std::vector<Symbol> symbols = word;
  std::vector<int64_t> prev(symbols.size()), next(symbols.size());
  std::vector<bool> gone(symbols.size(), false);
  for (size_t i = 0; i < symbols.size(); ++i) {
    prev[i] = static_cast<int64_t>(i) - 1;
    next[i] = i + 1 < symbols.size() ? static_cast<int64_t>(i) + 1 : -1;
  }
  std::priority_queue<Candidate, std::vector<Candidate>, LaterFirst> queue;
  auto consider = [&](int64_t left) {
    const int64_t right = next[static_cast<size_t>(left)];
    if (right < 0) return;
    if (const Merge* m =
            find(symbols[static_cast<size_t>(left)].id, symbols[static_cast<size_t>(right)].id))
      queue.push({left, m->rank, m->merged});
  };
  for (size_t i = 0; i + 1 < symbols.size(); ++i) consider(static_cast<int64_t>(i));
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    const auto l = static_cast<size_t>(top.left);
    if (gone[l] || next[l] < 0) continue;
    const auto r = static_cast<size_t>(next[l]);
    const Merge* m = find(symbols[l].id, symbols[r].id);
    if (m == nullptr || m->merged != top.merged) continue;  // the neighbours changed since
    symbols[l].id = top.merged;
    symbols[l].end = symbols[r].end;
    gone[r] = true;
    next[l] = next[r];
    if (next[l] >= 0) prev[static_cast<size_t>(next[l])] = top.left;
    if (prev[l] >= 0) consider(prev[l]);
    consider(top.left);
  }
  std::vector<Symbol> out;
  for (size_t i = 0; i < symbols.size(); ++i)
    if (!gone[i]) out.push_back(symbols[i]);
  return out;
}

}  // namespace anatomy::text
