// Where a tensor's bytes come from. The reference asks the system for each buffer (64-byte
// aligned, as SIMD loads like). A program that links kernels/ gets its caching allocator instead,
// which keeps freed buffers for reuse.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>

namespace anatomy {

// 64-byte aligned, uninitialized; free_bytes takes the size that allocate_bytes was given.
void* allocate_bytes(size_t bytes);
void free_bytes(void* p, size_t bytes) noexcept;

// Another source of buffers. memory.cpp defines an empty one as a weak symbol, and
// kernels/caching_allocator.cpp one with its functions: the linker keeps that one when the program
// links kernels/. Being a constant, it is in force before the first tensor is made, even a tensor
// in a static object, so that every buffer goes back to the source it came from.
struct MemorySource {
  void* (*allocate)(size_t bytes);
  void (*free)(void* p, size_t bytes) noexcept;
};
extern MemorySource fast_memory_source;

// The std::allocator interface over allocate_bytes, for the storage's xtensor buffers.
template <typename T>
struct BufferAllocator {
  using value_type = T;
  BufferAllocator() = default;
  template <typename U>
  BufferAllocator(const BufferAllocator<U>&) noexcept {}
  T* allocate(size_t n) {
    if (n > SIZE_MAX / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(allocate_bytes(n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) noexcept { free_bytes(p, n * sizeof(T)); }
  template <typename U>
  struct rebind {
    using other = BufferAllocator<U>;
  };
  friend bool operator==(const BufferAllocator&, const BufferAllocator&) { return true; }
  friend bool operator!=(const BufferAllocator&, const BufferAllocator&) { return false; }
};

}  // namespace anatomy
