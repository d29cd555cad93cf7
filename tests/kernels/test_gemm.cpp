// The GEMM against a naive triple loop: odd sizes (edge tiles, edge panels of 8, 16 and 24
// columns packed by 8 x 8 transposes), strided operands, accumulate, threads, and run-to-run
// determinism. Up to 128 rows with Bᵀ row-major (a linear layer's forward) take the path that
// reads B in place (gemm_short_weights): 31, 60, 64, 120 and 128 rows reach it, with edge tokens
// and edge weight rows.
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <vector>

#include "helpers.hpp"
#include "kernels/gemm.hpp"

using namespace anatomy;

namespace {

std::vector<float> naive(int64_t M, int64_t N, int64_t K, const std::vector<float>& A, int64_t rsa,
                         int64_t csa, const std::vector<float>& B, int64_t rsb, int64_t csb) {
  std::vector<float> C(M * N);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k) s += double(A[i * rsa + k * csa]) * B[k * rsb + j * csb];
      C[i * N + j] = static_cast<float>(s);
    }
  return C;
}

// New random values in the same buffer: the next batch in the same tensor, which a packing kept
// by address, or one left from an earlier call, would miss.
void refill(std::vector<float>& v) {
  const auto fresh = randn({static_cast<int64_t>(v.size())}).to_vector();
  std::copy(fresh.begin(), fresh.end(), v.begin());
}

}  // namespace

TEST_CASE_FIXTURE(anatomy::testing::FastKernels,
                  "gemm matches a naive loop on awkward shapes and strides") {
  manual_seed(0);
  for (auto mnk : std::vector<std::array<int64_t, 3>>{{1, 1, 1},
                                                      {1, 37, 40},
                                                      {3, 70, 19},
                                                      {7, 5, 3},
                                                      {17, 33, 65},
                                                      {128, 300, 520},
                                                      {129, 40, 260},
                                                      {130, 70, 300},
                                                      {300, 513, 257},
                                                      {5, 768, 64},
                                                      {16, 48, 32},
                                                      {9, 24, 16},
                                                      {31, 45, 300},
                                                      {60, 9, 70}}) {
    const int64_t M = mnk[0], N = mnk[1],
                  K = mnk[2];  // (clang 14: CAPTURE of a structured binding)
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        CAPTURE(M);
        CAPTURE(N);
        CAPTURE(K);
        CAPTURE(ta);
        CAPTURE(tb);
        auto A = randn({M * K}).to_vector();
        auto B = randn({K * N}).to_vector();
        const int64_t rsa = ta ? 1 : K, csa = ta ? M : 1;
        const int64_t rsb = tb ? 1 : N, csb = tb ? K : 1;
        std::vector<float> C(M * N, 1.0f);
        gemm(M, N, K, A.data(), rsa, csa, B.data(), rsb, csb, C.data(), N, false);
        auto ref = naive(M, N, K, A, rsa, csa, B, rsb, csb);
        CHECK_CLOSE(from_vector(C, {M, N}), from_vector(ref, {M, N}), 1e-3, 1e-4);
        gemm(M, N, K, A.data(), rsa, csa, B.data(), rsb, csb, C.data(), N, true);  // C += AB
        for (auto& v : ref) v *= 2.0f;
        CHECK_CLOSE(from_vector(C, {M, N}), from_vector(ref, {M, N}), 2e-3, 1e-4);
      }
  }
}

// Operands with no unit stride (every other float of A's rows, every third of B's): the packing
// must read them through both strides, not take the branch of a transposed B.
TEST_CASE_FIXTURE(anatomy::testing::FastKernels, "gemm reads operands with no unit stride") {
  manual_seed(7);
  for (auto mnk : std::vector<std::array<int64_t, 3>>{{64, 40, 300}, {200, 70, 50}, {5, 33, 17}}) {
    const int64_t M = mnk[0], N = mnk[1], K = mnk[2];
    CAPTURE(M);
    CAPTURE(N);
    CAPTURE(K);
    const int64_t rsa = 2 * K, csa = 2, rsb = 3 * N, csb = 3;
    auto A = randn({M * rsa}).to_vector();
    auto B = randn({K * rsb}).to_vector();
    std::vector<float> C(M * N);
    gemm(M, N, K, A.data(), rsa, csa, B.data(), rsb, csb, C.data(), N, false);
    CHECK_CLOSE(from_vector(C, {M, N}),
                from_vector(naive(M, N, K, A, rsa, csa, B, rsb, csb), {M, N}), 1e-3, 1e-4);
  }
}

// Over 128 rows a row-major A is read where it lies, not packed: rows further apart than K (a
// narrowed input), one row repeated (row stride 0: an expanded input), a last panel of fewer
// rows than the micro-kernel's, K over one slice; B in both layouts.
TEST_CASE_FIXTURE(
    anatomy::testing::FastKernels,
    "gemm reads a row-major A in place: padded rows, a repeated row, a short last panel") {
  manual_seed(8);
  for (auto mnk : std::vector<std::array<int64_t, 3>>{{301, 37, 300}, {133, 50, 20}, {100, 30, 9}})
    for (const int64_t pad : {int64_t{5}, int64_t{-1}})  // -1: row stride 0
      for (const bool tb : {false, true}) {
        const int64_t M = mnk[0], N = mnk[1], K = mnk[2];
        const int64_t rsa = pad < 0 ? 0 : K + pad;
        const int64_t rsb = tb ? 1 : N, csb = tb ? K : 1;
        CAPTURE(M);
        CAPTURE(N);
        CAPTURE(K);
        CAPTURE(rsa);
        CAPTURE(tb);
        auto A = randn({std::max<int64_t>(1, (M - 1) * rsa + K)}).to_vector();
        auto B = randn({K * N}).to_vector();
        std::vector<float> C(M * N);
        gemm(M, N, K, A.data(), rsa, 1, B.data(), rsb, csb, C.data(), N, false);
        CHECK_CLOSE(from_vector(C, {M, N}),
                    from_vector(naive(M, N, K, A, rsa, 1, B, rsb, csb), {M, N}), 1e-3, 1e-4);
      }
}

// Up to 128 rows, Aᵀ row-major (a weight gradient's dYᵀ) is read where it lies: rows of Aᵀ
// further apart than M, whole panels only or a short last panel (whose micro-kernel must read only
// its rows), K over one slice, B in both layouts. A is sized exactly, so that a read past its end
// fails under the sanitizers.
// A transposed A (a weight gradient's dYᵀ) is packed by the micro-kernels of each thread's first
// panel as they read it (up to 128 rows; over 128, of each block of rows); the other panels read
// the packing. A thread that read a packing before its first panel wrote it, or a short last
// panel left unpacked, gives wrong sums.
TEST_CASE_FIXTURE(
    anatomy::testing::FastKernels,
    "gemm reads a transposed A where it lies: padded rows, a short last panel, 2 threads") {
  manual_seed(11);
  const int before = get_num_threads();
  for (auto mnk : std::vector<std::array<int64_t, 3>>{{128, 40, 300},
                                                      {60, 33, 520},
                                                      {100, 70, 9},
                                                      {31, 16, 257},
                                                      {6, 20, 30},
                                                      {125, 160, 600},
                                                      {257, 50, 600},
                                                      {300, 70, 40}})
    for (const int64_t pad : {int64_t{0}, int64_t{3}})
      for (const bool tb : {false, true}) {
        const int64_t M = mnk[0], N = mnk[1], K = mnk[2];
        const int64_t csa = M + pad;
        const int64_t rsb = tb ? 1 : N, csb = tb ? K : 1;
        CAPTURE(M);
        CAPTURE(N);
        CAPTURE(K);
        CAPTURE(csa);
        CAPTURE(tb);
        auto A = randn({(K - 1) * csa + M}).to_vector();
        auto B = randn({K * N}).to_vector();
        std::vector<float> C1(M * N), C2(M * N);
        set_num_threads(1);
        gemm(M, N, K, A.data(), 1, csa, B.data(), rsb, csb, C1.data(), N, false);
        CHECK_CLOSE(from_vector(C1, {M, N}),
                    from_vector(naive(M, N, K, A, 1, csa, B, rsb, csb), {M, N}), 1e-3, 1e-4);
        set_num_threads(2);
        gemm(M, N, K, A.data(), 1, csa, B.data(), rsb, csb, C2.data(), N, false);
        CHECK(C1 == C2);
      }
  set_num_threads(before);
}

// Threads split C's rows (over MC_MAX rows or a K over kShortMaxK), or N's panels (up to MC_MAX
// rows), also when there are fewer panels than threads; each element of C must sum in the
// one-thread order.
TEST_CASE_FIXTURE(anatomy::testing::FastKernels, "gemm results do not depend on the thread count") {
  manual_seed(1);
  const int before = get_num_threads();
  // The fourth number: B stored transposed (then 120 rows split w's rows between threads).
  for (auto mnkt : std::vector<std::array<int64_t, 4>>{{257, 300, 513, 0},
                                                       {128, 777, 600, 0},
                                                       {100, 20, 4000, 0},
                                                       {100, 40, 5000, 0},
                                                       {120, 333, 700, 1}}) {
    const int64_t M = mnkt[0], N = mnkt[1], K = mnkt[2];
    const bool tb = mnkt[3] == 1;
    CAPTURE(M);
    CAPTURE(N);
    CAPTURE(K);
    CAPTURE(tb);
    REQUIRE(2.0 * M * N * K >= kParallelFlops);
    auto A = randn({M * K}).to_vector();
    auto B = randn({K * N}).to_vector();
    const int64_t rsb = tb ? 1 : N, csb = tb ? K : 1;
    std::vector<float> C1(M * N), C2(M * N);
    set_num_threads(1);
    gemm(M, N, K, A.data(), K, 1, B.data(), rsb, csb, C1.data(), N, false);
    set_num_threads(2);
    gemm(M, N, K, A.data(), K, 1, B.data(), rsb, csb, C2.data(), N, false);
    CHECK(C1 == C2);
    CHECK_CLOSE(from_vector(C2, {M, N}), from_vector(naive(M, N, K, A, K, 1, B, rsb, csb), {M, N}),
                2e-3, 1e-4);
  }
  set_num_threads(before);
}

// A linear layer's forward on two threads claims chunks of the weight's rows, and each thread
// packs the tokens once per call, for its first chunk. A second call with new values in the same
// buffer (the next layer's input, the next batch) must pack them again: a packing kept by
// address, or one thread's packing taken for another's, gives the first call's results.
TEST_CASE_FIXTURE(
    anatomy::testing::FastKernels,
    "gemm with Bᵀ row-major on two threads packs each call's A anew, in every thread") {
  manual_seed(3);
  const int64_t M = 64, N = 1000, K = 200;  // 125 tiles of 8 weight rows: several chunks each
  REQUIRE(2.0 * M * N * K >= kParallelFlops);
  auto A = randn({M * K}).to_vector();
  const auto B = randn({N * K}).to_vector();  // w [N, K]: B = wᵀ read with rsb 1, csb K
  const int before = get_num_threads();
  for (int call = 0; call < 3; ++call) {
    CAPTURE(call);
    if (call > 0) refill(A);
    std::vector<float> C1(M * N), C2(M * N);
    set_num_threads(1);
    gemm(M, N, K, A.data(), K, 1, B.data(), 1, K, C1.data(), N, false);
    set_num_threads(2);
    gemm(M, N, K, A.data(), K, 1, B.data(), 1, K, C2.data(), N, false);
    CHECK(C1 == C2);
    CHECK_CLOSE(from_vector(C2, {M, N}), from_vector(naive(M, N, K, A, K, 1, B, 1, K), {M, N}),
                2e-3, 1e-4);
  }
  set_num_threads(before);
}

// Over 128 rows on two threads, the threads claim chunks of rows, and pack B together once per
// call, at their first chunks. A second call with new values in the same buffers (the next
// batch's activations) must pack them again: a packing kept by address, or a panel taken from an
// earlier call's shared packing, gives an earlier call's results. The operands in every layout the
// models use (forward NT, input gradient NN, weight gradient TN), and a B too big to pack whole
// (fixed shares, one slice at a time).
TEST_CASE_FIXTURE(anatomy::testing::FastKernels,
                  "gemm over 128 rows on two threads packs each call's B anew, in every thread") {
  manual_seed(4);
  struct Layout {
    int64_t M, N, K;
    bool ta, tb;
  };
  // 400 rows: 50 panels of 8 in 8 chunks; K = 300: two K slices. N = 2100: two blocks of columns
  // (2048 and 52), whose panels the threads share with those of both slices. 136 x 1030 x 1024:
  // B packed whole would be 1030 x 1024 floats, over the 4 MiB the threads pack whole.
  for (const Layout& l : {Layout{400, 200, 300, false, true}, Layout{400, 200, 300, false, false},
                          Layout{400, 200, 300, true, false}, Layout{400, 2100, 300, false, true},
                          Layout{136, 1024, 1030, false, false}}) {
    const int64_t M = l.M, N = l.N, K = l.K;
    CAPTURE(M);
    CAPTURE(N);
    CAPTURE(l.ta);
    CAPTURE(l.tb);
    const int64_t rsa = l.ta ? 1 : K, csa = l.ta ? M : 1, rsb = l.tb ? 1 : N, csb = l.tb ? K : 1;
    auto A = randn({M * K}).to_vector();
    auto B = randn({K * N}).to_vector();
    const int before = get_num_threads();
    for (int call = 0; call < 3; ++call) {
      CAPTURE(call);
      if (call > 0) {
        refill(A);
        refill(B);
      }
      std::vector<float> C1(M * N), C2(M * N);
      set_num_threads(1);
      gemm(M, N, K, A.data(), rsa, csa, B.data(), rsb, csb, C1.data(), N, false);
      set_num_threads(2);
      gemm(M, N, K, A.data(), rsa, csa, B.data(), rsb, csb, C2.data(), N, false);
      CHECK(C1 == C2);
      CHECK_CLOSE(from_vector(C2, {M, N}),
                  from_vector(naive(M, N, K, A, rsa, csa, B, rsb, csb), {M, N}), 2e-3, 1e-4);
    }
    set_num_threads(before);
  }
}

// Over 128 rows on two threads, the threads pack B together, panel by panel, and each reads the
// others' panels. When the caller's core is taken while it packs its first panel (here it stops
// until the worker gives up on it, at most 200 ms), the worker does not wait for it: it packs B
// for itself and goes on. Both results must be those of one thread: a worker that read the shared
// B without waiting for the caller's panel would read the previous call's values there (each call
// has new ones), and one that waited for it would never pack B for itself.
TEST_CASE_FIXTURE(
    anatomy::testing::FastKernels,
    "gemm over 128 rows: a thread stalled while packing the shared B is not waited for") {
  manual_seed(6);
  const int64_t M = 400, N = 300, K = 200;
  auto A = randn({M * K}).to_vector();
  auto B = randn({K * N}).to_vector();
  const int before = get_num_threads();
  for (int call = 0; call < 3; ++call) {
    CAPTURE(call);
    if (call > 0) refill(B);
    std::vector<float> C1(M * N), C2(M * N);
    set_num_threads(1);
    gemm(M, N, K, A.data(), K, 1, B.data(), 1, K, C1.data(), N, false);  // a linear's forward
    set_num_threads(2);
    const int64_t own_before = detail::own_packings_for_testing();
    if (call > 0) detail::delay_shared_packing_for_testing(200'000);
    gemm(M, N, K, A.data(), K, 1, B.data(), 1, K, C2.data(), N, false);
    detail::delay_shared_packing_for_testing(0);
    // The worker packed B for itself in the calls with a stall (the first has none).
    if (call > 0) CHECK(detail::own_packings_for_testing() > own_before);
    CHECK(C1 == C2);
  }
  set_num_threads(before);
}

// One sentence's product: few rows (M = 5, a single block) and enough work for threads, which
// then share the N panels instead of the M blocks.
TEST_CASE_FIXTURE(
    anatomy::testing::FastKernels,
    "gemm with few rows splits the columns between threads, and matches a naive loop") {
  manual_seed(2);
  const int64_t M = 5, N = 2000, K = 1600;  // 2·M·N·K = 3.2e7 flops, over kParallelFlops
  static_assert(2.0 * 5 * 2000 * 1600 >= kParallelFlops);
  auto A = randn({M * K}).to_vector();
  auto B = randn({K * N}).to_vector();
  const int before = get_num_threads();
  std::vector<float> C1(M * N), C2(M * N, 7.0f);
  set_num_threads(1);
  gemm(M, N, K, A.data(), K, 1, B.data(), N, 1, C1.data(), N, false);
  set_num_threads(2);
  gemm(M, N, K, A.data(), K, 1, B.data(), N, 1, C2.data(), N, false);
  set_num_threads(before);
  CHECK_CLOSE(from_vector(C2, {M, N}), from_vector(naive(M, N, K, A, K, 1, B, N, 1), {M, N}), 2e-3,
              1e-4);
  CHECK(C1 == C2);
}

// Under four rows B is read in place, not packed: by columns (Bᵀ row-major, attention's keys)
// or by rows (the values). Either way the columns are shared between threads.
TEST_CASE_FIXTURE(anatomy::testing::FastKernels,
                  "gemm with one to three rows reads B in place, on 1 or 2 threads") {
  manual_seed(3);
  const int64_t N = 20000, K = 100;
  const int before = get_num_threads();
  for (int64_t M : {1, 3})
    for (bool tb : {false, true}) {
      CAPTURE(M);
      CAPTURE(tb);
      static_assert(2.0 * 1 * 20000 * 100 >= kParallelFlops);
      auto A = randn({M * K}).to_vector();
      auto B = randn({K * N}).to_vector();
      const int64_t rsb = tb ? 1 : N, csb = tb ? K : 1;
      std::vector<float> C1(M * N, 0.5f), C2(M * N, 0.5f);
      set_num_threads(1);
      gemm(M, N, K, A.data(), K, 1, B.data(), rsb, csb, C1.data(), N, true);
      set_num_threads(2);
      gemm(M, N, K, A.data(), K, 1, B.data(), rsb, csb, C2.data(), N, true);
      auto ref = naive(M, N, K, A, K, 1, B, rsb, csb);
      for (auto& v : ref) v += 0.5f;
      CHECK_CLOSE(from_vector(C2, {M, N}), from_vector(ref, {M, N}), 1e-3, 1e-4);
      CHECK(C1 == C2);
    }
  set_num_threads(before);
}

// B packed ahead (a frozen weight) gives the very numbers of B packed in the call: the same
// panels, read in the same order, across several N and K blocks.
TEST_CASE_FIXTURE(anatomy::testing::FastKernels,
                  "gemm with B packed ahead matches packing B in the call, bit for bit") {
  manual_seed(4);
  const int64_t M = 37, N = 2100, K = 300;  // N over one 2048 block, K over one 256 slice
  const int before = get_num_threads();
  for (bool tb : {false, true})
    for (int threads : {1, 2}) {
      CAPTURE(tb);
      CAPTURE(threads);
      set_num_threads(threads);
      auto A = randn({M * K}).to_vector();
      auto B = randn({K * N}).to_vector();
      const int64_t rsb = tb ? 1 : N, csb = tb ? K : 1;
      const PackedB packed = pack_b_blocks(K, N, B.data(), rsb, csb);
      CHECK(reinterpret_cast<uintptr_t>(packed.data()) % 64 == 0);
      std::vector<float> C1(M * N, 0.25f), C2(M * N, 0.25f);
      gemm(M, N, K, A.data(), K, 1, B.data(), rsb, csb, C1.data(), N, true);
      gemm(M, N, K, A.data(), K, 1, B.data(), rsb, csb, C2.data(), N, true, packed.data());
      CHECK(C1 == C2);
      auto ref = naive(M, N, K, A, K, 1, B, rsb, csb);
      for (auto& v : ref) v += 0.25f;
      CHECK_CLOSE(from_vector(C2, {M, N}), from_vector(ref, {M, N}), 2e-3, 1e-4);
    }
  set_num_threads(before);
}

namespace {

// n floats that end where an unreadable page begins: a read past the last one faults, in any
// build (the sanitizers see such reads only in theirs).
class FencedFloats {
 public:
  explicit FencedFloats(size_t n) {
    const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t used = (n * sizeof(float) + page - 1) / page * page;
    bytes_ = used + page;
    base_ = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(base_ != MAP_FAILED);
    REQUIRE(mprotect(static_cast<char*>(base_) + used, page, PROT_NONE) == 0);
    data_ = reinterpret_cast<float*>(static_cast<char*>(base_) + used) - n;
  }
  ~FencedFloats() { munmap(base_, bytes_); }
  FencedFloats(const FencedFloats&) = delete;
  FencedFloats& operator=(const FencedFloats&) = delete;
  float* data() { return data_; }

 private:
  void* base_ = nullptr;
  size_t bytes_ = 0;
  float* data_ = nullptr;
};

}  // namespace

// A short K (attention's per-head products): the micro-kernels read A where it lies, and a
// row-major B of whole vectors of columns too; Bᵀ row-major (the keys of Q · Kᵀ) is packed
// whole. Against B packed ahead (the general path, whose tiles are the same), bit for bit: B's
// rows padded, one row repeated (row stride 0), B not on a vector boundary, A row-major and
// transposed, short last panels of rows, 8-column panels, accumulating, with a bias. B ends at
// an unreadable page, so a tile that reads past the last column (a two-vector tile on an
// 8-column panel, or 12 columns read in place) crashes the test.
TEST_CASE_FIXTURE(
    anatomy::testing::FastKernels,
    "gemm with a short K reads A, and a row-major B, in place, with the bits of B packed") {
  manual_seed(13);
  for (auto mnk : std::vector<std::array<int64_t, 3>>{
           {6, 8, 1}, {23, 24, 7}, {64, 32, 24}, {128, 48, 64}, {100, 16, 64}, {20, 12, 16}})
    for (const int64_t pad : {int64_t{0}, int64_t{5}, int64_t{-1}})  // -1: stride 0
      for (const bool ta : {false, true})
        for (const bool tb : {false, true})
          for (const bool acc : {false, true}) {
            const int64_t M = mnk[0], N = mnk[1], K = mnk[2];
            const int64_t rsb = tb ? 1 : pad < 0 ? 0 : N + pad;
            const int64_t csb = !tb ? 1 : pad < 0 ? 0 : K + pad;
            const int64_t rsa = ta ? 1 : K + 3, csa = ta ? M + 2 : 1;
            CAPTURE(M);
            CAPTURE(N);
            CAPTURE(K);
            CAPTURE(rsb);
            CAPTURE(csb);
            CAPTURE(ta);
            CAPTURE(acc);
            auto A = randn({(M - 1) * rsa + (K - 1) * csa + 1}).to_vector();
            const std::vector<float> Bv = randn({(K - 1) * rsb + (N - 1) * csb + 1}).to_vector();
            FencedFloats fenced(Bv.size() + 1);
            float* b = fenced.data() + 1;  // not on a vector boundary
            std::copy(Bv.begin(), Bv.end(), b);
            auto bias = randn({N}).to_vector();
            std::vector<float> C1(M * N, 0.5f), C2(M * N, 0.5f);
            gemm(M, N, K, A.data(), rsa, csa, b, rsb, csb, C1.data(), N, acc, nullptr, bias.data());
            const PackedB packed = pack_b_blocks(K, N, b, rsb, csb);
            gemm(M, N, K, A.data(), rsa, csa, b, rsb, csb, C2.data(), N, acc, packed.data(),
                 bias.data());
            CHECK(C1 == C2);
            auto ref = naive(M, N, K, A, rsa, csa, Bv, rsb, csb);
            for (int64_t i = 0; i < M; ++i)
              for (int64_t j = 0; j < N; ++j) ref[i * N + j] += bias[j] + (acc ? 0.5f : 0.0f);
            CHECK_CLOSE(from_vector(C1, {M, N}), from_vector(ref, {M, N}), 1e-3, 1e-4);
          }
}

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ANATOMY_TEST_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define ANATOMY_TEST_ASAN 1
#endif
#ifdef ANATOMY_TEST_ASAN
constexpr bool kAllocatorCaches = false;
#else
constexpr bool kAllocatorCaches = true;
#endif

TEST_CASE_FIXTURE(anatomy::testing::FastKernels,
                  "FrozenWeightsGuard: linear packs a parameter at its second product, once") {
  manual_seed(5);
  const Tensor x = randn({40, 24});
  Tensor w = randn({50, 24}).requires_grad_(), b = randn({50});
  NoGradGuard no_grad;  // (a graph would keep w alive)
  const Tensor plain = linear(x, w, b);
  CHECK(frozen_packed_weight(w, 40) == nullptr);  // no guard: packed at each call
  {
    FrozenWeightsGuard outer;
    CHECK(frozen_packed_weight(w, 3) == nullptr);   // 3 rows: gemm reads w in place
    CHECK(frozen_packed_weight(w, 40) == nullptr);  // the first product packs in the call
    const float* packed = frozen_packed_weight(w, 40);
    REQUIRE(packed != nullptr);
    CHECK(frozen_packed_weight(w, 40) == packed);                    // once
    CHECK(frozen_packed_weight(w.detach(), 40) == nullptr);          // not a parameter
    CHECK(frozen_packed_weight(w.narrow(0, 1, 20), 40) == nullptr);  // not a leaf: a view
    const Tensor cube = randn({5, 6, 24}).requires_grad_();  // not a matrix, at either product
    CHECK(frozen_packed_weight(cube, 40) == nullptr);
    CHECK(frozen_packed_weight(cube, 40) == nullptr);
    CHECK(linear(x, w, b).to_vector() == plain.to_vector());
    {
      FrozenWeightsGuard inner;
      CHECK(frozen_packed_weight(w, 40) == packed);
    }
    CHECK(frozen_packed_weight(w, 40) == packed);  // the outer guard still keeps it
    // A parameter freed and another made, likely in the same buffer: the new one's values.
    const float* old_address = w.data();
    w = Tensor();
    Tensor w2 = randn({50, 24}).requires_grad_();
    // The allocator's cache gives the buffer back (it keeps none under AddressSanitizer).
    if (kAllocatorCaches) CHECK(w2.data() == old_address);
    const std::vector<float> fresh = linear(x, w2, b).to_vector();
    Tensor w3 = w2.detach().clone().requires_grad_();
    CHECK(fresh == linear(x, w3, b).to_vector());
    CHECK(linear(x, w2, b).to_vector() == fresh);  // its second product: packed from here on
    {
      FrozenWeightsGuard nested;  // the weight's copy was made under `outer`, not here
    }
    w2.mul_(2.0f);  // written under the guard: the promise broken, the old values used
    CHECK(linear(x, w2, b).to_vector() == fresh);
  }
  CHECK(frozen_packed_weight(randn({3, 3}).requires_grad_(), 40) == nullptr);
}

// K = 0: every product is an empty sum. Each of C's rows (ldc apart) becomes 0, the columns past
// N stay as they were; with accumulate, C stays.
TEST_CASE_FIXTURE(anatomy::testing::FastKernels,
                  "gemm with K = 0 zeroes C's M x N block, or leaves it when accumulating") {
  const int64_t M = 3, N = 2, ldc = 5;
  std::vector<float> C(M * ldc, 7.0f);
  const float none = 0.0f;
  gemm(M, N, 0, &none, 0, 1, &none, 1, 0, C.data(), ldc, true);
  CHECK(C == std::vector<float>(M * ldc, 7.0f));
  gemm(M, N, 0, &none, 0, 1, &none, 1, 0, C.data(), ldc, false);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < ldc; ++j) {
      CAPTURE(i);
      CAPTURE(j);
      CHECK(C[i * ldc + j] == (j < N ? 0.0f : 7.0f));
    }
}

// linear's bias goes in as the GEMM writes C. It must give the bits of C filled with the bias
// and the product accumulated onto it (what linear did before): on full, edge and narrow (at most
// 16 columns) tiles, across N and K blocks (added once, not per K slice, and at the right column
// of each block), with B packed ahead, in both few-row layouts, with K = 0, on 1 and 2 threads,
// and where Bᵀ is read in place (64 and 60 rows, whose bits must be those of B packed ahead).
TEST_CASE_FIXTURE(anatomy::testing::FastKernels,
                  "gemm with a bias: the bits of C = bias then C += A B") {
  manual_seed(5);
  const int before = get_num_threads();
  struct Case {
    int64_t M, N, K;
  };
  for (const Case c : {Case{37, 2100, 300}, Case{64, 96, 40}, Case{37, 77, 40}, Case{1, 300, 50},
                       Case{3, 70, 19}, Case{5, 33, 0}, Case{60, 77, 300}, Case{40, 300, 600}})
    for (bool tb : {false, true})
      for (int threads : {1, 2})
        for (bool packed_ahead : {false, true}) {
          // Plain variables, not a structured binding: clang cannot capture one in CAPTURE's
          // lambda.
          const int64_t M = c.M, N = c.N, K = c.K;
          CAPTURE(M);
          CAPTURE(N);
          CAPTURE(K);
          CAPTURE(tb);
          CAPTURE(threads);
          CAPTURE(packed_ahead);
          set_num_threads(threads);
          auto A = randn({M * K}).to_vector();
          auto B = randn({K * N}).to_vector();
          auto bias = randn({N}).to_vector();
          const int64_t rsb = tb ? 1 : N, csb = tb ? K : 1;
          std::vector<float> want(M * N), got(M * N, -7.0f);  // got's old values must not show
          for (int64_t i = 0; i < M; ++i) std::copy(bias.begin(), bias.end(), &want[i * N]);
          gemm(M, N, K, A.data(), K, 1, B.data(), rsb, csb, want.data(), N, true);
          const PackedB packed = pack_b_blocks(K, N, B.data(), rsb, csb);
          gemm(M, N, K, A.data(), K, 1, B.data(), rsb, csb, got.data(), N, false,
               packed_ahead && K > 0 ? packed.data() : nullptr, bias.data());
          CHECK(got == want);
          auto ref = naive(M, N, K, A, K, 1, B, rsb, csb);
          for (int64_t i = 0; i < M * N; ++i) ref[i] += bias[i % N];
          CHECK_CLOSE(from_vector(got, {M, N}), from_vector(ref, {M, N}), 2e-3, 1e-4);
        }
  set_num_threads(before);
}

// The GELU epilogue (linear_gelu): C holds the very bits of the plain product with its bias, and
// `out` (with a leading dimension of its own) holds gelu(C) as the gelu op computes it, on every
// path: a few rows, one M block, several M blocks, K over one slice (the activation must go on the
// last slice's sums, not the first's), B packed ahead, Bᵀ read in place (64 and 31 rows), K = 0;
// on 1 and 2 threads. Also a row-major B (an input gradient's form) of a long K over few rows,
// whose K slices go outside the column blocks: each block's activation must still wait for its
// last slice.
TEST_CASE_FIXTURE(anatomy::testing::FastKernels,
                  "gemm with a GELU epilogue: C is the pre-activation, out is gelu(C)") {
  manual_seed(6);
  const int before = get_num_threads();
  struct Case {
    int64_t M, N, K;
    bool b_rows = false;  // B row-major (else Bᵀ, as linear's weight)
  };
  for (const Case c : {Case{2, 70, 19}, Case{64, 96, 40}, Case{37, 2100, 300}, Case{300, 70, 520},
                       Case{5, 33, 0}, Case{31, 45, 300}, Case{40, 300, 600, true}})
    for (bool tanh_form : {false, true})
      for (int threads : {1, 2})
        for (bool packed_ahead : {false, true}) {
          const int64_t M = c.M, N = c.N, K = c.K, ldo = N + 3;
          const int64_t rsb = c.b_rows ? N : 1, csb = c.b_rows ? 1 : K;
          CAPTURE(M);
          CAPTURE(N);
          CAPTURE(K);
          CAPTURE(tanh_form);
          CAPTURE(threads);
          CAPTURE(packed_ahead);
          set_num_threads(threads);
          auto A = randn({M * K}).to_vector();
          auto B = randn({K * N}).to_vector();
          auto bias = randn({N}).to_vector();
          std::vector<float> plain(M * N), C(M * N, -7.0f), out(M * ldo, -7.0f);
          gemm(M, N, K, A.data(), K, 1, B.data(), rsb, csb, plain.data(), N, false, nullptr,
               bias.data());
          const PackedB packed = pack_b_blocks(K, N, B.data(), rsb, csb);
          GemmActivation act{
              .kind = tanh_form ? GemmActivation::Kind::GeluTanh : GemmActivation::Kind::GeluErf,
              .out = out.data(),
              .ldo = ldo};
          gemm(M, N, K, A.data(), K, 1, B.data(), rsb, csb, C.data(), N, false,
               packed_ahead && K > 0 ? packed.data() : nullptr, bias.data(), &act);
          CHECK(C == plain);
          const auto want = gelu(from_vector(plain, {M, N}), tanh_form ? "tanh" : "none");
          std::vector<float> got(M * N), pad;
          for (int64_t i = 0; i < M; ++i) {
            std::copy_n(out.data() + i * ldo, N, got.data() + i * N);
            pad.insert(pad.end(), out.data() + i * ldo + N, out.data() + (i + 1) * ldo);
          }
          CHECK_CLOSE(from_vector(got, {M, N}), want, 1e-6, 1e-6);
          CHECK(std::all_of(pad.begin(), pad.end(), [](float v) { return v == -7.0f; }));
          // In place (out = C, inference's form): C ends as the very bits `out` received.
          std::vector<float> in_place(M * N, -7.0f);
          GemmActivation over_c = act;
          over_c.out = in_place.data();
          over_c.ldo = N;
          gemm(M, N, K, A.data(), K, 1, B.data(), rsb, csb, in_place.data(), N, false,
               packed_ahead && K > 0 ? packed.data() : nullptr, bias.data(), &over_c);
          CHECK(in_place == got);
        }
  set_num_threads(before);
}
