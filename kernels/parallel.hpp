// parallel_for: the one way the kernels use more than one core.
//
// A fixed pool of worker threads, woken in about a microsecond, runs the chunks of a loop. Why
// not OpenMP: its threads spin at every barrier for a long time, so on a machine whose cores are
// busy with other programs (a student's browser and editor) a step waited whole scheduler slices
// for a thread that was not running. Here a loop's chunks are claimed one at a time from a shared
// range, the caller from its front and the workers from its back (so with two threads each core
// runs the same part of every loop): whichever thread is running takes the next one, and a worker
// that is asleep or descheduled is simply not waited for. Workers spin briefly after a loop (the
// next one usually comes within microseconds), then sleep. A worker that stops mid-chunk, though,
// is waited for: when that happens (another program took its core), the loops that follow run on
// the calling thread alone for a while, so that a busy machine costs about what one thread would,
// not more.
//
// Chunk boundaries depend only on the loop's size, its grain and the thread count, never on
// which thread runs a chunk, so a kernel that writes per-chunk results and combines them in chunk
// order is deterministic for a fixed thread count.
#pragma once

#include <algorithm>
#include <cstdint>

namespace anatomy {

// Threads used by the kernels: set_num_threads(n), else the OMP_NUM_THREADS environment variable
// (as PyTorch reads it), else the cores this process may run on. set_num_threads(0) goes back to
// that default.
int get_num_threads();
void set_num_threads(int n);

// True inside a chunk of a parallel loop (a nested parallel_for then runs inline).
bool in_parallel();

namespace detail {
// Runs call(ctx, c) for every chunk c in [0, chunks), on the pool and the calling thread.
void run_chunks(int64_t chunks, void (*call)(void*, int64_t), void* ctx);
// For the tests: every `every`-th loop (0: never), the caller pauses `microseconds` between
// storing the loop and publishing it, the moment a worker still busy with the previous loop could
// read half of it; the pause makes that moment long enough for a test to reach.
void pause_publishing_for_testing(int every, int microseconds);
// True while loops run on the calling thread alone because a worker stalled mid-loop (see the
// pool's note_wait); set_num_threads ends that. Not from inside a chunk.
bool running_alone();
// For the tests: how long loops first run alone after a stall (20 ms unless set).
void set_first_backoff_for_testing(int milliseconds);
// One step of a spin-wait: x86's pause, which tells the core that this thread only waits (less
// power, and a waiting loop that does not flood the memory system). On 64-bit ARM an isb, which
// stalls the core for a few dozen cycles as pause does (ARM's yield hint is a no-op on most
// cores, so a loop of it spins at full speed); nothing elsewhere.
inline void spin_pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("isb" ::: "memory");
#endif
}
}  // namespace detail

// How many chunks parallel_for(n, grain, ...) makes: up to eight per thread (so a thread that falls
// behind leaves its neighbours work to take, and the caller's wait at the end of a loop for the
// chunk still running elsewhere is short), each at least `grain` long.
inline int64_t parallel_chunks(int64_t n, int64_t grain) {
  const int threads = in_parallel() ? 1 : get_num_threads();
  if (threads <= 1 || n <= grain) return 1;
  const int64_t most = static_cast<int64_t>(threads) * 8;
  return std::clamp<int64_t>(n / std::max<int64_t>(grain, 1), 1, most);
}

// Where chunk k of parallel_for's `chunks` chunks of [0, n) begins (k = chunks: n).
inline int64_t parallel_chunk_begin(int64_t n, int64_t chunks, int64_t k, int64_t align = 1) {
  return k >= chunks ? n : n * k / chunks / align * align;
}

// fn(begin, end) over [0, n), split into parallel_chunks(n, grain) contiguous ranges. Every chunk
// but the last starts at a multiple of `align` (a SIMD width, say), so the split never changes
// which elements share a vector.
template <typename F>
void parallel_for(int64_t n, int64_t grain, F&& fn, int64_t align = 1) {
  if (n <= 0) return;
  const int64_t chunks = parallel_chunks(n, grain);
  if (chunks == 1) {
    fn(int64_t{0}, n);
    return;
  }
  struct Ctx {
    F& fn;
    int64_t n, chunks, align;
  } ctx{fn, n, chunks, align};
  detail::run_chunks(
      chunks,
      [](void* p, int64_t c) {
        auto& x = *static_cast<Ctx*>(p);
        const int64_t b = parallel_chunk_begin(x.n, x.chunks, c, x.align),
                      e = parallel_chunk_begin(x.n, x.chunks, c + 1, x.align);
        if (b < e) x.fn(b, e);
      },
      &ctx);
}

}  // namespace anatomy
