#include "autograd/memory.hpp"

#include <algorithm>
#include <cstdlib>

namespace anatomy {

[[gnu::weak]] MemorySource fast_memory_source = {nullptr, nullptr};

namespace {

constexpr size_t kAlign = 64;

}  // namespace

void* allocate_bytes(size_t bytes) {
  if (fast_memory_source.allocate) return fast_memory_source.allocate(bytes);
  // aligned_alloc takes a multiple of the alignment, at least one.
  void* p = std::aligned_alloc(kAlign, std::max<size_t>(1, (bytes + kAlign - 1) / kAlign) * kAlign);
  if (!p) throw std::bad_alloc();
  return p;
}

void free_bytes(void* p, size_t bytes) noexcept {
  if (!p) return;
  if (fast_memory_source.free)
    fast_memory_source.free(p, bytes);
  else
    std::free(p);
}

}  // namespace anatomy
