#include "kernels/caching_allocator.hpp"

#include "autograd/memory.hpp"
#include "platform/platform.hpp"

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

// Buffers of 2 MiB and more are placed on 2 MiB boundaries and offered to the kernel as
// transparent huge pages: a first touch then faults in 2 MiB at once instead of 512 pages of
// 4 KiB. (Translating a file meets new buffer sizes with every batch, and on a virtual machine
// each fault is expensive.)
constexpr size_t kHugePage = size_t{2} << 20;

void* system_allocate(size_t rounded) {
  const bool huge = rounded >= kHugePage;
  void* p = huge ? std::aligned_alloc(kHugePage, (rounded + kHugePage - 1) / kHugePage * kHugePage)
                 : std::aligned_alloc(kAlign, rounded);
  if (!p) throw std::bad_alloc();
  if (huge) platform::advise_huge_pages(p, rounded);
  return p;
}

struct Cache {
  std::mutex mutex;
  std::unordered_map<size_t, std::vector<void*>> free;  // size class -> buffers
  // Buffers handed out for a smaller class than their own, with their own: freeing one returns
  // it to its real class.
  std::unordered_map<void*, size_t> lent_larger;
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

void* cached_allocate(size_t bytes) {
  const size_t rounded = size_class(bytes);
  Cache& c = cache();
  {
    std::lock_guard lock(c.mutex);
    c.stats.in_use_bytes += rounded;
    if (rounded > kSmallest) {
      // The request's own class first, then a cached buffer up to twice its size: decoding's
      // batch shrinks step by step as sentences end, and every smaller size would otherwise be
      // a fresh buffer from the system (and its pages faulted in once more).
      for (size_t cls = rounded; cls <= 2 * rounded; cls = size_class(cls + 1)) {
        auto it = c.free.find(cls);
        if (it == c.free.end() || it->second.empty()) continue;
        void* p = it->second.back();
        it->second.pop_back();
        if (cls != rounded) {
          try {
            c.lent_larger.emplace(p, cls);
          } catch (...) {  // no memory to note it: put it back and go to the system
            it->second.push_back(p);
            break;
          }
          c.stats.in_use_bytes += cls - rounded;
        }
        c.stats.cached_bytes -= cls;
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

void cached_free(void* p, size_t bytes) noexcept {
  if (!p) return;
  size_t rounded = size_class(bytes);
  Cache& c = cache();
  {
    std::lock_guard lock(c.mutex);
    if (rounded > kSmallest && !c.lent_larger.empty()) {
      if (auto it = c.lent_larger.find(p); it != c.lent_larger.end()) {
        rounded = it->second;
        c.lent_larger.erase(it);
      }
    }
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

// Every tensor's buffers come from here (autograd/memory.hpp).
MemorySource fast_memory_source = {cached_allocate, cached_free};

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
