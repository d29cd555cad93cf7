// The caching allocator behind every tensor's storage.
//
// A training step allocates the same few hundred buffers every time (activations, gradients,
// temporaries) and frees them all by its end. Handed back to the system, each large buffer comes
// back next step as fresh pages that the kernel must fault in and zero one 4 KiB page at a time.
// So freed buffers are kept, by size class, and the next request of that class takes one back:
// after the first step a steady-state step allocates nothing from the system (PyTorch's CUDA
// caching allocator does the same for GPU memory; `empty_cache()` has its name).
//
// Size classes are four per power of two (4096, 5120, 6144, 7168, 8192, 10240, ...), so a
// request wastes less than a quarter of its size and buffers of nearby sizes (batches of varying
// length) share a class. When its own class has no buffer cached, a request takes one of a larger
// class up to twice its size. Requests under 4 KiB go straight to the system, which serves them
// from its own small-object heap without faults. The cache holds at most `cache_limit` bytes; a
// buffer freed beyond that goes back to the system.
//
// Under AddressSanitizer every buffer goes straight to the system: a reused buffer would hide a
// use-after-free.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>

namespace anatomy {

struct AllocatorStats {
  size_t in_use_bytes = 0;  // handed out and not yet freed (by size class)
  size_t cached_bytes = 0;  // freed, kept for reuse
  int64_t hits = 0;         // requests served from the cache
  int64_t misses = 0;       // requests that went to the system
};
AllocatorStats allocator_stats();

// Returns every cached buffer to the system (torch.cuda.empty_cache's name).
void empty_cache();
// The most the cache keeps (default 256 MiB: what it adds to a process's peak memory at worst);
// 0 turns caching off. Shrinks the cache if needed.
void set_cache_limit(size_t bytes);
size_t cache_limit();

}  // namespace anatomy
