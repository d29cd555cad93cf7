// parallel_for and the kernels that use it: every index once, the split on aligned boundaries,
// exceptions reach the caller, a loop from a second thread is safe, and results with two threads
// are the one-thread results (bit for bit where each element is computed by one chunk).
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>

#include "helpers.hpp"

using namespace anatomy;
using namespace anatomy::testing;

namespace {

// Sets the thread count for one test and puts the old one back.
struct Threads {
  int before = get_num_threads();
  explicit Threads(int n) { set_num_threads(n); }
  ~Threads() { set_num_threads(before); }
};

// The threads that ran a loop of 8 chunks, each sleeping 5 ms: long enough for every thread of
// the pool to claim some. With `wait_for_a_worker`, the chunks also wait (10 s at most) until a
// second thread has claimed one, so that a worker the scheduler wakes late, on a busy machine,
// still shows.
std::set<std::thread::id> ids_of_sleepy_loop(bool wait_for_a_worker = false) {
  std::mutex m;
  std::set<std::thread::id> ids;
  std::atomic<bool> two{false};
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  parallel_for(8, 1, [&](int64_t, int64_t) {
    {
      std::lock_guard lock(m);
      ids.insert(std::this_thread::get_id());
      if (ids.size() >= 2) two.store(true);
    }
    while (wait_for_a_worker && !two.load() && std::chrono::steady_clock::now() < limit)
      std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  });
  return ids;
}

// A loop of two chunks whose worker's chunk stops, as a chunk does whose thread lost its core.
// The caller's chunk waits until the worker has started (which on a loaded machine may take a
// while); the worker's chunk then lasts that long and `ms` more, so that the caller waits about
// `ms` longer than its own chunk took: what the pool counts as a stall. Returns the caller's
// wait beyond its own chunk, as measured here, or nothing if the worker never started.
using Ms = std::chrono::duration<double, std::milli>;
std::optional<Ms> stalled_loop(int ms) {
  using Clock = std::chrono::steady_clock;
  const auto caller = std::this_thread::get_id();
  const auto start = Clock::now();
  std::atomic<bool> worker_started{false};
  Clock::time_point worker_start;
  parallel_for(2, 1, [&](int64_t, int64_t) {
    if (std::this_thread::get_id() != caller) {
      worker_start = Clock::now();
      worker_started.store(true);
      std::this_thread::sleep_for(worker_start - start + std::chrono::milliseconds(ms));
      return;
    }
    const auto limit = Clock::now() + std::chrono::seconds(10);
    while (!worker_started.load() && Clock::now() < limit) std::this_thread::yield();
  });
  if (!worker_started.load()) return std::nullopt;
  return Ms(Clock::now() - worker_start) - Ms(worker_start - start);
}

}  // namespace

TEST_CASE_FIXTURE(anatomy::testing::FastKernels,
                  "parallel_for visits every index once, in chunks that start on the alignment") {
  Threads two(2);
  for (const int64_t n : {1, 7, 100, 1000, 12345}) {
    CAPTURE(n);
    std::vector<std::atomic<int>> seen(static_cast<size_t>(n));
    std::atomic<int> chunks{0}, misaligned{0};
    parallel_for(
        n, 10,
        [&](int64_t b, int64_t e) {
          ++chunks;
          if (b % 16 != 0) ++misaligned;
          for (int64_t i = b; i < e; ++i) ++seen[static_cast<size_t>(i)];
        },
        16);
    int64_t once = 0;
    for (auto& s : seen) once += s.load() == 1;
    CHECK(once == n);
    CHECK(misaligned.load() == 0);
    // At most 8 chunks per thread, each at least the grain (10) long; rounding the bounds down to
    // the alignment can leave a chunk empty, and an empty chunk is not called.
    CHECK(parallel_chunks(n, 10) == std::clamp<int64_t>(n / 10, 1, 16));
    CHECK(chunks.load() <= parallel_chunks(n, 10));
    CHECK(chunks.load() >= 1);
  }
  // One thread, or a loop inside a chunk: a single chunk, run by the caller.
  CHECK(parallel_chunks(1000, 10) == 16);
  int64_t inner = 0;
  parallel_for(1000, 10, [&](int64_t b, int64_t) {
    if (b == 0) inner = parallel_chunks(1000, 10);
  });
  CHECK(inner == 1);
  set_num_threads(1);
  CHECK(parallel_chunks(1000, 10) == 1);
}

// Two threads means two: the caller and one worker. Chunks that sleep leave every thread time to
// claim some, so a pool with a worker too many would show a third thread id.
TEST_CASE_FIXTURE(anatomy::testing::FastKernels,
                  "parallel_for runs on as many threads as set, the caller among them") {
  Threads two(2);
  const auto ids = ids_of_sleepy_loop(/*wait_for_a_worker=*/true);
  CHECK(ids.size() == 2);
  CHECK(ids.count(std::this_thread::get_id()) == 1);
}

// The caller claims a loop's chunks from the front and the worker from the back, so each runs
// the same part of every loop (the data its core wrote in the loop before). Claimed in turns from
// the front, the caller's chunks were 0, 2, 4, ...: not a prefix. Chunks that sleep give the worker
// time to claim some; the check that it did keeps this test from passing on a caller alone.
TEST_CASE_FIXTURE(
    anatomy::testing::FastKernels,
    "with two threads the caller runs a loop's first chunks and the worker its last") {
  Threads two(2);
  int worker_ran = 0;
  // 10 loops at least, and more (10 s at most) until the worker, woken late on a busy machine,
  // has run some chunks.
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (int loop = 0; loop < 10 || (worker_ran == 0 && std::chrono::steady_clock::now() < limit);
       ++loop) {
    std::array<std::thread::id, 8> ran_on{};
    parallel_for(8, 1, [&](int64_t b, int64_t e) {
      for (int64_t c = b; c < e; ++c) ran_on[static_cast<size_t>(c)] = std::this_thread::get_id();
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    });
    size_t prefix = 0;  // chunks run by the caller, from chunk 0 on
    while (prefix < ran_on.size() && ran_on[prefix] == std::this_thread::get_id()) ++prefix;
    CAPTURE(loop);
    CAPTURE(prefix);
    for (size_t c = prefix; c < ran_on.size(); ++c) CHECK(ran_on[c] != std::this_thread::get_id());
    worker_ran += static_cast<int>(ran_on.size() - prefix);
  }
  CHECK(worker_ran > 0);
}

TEST_CASE_FIXTURE(anatomy::testing::FastKernels,
                  "an exception thrown in a chunk reaches the caller, and the pool keeps working") {
  Threads two(2);
  for (int round = 0; round < 3; ++round) {
    CAPTURE(round);
    check_error(
        [] {
          parallel_for(800, 1, [](int64_t b, int64_t e) {
            if (b <= 500 && 500 < e) throw Error("chunk with 500 failed");
          });
        },
        {"chunk with 500 failed"});
    std::atomic<int64_t> total{0};
    parallel_for(800, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) total += i;
    });
    CHECK(total.load() == 800 * 799 / 2);
  }
}

TEST_CASE_FIXTURE(anatomy::testing::FastKernels,
                  "loops from two threads at once both finish with the right results") {
  Threads two(2);
  auto sums = [](int64_t n) {
    Tensor x = arange(n, kFloat32);
    Tensor y = mul(x, 2.0f);  // a parallel elementwise op above the grain
    double s = 0;
    for (float v : y.to_vector()) s += v;
    return s;
  };
  const int64_t n = 200000;
  const double want = static_cast<double>(n) * static_cast<double>(n - 1);
  std::vector<double> got(2);
  std::thread other([&] {
    for (int i = 0; i < 20; ++i) got[1] = sums(n);
  });
  for (int i = 0; i < 20; ++i) got[0] = sums(n);
  other.join();
  CHECK(got[0] == want);
  CHECK(got[1] == want);
}

// The kernels that split their work: with one element per chunk the split cannot change a value,
// so one and two threads agree exactly; layer norm's weight and bias gradients sum rows in
// chunks, which changes only the order of a float sum.
TEST_CASE_FIXTURE(anatomy::testing::FastKernels,
                  "kernels split between two threads give the one-thread results") {
  manual_seed(4);
  Tensor x = randn({300, 257}).requires_grad_();
  Tensor w = randn({257}).requires_grad_(), b = randn({257}).requires_grad_();
  Tensor up = randn({300, 257});
  Tensor target = randint(0, 257, {300});
  auto run = [&](int threads) {
    Threads t(threads);
    for (Tensor* p : {&x, &w, &b}) p->zero_grad();
    Tensor s = softmax(x, -1), ls = log_softmax(x, 0), ln = layer_norm(x, {257}, w, b);
    Tensor e = exp(x) * x + 1.5f;
    Tensor loss = cross_entropy(x, target, {.label_smoothing = 0.1f});
    (sum(s * up) + sum(ls * up) + sum(ln * up) + sum(e * up) + loss).backward();
    return std::vector<Tensor>{s.detach(),    ls.detach(), ln.detach(), e.detach(),
                               loss.detach(), x.grad(),    w.grad(),    b.grad()};
  };
  const auto one = run(1), two = run(2);
  const char* names[] = {"softmax",       "log_softmax", "layer_norm", "elementwise",
                         "cross_entropy", "x.grad",      "w.grad",     "b.grad"};
  for (size_t i = 0; i < one.size(); ++i) {
    CAPTURE(names[i]);
    if (i < 6)
      CHECK(one[i].to_vector() == two[i].to_vector());
    else
      CHECK_CLOSE(two[i], one[i], 1e-4, 1e-5);
  }
  CHECK(x.grad().abs().sum().item() > 1.0f);  // the gradients are not all zero
}

// sum splits its outputs between threads, never the values one output adds up: a bias gradient
// (Σ over the 768 rows of [768, 1000], one outer row), a sum over the last dim (each output a
// row) and over a middle dim (outer rows and columns both). Each must equal a sum in double and
// be the same bits on one and two threads; a split along the summed dim would change the order
// of the additions.
TEST_CASE_FIXTURE(anatomy::testing::FastKernels,
                  "sum splits its outputs between threads: the one-thread bits, the right values") {
  manual_seed(9);
  const Tensor x = randn({768, 1000}), y = randn({5, 300, 70});
  struct Case {
    const char* name;
    const Tensor& in;
    std::vector<int64_t> dims;
  };
  const Case cases[] = {{"rows of [768, 1000]", x, {0}},
                        {"columns of [768, 1000]", x, {1}},
                        {"the middle dim of [5, 300, 70]", y, {1}}};
  for (const Case& c : cases) {
    CAPTURE(c.name);
    std::vector<std::vector<float>> got;
    for (const int threads : {1, 2}) {
      Threads t(threads);
      got.push_back(sum(c.in, c.dims).to_vector());
    }
    CHECK(got[0] == got[1]);
    // The sum in double, from the values where they lie.
    const Tensor moved = c.in.transpose(c.dims[0], -1).contiguous();
    const std::vector<float> v = moved.to_vector();
    const int64_t R = moved.size(-1);
    REQUIRE(got[0].size() * static_cast<size_t>(R) == v.size());
    const std::vector<float>& out = got[0];
    double worst = 0.0;
    for (size_t o = 0; o < out.size(); ++o) {
      double want = 0.0;
      for (int64_t r = 0; r < R; ++r)
        want += v[o * static_cast<size_t>(R) + static_cast<size_t>(r)];
      worst = std::max(worst, std::abs(out[o] - want));
    }
    CHECK(worst < 1e-3);
  }
}

// torch.zeros(0, 3).sum(0) is [0, 0, 0]: a sum over an empty dim reads nothing.
TEST_CASE_FIXTURE(anatomy::testing::FastKernels, "sum over an empty dim is zeros") {
  CHECK(sum(zeros({0, 3}), {0}).to_vector() == std::vector<float>{0, 0, 0});
  CHECK(sum(zeros({2, 0, 3}), {1}).to_vector() == std::vector<float>(6, 0.0f));
}

TEST_CASE_FIXTURE(anatomy::testing::FastKernels,
                  "set_num_threads: a positive count is used, 0 goes back to the default") {
  Threads keep(get_num_threads());
  set_num_threads(3);
  CHECK(get_num_threads() == 3);
  set_num_threads(0);
  // ctest sets OMP_NUM_THREADS=1 for this binary; without it the default is the core count.
  const char* env = std::getenv("OMP_NUM_THREADS");
  if (env && std::string(env) == "1") CHECK(get_num_threads() == 1);
  CHECK(get_num_threads() >= 1);
}

// Loops back to back. A worker that read the next loop's chunk count while still claiming from
// the loop before would run a chunk of the new loop under the old claim: one chunk twice and
// another not at all, and the caller would wait forever or return while a chunk still used its
// stack. The moment for it, between storing a loop and publishing it, is nanoseconds long; the
// testing pause stretches it on every third loop, and more threads than cores make workers late.
// Every chunk of every loop must run exactly once (a pool with that race hangs here within a
// second).
TEST_CASE_FIXTURE(anatomy::testing::FastKernels,
                  "back-to-back loops run every chunk exactly once, late workers included") {
  Threads four(4);
  detail::pause_publishing_for_testing(3, 20);
  struct Unpause {
    ~Unpause() { detail::pause_publishing_for_testing(0, 0); }
  } unpause;
  // A miscounted loop never finishes: a watchdog ends the run with a message instead of a hang.
  std::atomic<bool> finished{false};
  std::thread watchdog([&] {
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!finished.load()) {
      if (std::chrono::steady_clock::now() > limit) {
        std::fprintf(stderr, "back-to-back loops: a loop never finished (a chunk was lost)\n");
        std::abort();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  std::array<std::atomic<int>, 16> hits{};
  int64_t wrong = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (int64_t loop = 0; std::chrono::steady_clock::now() < until; ++loop) {
    const int64_t chunks = 2 + loop % 15;  // the count changes from each loop to the next
    for (auto& h : hits) h.store(0);
    parallel_for(chunks, 1, [&](int64_t b, int64_t e) {
      for (int64_t c = b; c < e; ++c) hits[static_cast<size_t>(c)].fetch_add(1);
    });
    for (int64_t c = 0; c < 16; ++c)
      if (hits[static_cast<size_t>(c)].load() != (c < chunks ? 1 : 0) && wrong++ < 5)
        FAIL_CHECK("loop " << loop << " of " << chunks << " chunks: chunk " << c << " ran "
                           << hits[static_cast<size_t>(c)].load() << " times");
  }
  finished.store(true);
  watchdog.join();
  CHECK(wrong == 0);
}

// A worker that stops in the middle of a chunk (the scheduler gave its core to another program)
// holds up the whole loop. The pool notices the wait and runs the loops after it on the caller
// alone, the same chunks in the same order; set_num_threads (or the back-off running out) puts the
// workers back to work.
TEST_CASE_FIXTURE(anatomy::testing::FastKernels,
                  "a worker stalled mid-chunk makes the next loops run on the caller alone") {
  Threads two(2);
  detail::set_first_backoff_for_testing(60000);  // a minute: a slow test machine cannot outlast it
  struct Restore {
    ~Restore() { detail::set_first_backoff_for_testing(20); }
  } restore;
  const auto caller = std::this_thread::get_id();
  CHECK_FALSE(detail::running_alone());
  CHECK(ids_of_sleepy_loop(/*wait_for_a_worker=*/true).size() == 2);

  // On a busy machine that loop may have stalled too, and the pool gone alone: both threads again.
  set_num_threads(2);
  // One stall of 50 ms: more than the pool lets stalls cost before it goes alone (10 ms).
  REQUIRE(stalled_loop(50));
  CHECK(detail::running_alone());
  const auto alone = ids_of_sleepy_loop();
  CHECK(alone.size() == 1);
  CHECK(alone.count(caller) == 1);
  // The same chunks, run in order by one thread: a kernel's bits do not change.
  manual_seed(9);
  Tensor x = randn({300, 257});
  const auto while_alone = softmax(x, -1).to_vector();

  set_num_threads(2);
  CHECK_FALSE(detail::running_alone());
  CHECK(ids_of_sleepy_loop(/*wait_for_a_worker=*/true).size() == 2);
  CHECK(softmax(x, -1).to_vector() == while_alone);
}

// A cloud machine's host takes a vCPU away now and then, with nothing else running: a stall of a
// few milliseconds once in a while. Going alone for each would run a third of a Tiny Shakespeare
// run on one thread. Such stalls drain away as time passes; stalls
// that keep coming, as on a busy machine, still make the loops run alone. Another test running
// beside this one would stall the pool's worker for real, so ctest runs it alone.
TEST_CASE_FIXTURE(anatomy::testing::FastKernels,
                  "a short stall now and then keeps both threads, stalls that keep coming do not" *
                      doctest::test_suite("alone-on-the-machine")) {
  Threads two(2);
  detail::set_first_backoff_for_testing(60000);  // once alone, alone for the rest of the test
  struct Restore {
    ~Restore() { detail::set_first_backoff_for_testing(20); }
  } restore;
  // A loaded machine may stretch a 2 ms stall past what the pool allows; the checks that need
  // the stalls short are made only when they were.
  bool short_stalls = true;
  for (int i = 0; i < 6 && short_stalls; ++i) {
    const auto waited = stalled_loop(2);
    REQUIRE(waited);
    short_stalls = *waited < Ms(4);
    if (!short_stalls) {
      MESSAGE("a 2 ms stall took 4 ms or more: the machine is too busy to check the drain");
      break;
    }
    REQUIRE_FALSE(detail::running_alone());
    // 80 ms before the next stall: time enough to drain 10 ms of waits. The time passing is what
    // is tested here, so it is slept, with no loop in it: on a busy machine a loop could stall
    // on its own and add waits the test does not control.
    std::this_thread::sleep_for(std::chrono::milliseconds(80));
  }
  // Back to back, 2 ms stalls reach the 10 ms after a few.
  int stalls = 0;
  while (!detail::running_alone() && stalls < 20) {
    const auto waited = stalled_loop(2);
    REQUIRE(waited);
    short_stalls = short_stalls && *waited < Ms(4);
    ++stalls;
  }
  CHECK(detail::running_alone());
  if (short_stalls) CHECK(stalls >= 3);
  CHECK(ids_of_sleepy_loop().size() == 1);
}
