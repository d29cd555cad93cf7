// The worker pool behind parallel_for (see parallel.hpp for why it is not OpenMP).
//
// One loop runs at a time. The caller publishes it by bumping `generation_` (with the loop's
// call, context and chunk count stored first, in the slot of its generation's parity); workers
// see the bump, then claim chunks with a compare-and-swap on `next_`, which packs the generation
// with the range of chunks not yet claimed, so a worker that wakes late can never claim a chunk of
// a loop that has already finished. The caller claims chunks too and returns once `done_` counts
// every chunk.
//
// The caller claims from the front of the range and the workers from its back. With two threads
// each then runs the same half of every loop (unless the other is late), and a loop's half of a
// tensor is the one the same core wrote in the loop before: a product's share of rows
// (thread_shares) and an elementwise op's first chunks. Claimed in turns from the front, half of
// an elementwise op's chunks would go to the other core and their data cross between the cores'
// caches. A chunk's work does not depend on the thread that runs it, so the bits are the same.
//
// Why two slots: a worker reads next_, then the loop's fields, then claims. With one set of
// fields, the caller could publish the next loop between those reads; the worker would then
// compare the old loop's exhausted chunk index with the new loop's larger count, claim it (next_
// still holding the old value) and run a chunk of the new loop that is run again later, while
// another is counted done without running. The fields of loop g stay in slot g % 2 until loop
// g + 2 is published, and by then next_ has moved on, so a claim that succeeds read the right
// fields.
#include "kernels/parallel.hpp"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "platform/platform.hpp"

namespace anatomy {

namespace {

thread_local bool inside_chunk = false;

// A loop run by the calling thread alone (nested, or while another thread's loop has the pool).
void run_inline(int64_t chunks, void (*call)(void*, int64_t), void* ctx) {
  struct Inside {
    bool was = inside_chunk;
    Inside() { inside_chunk = true; }
    ~Inside() { inside_chunk = was; }
  } inside;
  for (int64_t c = 0; c < chunks; ++c) call(ctx, c);
}

int default_threads() {
  if (const char* env = std::getenv("OMP_NUM_THREADS")) {
    char* end = nullptr;
    const long n = std::strtol(env, &end, 10);
    if (end != env && n >= 1 && n <= 1024) return static_cast<int>(n);
  }
  return platform::usable_cpus();
}

using Clock = std::chrono::steady_clock;

// How long an idle thread spins before it sleeps: long enough to catch the next loop of a
// training step (they come microseconds apart), short enough not to steal a busy core for long.
constexpr auto kSpin = std::chrono::microseconds(50);

// Chunk indices take 16 bits each in the pool's `next_`; a loop of more chunks runs inline
// (parallel_for makes at most eight per thread).
constexpr uint64_t kChunkMask = 0xffff;

template <typename Ready>
void spin_then_wait(Ready ready, const std::atomic<uint32_t>& word, uint32_t old) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 1;; ++i) {
    if (ready()) return;
    detail::spin_pause();
    if (i % 64 == 0 && std::chrono::steady_clock::now() - start > kSpin) break;
  }
  while (!ready()) {
    word.wait(old, std::memory_order_acquire);
    old = word.load(std::memory_order_acquire);
  }
}

class Pool {
 public:
  static Pool& get() {
    static Pool pool;
    return pool;
  }

  int threads() const { return threads_.load(std::memory_order_relaxed); }

  void set_threads(int n) {
    std::lock_guard lock(run_mutex_);
    stop_workers();
    threads_.store(n > 0 ? n : default_threads(), std::memory_order_relaxed);
    alone_until_ = {};
    backoff_ = first_backoff_;
    stalled_ = {};
  }

  void run(int64_t chunks, void (*call)(void*, int64_t), void* ctx) {
    // One loop at a time; a second thread that calls in meanwhile runs its loop alone.
    std::unique_lock lock(run_mutex_, std::try_to_lock);
    if (!lock.owns_lock()) return run_inline(chunks, call, ctx);
    const auto start = Clock::now();
    if (start < alone_until_) return run_inline(chunks, call, ctx);
    start_workers();
    const uint32_t gen = generation_.load(std::memory_order_relaxed) + 1;
    Loop& loop = loops_[gen % 2];
    loop.call.store(call, std::memory_order_relaxed);
    loop.ctx.store(ctx, std::memory_order_relaxed);
    loop.chunks.store(chunks, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
    if (const int every = pause_every_.load(std::memory_order_relaxed);
        every > 0 && gen % every == 0)
      std::this_thread::sleep_for(std::chrono::microseconds(pause_us_.load()));
    next_.store(pack(gen, 0, static_cast<uint32_t>(chunks)), std::memory_order_release);
    generation_.store(gen, std::memory_order_release);
    generation_.notify_all();
    work(gen, true);
    const auto mine_done = Clock::now();
    uint32_t seen = done_.load(std::memory_order_acquire);
    const auto all = static_cast<uint32_t>(chunks);
    spin_then_wait([&] { return done_.load(std::memory_order_acquire) == all; }, done_, seen);
    note_wait(mine_done - start, Clock::now() - mine_done);
    // A chunk that threw: every other chunk has finished, so the loop's data is no longer in
    // use; the caller gets the first exception, as from a plain loop.
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

  ~Pool() { stop_workers(); }

  void pause_publishing(int every, int microseconds) {
    pause_us_.store(microseconds);
    pause_every_.store(every);
  }

  bool alone() {
    std::lock_guard lock(run_mutex_);
    return Clock::now() < alone_until_;
  }

  void set_first_backoff(Clock::duration d) {
    std::lock_guard lock(run_mutex_);
    first_backoff_ = backoff_ = d;
    alone_until_ = {};
    stalled_ = {};
  }

 private:
  // After the caller ran out of chunks, it waited `waited` for the workers' last ones. A chunk
  // takes no longer than the caller's own share (`busy`) plus a worker's wake-up, so a wait
  // longer than that by a millisecond means a worker stopped mid-chunk: the scheduler ran someone
  // else on its core. On a busy machine that comes back loop after loop, each waiting
  // milliseconds where loops take tens of microseconds, and two threads then take longer than
  // one. So once such waits add up to kStallBudget, the loops that follow run on the caller alone
  // for a while, doubling each time the stalls come back soon after, up to a second, and back to
  // the shortest once the loops have not gone alone for kCalm. Running alone runs the same chunks
  // in order, so the results are the same bits.
  // The waits drain at kStallShare of the time that passes: a cloud machine's host also takes a
  // vCPU away now and then, for a few milliseconds, with nothing else running in the machine, and
  // going alone at every such stall would cost more than the stalls themselves.
  void note_wait(Clock::duration busy, Clock::duration waited) {
    const auto now = Clock::now();
    stalled_ = std::max<Clock::duration>(Clock::duration::zero(),
                                         stalled_ - (now - last_note_) / kStallShare);
    last_note_ = now;
    if (waited <= busy + kStall) {
      if (now - last_alone_ > kCalm) backoff_ = first_backoff_;
      return;
    }
    stalled_ += waited - busy;
    if (stalled_ < kStallBudget) return;
    stalled_ = Clock::duration::zero();
    alone_until_ = now + backoff_;
    backoff_ = std::min<Clock::duration>(backoff_ * 2, kMaxBackoff);
    last_alone_ = now;
  }

  // next_: the generation, then the first and one past the last chunk not yet claimed.
  static uint64_t pack(uint32_t gen, uint32_t front, uint32_t back) {
    return uint64_t{gen} << 32 | uint64_t{front} << 16 | back;
  }

  // Claims and runs chunks of loop `gen` until none is left.
  // `caller`: the thread that published the loop, which claims from the front.
  void work(uint32_t gen, bool caller) {
    for (;;) {
      uint64_t cur = next_.load(std::memory_order_acquire);
      // Read the loop before claiming: a successful claim proves these belong to `gen`.
      const Loop& loop = loops_[gen % 2];
      auto* call = loop.call.load(std::memory_order_relaxed);
      void* ctx = loop.ctx.load(std::memory_order_relaxed);
      const int64_t chunks = loop.chunks.load(std::memory_order_relaxed);
      const auto front = static_cast<uint32_t>(cur >> 16 & kChunkMask);
      const auto back = static_cast<uint32_t>(cur & kChunkMask);
      if (static_cast<uint32_t>(cur >> 32) != gen || front >= back || back > chunks) return;
      const uint32_t chunk = caller ? front : back - 1;
      const uint64_t want = caller ? pack(gen, front + 1, back) : pack(gen, front, back - 1);
      if (!next_.compare_exchange_weak(cur, want, std::memory_order_acq_rel)) continue;
      inside_chunk = true;
      try {
        call(ctx, chunk);
      } catch (...) {
        std::lock_guard lock(error_mutex_);
        if (!error_) error_ = std::current_exception();
      }
      inside_chunk = false;
      if (done_.fetch_add(1, std::memory_order_acq_rel) + 1 == static_cast<uint32_t>(chunks))
        done_.notify_one();
    }
  }

  // `seen` is the generation before the worker started: a loop published since is still run.
  void worker_loop(uint32_t seen) {
    for (;;) {
      spin_then_wait(
          [&] {
            return generation_.load(std::memory_order_acquire) != seen ||
                   stop_.load(std::memory_order_acquire);
          },
          generation_, seen);
      if (stop_.load(std::memory_order_acquire)) return;
      seen = generation_.load(std::memory_order_acquire);
      work(seen, false);
    }
  }

  void start_workers() {
    const int want = threads() - 1;
    if (static_cast<int>(workers_.size()) == want) return;
    stop_workers();
    stop_.store(false);
    const uint32_t seen = generation_.load(std::memory_order_acquire);
    for (int i = 0; i < want; ++i) workers_.emplace_back([this, seen] { worker_loop(seen); });
  }

  void stop_workers() {
    if (workers_.empty()) return;
    stop_.store(true, std::memory_order_release);
    generation_.fetch_add(1, std::memory_order_acq_rel);  // wakes them; no chunk to claim
    generation_.notify_all();
    for (auto& t : workers_) t.join();
    workers_.clear();
  }

  std::mutex run_mutex_;
  std::atomic<int> threads_{default_threads()};
  std::vector<std::thread> workers_;
  std::atomic<bool> stop_{false};
  std::atomic<uint32_t> generation_{0};
  std::atomic<uint64_t> next_{0};
  struct Loop {
    std::atomic<void (*)(void*, int64_t)> call{nullptr};
    std::atomic<void*> ctx{nullptr};
    std::atomic<int64_t> chunks{0};
  };
  Loop loops_[2];                                  // loop g's fields are in loops_[g % 2]
  std::atomic<int> pause_every_{0}, pause_us_{0};  // pause_publishing_for_testing
  std::atomic<uint32_t> done_{0};
  std::mutex error_mutex_;
  std::exception_ptr error_;
  // note_wait's state, used by the thread that holds run_mutex_.
  static constexpr Clock::duration kStall = std::chrono::milliseconds(1);
  static constexpr Clock::duration kStallBudget = std::chrono::milliseconds(10);
  static constexpr int kStallShare = 8;  // an eighth of the time may go to stalls
  static constexpr Clock::duration kCalm = std::chrono::seconds(2);
  static constexpr Clock::duration kMaxBackoff = std::chrono::seconds(1);
  Clock::duration first_backoff_ = std::chrono::milliseconds(20), backoff_ = first_backoff_;
  Clock::duration stalled_{};  // the stalls' waits, drained as time passes
  Clock::time_point alone_until_{}, last_alone_{}, last_note_{};
};

}  // namespace

int get_num_threads() { return Pool::get().threads(); }
void set_num_threads(int n) { Pool::get().set_threads(n); }
bool in_parallel() { return inside_chunk; }

namespace detail {
void run_chunks(int64_t chunks, void (*call)(void*, int64_t), void* ctx) {
  if (chunks <= 0) return;
  if (chunks == 1 || inside_chunk || static_cast<uint64_t>(chunks) > kChunkMask)
    return run_inline(chunks, call, ctx);
  Pool::get().run(chunks, call, ctx);
}
void pause_publishing_for_testing(int every, int microseconds) {
  Pool::get().pause_publishing(every, microseconds);
}
bool running_alone() { return Pool::get().alone(); }
void set_first_backoff_for_testing(int milliseconds) {
  Pool::get().set_first_backoff(std::chrono::milliseconds(milliseconds));
}
}  // namespace detail

}  // namespace anatomy
