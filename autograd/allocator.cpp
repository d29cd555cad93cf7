#include "autograd/allocator.hpp"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ANATOMY_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define ANATOMY_ASAN 1
#endif

namespace anatomy {

namespace {

constexpr size_t kAlign = 64;
constexpr size_t kSmallest = 4096;  // below this the system's heap is already fast

// Four classes per power of two: a request of b bytes, 2^k < b <= 2^(k+1), is rounded up to a
// multiple of 2^(k-2).
size_t size_class(size_t bytes) {
  if (bytes <= kSmallest) return (std::max<size_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign;
  const int k = std::bit_width(bytes - 1) - 1;
  const size_t step = size_t{1} << (k - 2);
  return (bytes + step - 1) / step * step;
}

void* system_allocate(size_t rounded) {
  void* p = std::aligned_alloc(kAlign, rounded);
  if (!p) throw std::bad_alloc();
  return p;
}

struct Cache {
  std::mutex mutex;
  std::unordered_map<size_t, std::vector<void*>> free;  // size class -> buffers
#ifdef ANATOMY_ASAN
  size_t limit = 0;
#else
  size_t limit = size_t{256} << 20;
#endif
  AllocatorStats stats;

  // Frees cached buffers until at most `keep` bytes are cached. Holds the lock.
  void trim(size_t keep) {
    for (auto& [bytes, list] : free) {
      while (stats.cached_bytes > keep && !list.empty()) {
        std::free(list.back());
        list.pop_back();
        stats.cached_bytes -= bytes;
      }
    }
  }
};

// Never destroyed: tensors held in static objects are freed after main returns, and must still
// find the cache.
Cache& cache() {
  static Cache* c = new Cache;
  return *c;
}

}  // namespace

void* allocate_bytes(size_t bytes) {
  const size_t rounded = size_class(bytes);
  Cache& c = cache();
  {
    std::lock_guard lock(c.mutex);
    c.stats.in_use_bytes += rounded;
    if (rounded > kSmallest) {
      auto it = c.free.find(rounded);
      if (it != c.free.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        c.stats.cached_bytes -= rounded;
        ++c.stats.hits;
        return p;
      }
      ++c.stats.misses;
    }
  }
  try {
    return system_allocate(rounded);
  } catch (...) {
    std::lock_guard lock(c.mutex);
    c.stats.in_use_bytes -= rounded;
    throw;
  }
}

void free_bytes(void* p, size_t bytes) noexcept {
  if (!p) return;
  const size_t rounded = size_class(bytes);
  Cache& c = cache();
  {
    std::lock_guard lock(c.mutex);
    c.stats.in_use_bytes -= rounded;
    if (rounded > kSmallest && c.stats.cached_bytes + rounded <= c.limit) {
      try {
        c.free[rounded].push_back(p);
        c.stats.cached_bytes += rounded;
        return;
      } catch (...) {  // no memory for the list entry: give the buffer back instead
      }
    }
  }
  std::free(p);
}

AllocatorStats allocator_stats() {
  Cache& c = cache();
  std::lock_guard lock(c.mutex);
  return c.stats;
}

void empty_cache() {
  Cache& c = cache();
  std::lock_guard lock(c.mutex);
  c.trim(0);
}

void set_cache_limit(size_t bytes) {
  Cache& c = cache();
  std::lock_guard lock(c.mutex);
  c.limit = bytes;
  c.trim(bytes);
}

size_t cache_limit() {
  Cache& c = cache();
  std::lock_guard lock(c.mutex);
  return c.limit;
}

}  // namespace anatomy
