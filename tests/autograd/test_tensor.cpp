// The Tensor handle: factories, metadata, views sharing storage, int64 ids, errors.
#include <array>

#include "helpers.hpp"
#include "kernels/uniform_fill.hpp"

using namespace anatomy;
using testing::check_error;

TEST_CASE("factories and metadata") {
  Tensor z = zeros({2, 3});
  CHECK(z.shape() == Shape{2, 3});
  CHECK(z.dim() == 2);
  CHECK(z.numel() == 6);
  CHECK(z.size(-1) == 3);
  CHECK(z.is_contiguous());
  CHECK(ones({2}).to_vector() == std::vector<float>{1, 1});
  CHECK(full({2}, 7.5f).to_vector() == std::vector<float>{7.5f, 7.5f});
  CHECK(arange(4).dtype() == kInt64);
  CHECK(arange(1, 2, 0.25, kFloat32).to_vector() == std::vector<float>{1, 1.25f, 1.5f, 1.75f});
  Tensor t = tensor({{1.0f, 2.0f}, {3.0f, 4.0f}});
  CHECK(t.dtype() == kFloat32);
  CHECK(t.shape() == Shape{2, 2});
  CHECK(tensor({{2051, 10029}}).dtype() == kInt64);
  CHECK(tensor(3.5).item() == 3.5f);
  CHECK(tril(ones({3, 3})).to_vector() == std::vector<float>{1, 0, 0, 1, 1, 0, 1, 1, 1});
  CHECK(triu(ones({2, 3}), 1).to_vector() == std::vector<float>{0, 1, 1, 0, 0, 1});
}

TEST_CASE("random numbers are reproducible after manual_seed") {
  manual_seed(123);
  auto a = randn({100}).to_vector();
  manual_seed(123);
  auto b = randn({100}).to_vector();
  CHECK(a == b);
  manual_seed(124);
  CHECK(randn({100}).to_vector() != a);
  // N(0, 1) in distribution: mean ~ 0, variance ~ 1 over many draws.
  manual_seed(0);
  Tensor n = randn({100000});
  CHECK(std::abs(n.mean().item()) < 0.02f);
  CHECK(std::abs(n.var().item() - 1.0f) < 0.02f);
  Tensor u = rand({100000});
  CHECK(u.min().item() >= 0.0f);
  CHECK(u.max().item() < 1.0f);
  Tensor r = randint(3, 7, {1000});
  CHECK(r.dtype() == kInt64);
  auto rv = r.to_int_vector();
  CHECK(*std::min_element(rv.begin(), rv.end()) == 3);
  CHECK(*std::max_element(rv.begin(), rv.end()) == 6);
}

namespace {
// The default generator before any test draws from it or seeds it.
const Generator::State kInitialState = default_generator().get_state();
}  // namespace

TEST_CASE("before any manual_seed, the default generator is as manual_seed(0) leaves it") {
  const auto zero = Generator(0).get_state();
  CHECK(kInitialState.state == zero.state);
  CHECK(kInitialState.inc == zero.inc);
}

TEST_CASE("index_select along an inner dimension, as torch") {
  Tensor a = arange(24, kFloat32).reshape({2, 3, 4});
  // torch.index_select(torch.arange(24.).reshape(2, 3, 4), 1, torch.tensor([2, 0]))
  CHECK(index_select(a, 1, tensor({2, 0})).to_vector() ==
        std::vector<float>{8, 9, 10, 11, 0, 1, 2, 3, 20, 21, 22, 23, 12, 13, 14, 15});
  CHECK(index_select(a, 2, tensor({3, 3, 1})).to_vector() ==
        std::vector<float>{3, 3, 1, 7, 7, 5, 11, 11, 9, 15, 15, 13, 19, 19, 17, 23, 23, 21});
}

TEST_CASE("the generator is PCG32: the reference implementation's demo stream") {
  // pcg32-demo seeds with pcg32_srandom(42, 54) and prints these six numbers first.
  Generator g;
  g.set_state({0, (54u << 1u) | 1u, false, 0.0f});  // pcg32_srandom: state 0, stream 54
  g.next_u32();
  auto s = g.get_state();
  s.state += 42;
  g.set_state(s);
  g.next_u32();
  std::vector<uint32_t> got;
  for (int i = 0; i < 6; ++i) got.push_back(g.next_u32());
  CHECK(got == std::vector<uint32_t>{0xa15c02b7, 0x7b47f409, 0xba1d3330, 0x83d2f293, 0xbfa4784b,
                                     0xcbed606e});
}

// What each sampler takes from the stream: randint two 32-bit draws per value (a 64-bit number
// reduced modulo the range), rand and randn as many values as they return (randn's Box-Muller
// pairs: one pair per two values). A sampler that drew once too often would shift every random
// number after it.
TEST_CASE("randint, rand and randn use exactly their share of the generator's stream") {
  auto next_after = [](auto sample, int draws) {
    manual_seed(21);
    Generator copy = default_generator();
    for (int i = 0; i < draws; ++i) copy.next_u32();
    sample();
    return std::pair{default_generator().next_u32(), copy.next_u32()};
  };
  for (const int64_t n : {1, 5, 6}) {
    CAPTURE(n);
    auto [after, want] = next_after([n] { randint(0, 10, {n}); }, static_cast<int>(2 * n));
    CHECK(after == want);
    std::tie(after, want) = next_after([n] { rand({n}); }, static_cast<int>(n));
    CHECK(after == want);
  }
  auto [after, want] = next_after([] { randn({6}); }, 6);
  CHECK(after == want);
}

TEST_CASE("Generator::advance(n) lands where n calls of next_u32 land") {
  for (const uint64_t n : {0ull, 1ull, 2ull, 3ull, 37ull, 1000ull, 65536ull, 100003ull}) {
    CAPTURE(n);
    Generator stepped(7), jumped(7);
    for (uint64_t i = 0; i < n; ++i) stepped.next_u32();
    jumped.advance(n);
    CHECK(jumped.get_state().state == stepped.get_state().state);
    CHECK(jumped.next_u32() == stepped.next_u32());
  }
}

// uniform_fill draws in L lanes (8, or 32 with AVX-512), each its own LCG stepping L calls at a
// time: a lane started at the wrong call, a wrong L-step multiplier or a tail left out would
// change a value or where the generator ends. Lengths on both sides of the lanes' 2L-call
// minimum and of a step, for both L.
TEST_CASE("uniform_fill(generator, n) gives the n values of n calls of uniform(), and ends there") {
  for (const int64_t n :
       {0, 1, 8, 15, 16, 17, 23, 24, 31, 32, 33, 63, 64, 65, 95, 96, 97, 1000, 4099}) {
    CAPTURE(n);
    Generator one(11), filled(11);
    one.uniform();  // start where no lane boundary is
    filled.uniform();
    std::vector<float> want(static_cast<size_t>(n)), got(static_cast<size_t>(n), -1.0f);
    for (auto& v : want) v = one.uniform();
    uniform_fill(filled, got.data(), n);
    CHECK(got == want);
    CHECK(filled.get_state().state == one.get_state().state);
    CHECK(filled.uniform() == one.uniform());
  }
}

// rand and dropout split their draws between threads, each chunk jumping ahead to its first
// element: every element must get the number a one-thread loop over the stream gives it, and the
// generator must end where that loop ends. 100003 elements make several chunks with 2 threads.
TEST_CASE("rand and dropout draw the one-thread stream, in element order, with 2 threads") {
  const int before = get_num_threads();
  set_num_threads(2);
  const int64_t n = 100003;
  manual_seed(5);
  Generator serial = default_generator();
  Tensor r = rand({n});
  std::vector<float> want(static_cast<size_t>(n));
  for (auto& w : want) w = serial.uniform();
  CHECK(r.to_vector() == want);
  CHECK(default_generator().next_u32() == serial.next_u32());

  manual_seed(6);
  serial = default_generator();
  Tensor x = randn({n});
  for (int64_t i = 0; i < n; ++i) serial.normal();
  Tensor y = dropout(x, 0.3f, true);
  const auto xv = x.to_vector(), yv = y.to_vector();
  int64_t agree = 0;
  for (size_t i = 0; i < xv.size(); ++i)
    agree += yv[i] == (serial.uniform() >= 0.3f ? xv[i] * (1.0f / 0.7f) : 0.0f);
  CHECK(agree == n);
  CHECK(default_generator().next_u32() == serial.next_u32());
  set_num_threads(before);
}

TEST_CASE("the caching allocator hands a freed buffer of the same size class back") {
  const size_t limit = cache_limit();
  set_cache_limit(size_t{64} << 20);  // also where the sanitizer build caches nothing by default
  empty_cache();
  const AllocatorStats s0 = allocator_stats();
  CHECK(s0.cached_bytes == 0);
  const float* first = nullptr;
  {
    Tensor a = empty({1000, 100});  // 400000 bytes: the class of 393216..458752 is 458752
    first = a.data();
    CHECK(reinterpret_cast<uintptr_t>(first) % 64 == 0);
    CHECK(allocator_stats().in_use_bytes == s0.in_use_bytes + 458752);
  }
  CHECK(allocator_stats().cached_bytes == 458752);
  CHECK(allocator_stats().in_use_bytes == s0.in_use_bytes);
  {
    Tensor b = empty({110000});  // 440000 bytes: the same class, so the same buffer
    CHECK(b.data() == first);
    CHECK(allocator_stats().hits == s0.hits + 1);
    CHECK(allocator_stats().cached_bytes == 0);
    Tensor c = empty({120000});  // 480000 bytes: the next class (524288), a new buffer
    CHECK(c.data() != first);
    CHECK(allocator_stats().misses == s0.misses + 2);
  }
  CHECK(allocator_stats().cached_bytes == 458752 + 524288);
  // Beyond the limit a freed buffer goes back to the system.
  set_cache_limit(500000);
  CHECK(allocator_stats().cached_bytes <= 500000);
  empty_cache();
  CHECK(allocator_stats().cached_bytes == 0);
  { Tensor d = empty({110000}); }
  CHECK(allocator_stats().cached_bytes == 458752);
  { Tensor e = empty({120000}); }  // would make 983040 > 500000: freed instead
  CHECK(allocator_stats().cached_bytes == 458752);
  // Small buffers are never cached.
  { Tensor f = empty({10}); }
  CHECK(allocator_stats().cached_bytes == 458752);
  // A smaller request takes a cached buffer up to twice its class, counted at its real size
  // while in use, and freeing it returns it to its own class.
  set_cache_limit(size_t{64} << 20);
  {
    Tensor g = empty({75000});  // 300000 bytes: class 327680, none cached; 458752 <= 2 x 327680
    CHECK(allocator_stats().cached_bytes == 0);
    CHECK(allocator_stats().in_use_bytes == s0.in_use_bytes + 458752);
  }
  CHECK(allocator_stats().cached_bytes == 458752);
  CHECK(allocator_stats().in_use_bytes == s0.in_use_bytes);
  {
    Tensor h = empty({110000});  // its own class again: the buffer g had
    CHECK(allocator_stats().cached_bytes == 0);
    Tensor i = empty({50000});  // 200000 bytes: class 229376; 458752 is more than twice that
    CHECK(i.data() != h.data());
  }
  CHECK(allocator_stats().cached_bytes == 458752 + 229376);
  set_cache_limit(limit);
  empty_cache();
}

TEST_CASE("copies share storage, and views share storage and see writes") {
  Tensor a = zeros({2, 3});
  Tensor b = a;  // a cheap handle
  b.fill_(1.0f);
  CHECK(a.to_vector() == std::vector<float>(6, 1.0f));
  Tensor t = a.transpose(0, 1);
  CHECK_FALSE(t.is_contiguous());
  CHECK(t.shape() == Shape{3, 2});
  a.select(0, 1).fill_(5.0f);
  CHECK(t.to_vector() == std::vector<float>{1, 5, 1, 5, 1, 5});
  CHECK(t.contiguous().is_contiguous());
  // A dim of size 1 is never stepped along, so its stride does not matter (as torch:
  // torch.randn(1, 4).t() has strides (1, 4) and is contiguous).
  Tensor column = randn({1, 4}).t();
  CHECK(column.strides() == std::vector<int64_t>{1, 4});
  CHECK(column.is_contiguous());
  Tensor c = a.clone();
  c.fill_(0.0f);
  CHECK(a.sum().item() == 18.0f);  // clone owns its storage
  // fill_ on a view writes the view's elements and not one more, float or int64.
  Tensor f = arange(10, kFloat32), i = arange(10, kInt64);
  f.narrow(0, 2, 3).fill_(7.0f);
  i.narrow(0, 2, 3).fill_(7.0f);
  CHECK(f.to_vector() == std::vector<float>{0, 1, 7, 7, 7, 5, 6, 7, 8, 9});
  CHECK(i.to_int_vector() == std::vector<int64_t>{0, 1, 7, 7, 7, 5, 6, 7, 8, 9});
  Tensor grid = arange(12, kInt64).reshape({3, 4});
  grid.narrow(1, 1, 2).fill_(0.0f);  // two runs of two, strided
  CHECK(grid.to_int_vector() == std::vector<int64_t>{0, 0, 0, 3, 4, 0, 0, 7, 8, 0, 0, 11});
}

TEST_CASE("the book's indexing: x[:, 0, :] and slices") {
  Tensor x = arange(24, kFloat32).reshape({2, 3, 4});
  Tensor first = x.select(1, 0);
  CHECK(first.shape() == Shape{2, 4});
  CHECK(first.to_vector() == std::vector<float>{0, 1, 2, 3, 12, 13, 14, 15});
  CHECK(x.slice(2, 1, std::nullopt, 2).to_vector() ==
        std::vector<float>{1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23});
  CHECK(x.slice(1, -1, std::nullopt).shape() == Shape{2, 1, 4});
  CHECK(x[1][2].to_vector() == std::vector<float>{20, 21, 22, 23});
}

// torch's .to(torch.int64) truncates toward zero, and back to float is exact for these.
// torch.arange refuses a range whose direction disagrees with the step's sign, however small
// (torch 2.13: all of these raise); the same range and step agreeing gives the values.
TEST_CASE("arange: a step against the direction of the range is refused, as torch") {
  for (const auto& range : std::vector<std::array<double, 3>>{{0, -1, 2},
                                                              {0, 1, -2},
                                                              {0, -0.5, 1},
                                                              {0, -1e-200, 1e-200},
                                                              {0, 1e-200, -1e-200},
                                                              {3, 1, 1},
                                                              {-3, -1, -1}}) {
    const double start = range[0], end = range[1], step = range[2];  // (clang: no bindings here)
    CAPTURE(end);
    CAPTURE(step);
    check_error([&] { arange(start, end, step, kFloat32); },
                {"arange", "inconsistent with step sign"});
  }
  CHECK(arange(0, -1, -0.5, kFloat32).to_vector() == std::vector<float>{0, -0.5f});
  CHECK(arange(5, 5, 1, kInt64).numel() == 0);
  // The direction is end - start (end + start would pass every range from 0).
  CHECK(arange(-5, -2, 1, kInt64).to_int_vector() == std::vector<int64_t>{-5, -4, -3});
}

// fill_ on a view whose elements are not adjacent (a column: stride 3) writes exactly them.
TEST_CASE("fill_ on a strided view writes its elements and no others") {
  Tensor x = zeros({4, 3});
  x.t()[1].fill_(5.0f);  // x[:, 1]
  CHECK(x.to_vector() == std::vector<float>{0, 5, 0, 0, 5, 0, 0, 5, 0, 0, 5, 0});
  Tensor i = zeros({4, 3}, kInt64);
  i.t()[2].fill_(7.0f);
  CHECK(i.to_int_vector() == std::vector<int64_t>{0, 0, 7, 0, 0, 7, 0, 0, 7, 0, 0, 7});
}

// A large strided copy splits its first dim between threads, each share starting at its own
// offset on both sides: attention's [3, B, H, T, D] gradient laid out as [B, T, 3, H, D], and an
// int64 one whose first dim is broadcast (stride 0). Every element is compared with its index.
TEST_CASE("a permuted copy over many rows on 2 threads puts every element where it belongs") {
  const int before = get_num_threads();
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    const int64_t B = 12, H = 4, T = 64, D = 32;
    Tensor a = arange(0.0, static_cast<double>(3 * B * H * T * D), 1, Dtype::Float32)
                   .reshape({3, B, H, T, D});
    Tensor c = a.permute({1, 3, 0, 2, 4}).contiguous();  // [B, T, 3, H, D]
    REQUIRE(c.is_contiguous());
    const std::vector<float> got = c.to_vector();
    int64_t wrong = 0, at = 0;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t s = 0; s < 3; ++s)
          for (int64_t h = 0; h < H; ++h)
            for (int64_t d = 0; d < D; ++d, ++at)
              wrong += got[at] != static_cast<float>((((s * B + b) * H + h) * T + t) * D + d);
    CHECK(wrong == 0);
    Tensor row = arange(40000.0);  // int64
    Tensor many = zeros({8, 40000}, kInt64);
    many.copy_(row.unsqueeze(0).expand({8, 40000}));
    const std::vector<int64_t> rows = many.to_int_vector();
    int64_t bad = 0;
    for (int64_t i = 0; i < 8 * 40000; ++i) bad += rows[i] != i % 40000;
    CHECK(bad == 0);
    // Into an expanded view: every row writes the same 4 floats, and the last row's must stay.
    // Threads splitting the rows would leave the row of whichever finished last: in 4 of 5 runs
    // of 20 copies here, so 60 copies.
    const int64_t n = 200000;
    Tensor src = arange(0.0, 4.0 * static_cast<double>(n), 1, Dtype::Float32).reshape({n, 4});
    const float last = 4.0f * static_cast<float>(n - 1);
    int64_t lost = 0;
    for (int rep = 0; rep < 60; ++rep) {
      Tensor base = zeros({4});
      base.expand({n, 4}).copy_(src);
      lost += base.to_vector() != std::vector<float>{last, last + 1, last + 2, last + 3};
    }
    CHECK(lost == 0);
  }
  set_num_threads(before);
}

// add_ into a strided part of a buffer (the engine adds q's, k's and v's gradients into one, in
// the projection's [B, T, 3, H, D] order) from a transposed gradient, on 1 and 2 threads: every
// element of the part gets its own value times alpha, and the rest of the buffer stays. Then the
// cases that must read before they write: a square matrix plus its own transpose, and a
// destination that repeats its elements (an expanded view: the last row's sum stays, as copy_).
TEST_CASE("add_ on strided views adds each element once, also into itself transposed") {
  const int before = get_num_threads();
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    CAPTURE(threads);
    const int64_t B = 24, T = 40, H = 4, D = 32;  // rows of 5120 floats: 4 chunks
    Tensor buffer = full({B, T, 3, H, D}, 1.0f);
    Tensor g = arange(0.0, static_cast<double>(B * H * T * D), 1, Dtype::Float32)
                   .reshape({B, H, T, D});  // dq, (B, H, T, D)
    buffer.select(2, 1).add_(g.transpose(1, 2), 0.5f);
    const std::vector<float> got = buffer.to_vector();
    int64_t wrong = 0, at = 0;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t s = 0; s < 3; ++s)
          for (int64_t h = 0; h < H; ++h)
            for (int64_t d = 0; d < D; ++d, ++at) {
              const float dq = static_cast<float>(((b * H + h) * T + t) * D + d);
              wrong += got[at] != (s == 1 ? 1.0f + 0.5f * dq : 1.0f);
            }
    CHECK(wrong == 0);
    Tensor m = arange(0.0, 9.0, 1, Dtype::Float32).reshape({3, 3});
    m.add_(m.t());
    CHECK(m.to_vector() == std::vector<float>{0, 4, 8, 4, 8, 12, 8, 12, 16});
    Tensor row = zeros({2});
    row.expand({3, 2}).add_(arange(0.0, 6.0, 1, Dtype::Float32).reshape({3, 2}));
    CHECK(row.to_vector() == std::vector<float>{4, 5});
  }
  set_num_threads(before);
}

// matmul and linear multiply a [B, T, K] input as one [B·T, K] matrix when its rows stack with
// one stride. A narrowed T breaks that (rows of one batch item are 4 floats apart, items 12),
// also when B equals the base's T, where comparing with the wrong size would accept it.
TEST_CASE("matmul and linear on a narrowed 3-d input give the contiguous input's values") {
  manual_seed(3);
  Tensor base = randn({3, 3, 4});
  Tensor a = base.narrow(1, 0, 2);  // [3, 2, 4], strides (12, 4, 1)
  REQUIRE_FALSE(a.is_contiguous());
  Tensor w = randn({4, 5}), lw = randn({5, 4}), lb = randn({5});
  CHECK_CLOSE(matmul(a, w), matmul(a.contiguous(), w), 1e-6, 1e-6);
  CHECK_CLOSE(linear(a, lw, lb), linear(a.contiguous(), lw, lb), 1e-6, 1e-6);
}

TEST_CASE("to() between float32 and int64 converts every element") {
  Tensor f = tensor({2.7f, -1.5f, 3.0f, -0.25f}).to(kInt64);
  CHECK(f.dtype() == kInt64);
  CHECK(f.to_int_vector() == std::vector<int64_t>{2, -1, 3, 0});
  Tensor i = tensor({{-4, 7}, {9, 1}}).to(kFloat32);
  CHECK(i.dtype() == kFloat32);
  CHECK(i.shape() == Shape{2, 2});
  CHECK(i.to_vector() == std::vector<float>{-4, 7, 9, 1});
}

TEST_CASE("int64 index ops") {
  Tensor w = arange(12, kFloat32).reshape({4, 3});
  Tensor ids = tensor({{3, 0}});
  Tensor e = embedding(ids, w);
  CHECK(e.shape() == Shape{1, 2, 3});
  CHECK(e.to_vector() == std::vector<float>{9, 10, 11, 0, 1, 2});
  CHECK(argmax(tensor({{0.1f, 0.7f, 0.2f}, {0.9f, 0.0f, 0.1f}}), 1).to_int_vector() ==
        std::vector<int64_t>{1, 0});
  CHECK(argmax(tensor({{0.1f, 0.7f}, {0.9f, 0.0f}})).item<int64_t>() == 2);
  auto [values, indices] = max(tensor({{1.0f, 5.0f, 2.0f}, {7.0f, 0.0f, 3.0f}}), 0);
  CHECK(values.to_vector() == std::vector<float>{7, 5, 3});
  CHECK(indices.to_int_vector() == std::vector<int64_t>{1, 0, 1});
  // Selection on int64 tensors keeps the values and the dtype (torch's index_select, gather,
  // tril on a LongTensor).
  Tensor l = tensor({{10, 11, 12}, {20, 21, 22}});
  Tensor picked = index_select(l, 1, tensor({2, 0}));
  CHECK(picked.dtype() == Dtype::Int64);
  CHECK(picked.to_int_vector() == std::vector<int64_t>{12, 10, 22, 20});
  Tensor gathered = gather(l, 1, tensor({{1, 1}, {0, 2}}));
  CHECK(gathered.dtype() == Dtype::Int64);
  CHECK(gathered.to_int_vector() == std::vector<int64_t>{11, 11, 20, 22});
  Tensor lower = tril(l);
  CHECK(lower.dtype() == Dtype::Int64);
  CHECK(lower.to_int_vector() == std::vector<int64_t>{10, 0, 0, 20, 21, 0});
  // Comparisons with a number, on floats and on ids (torch: x != 2, x < 2).
  CHECK(ne(tensor({1.0f, 2.0f, 3.0f}), 2.0f).to_vector() == std::vector<float>{1, 0, 1});
  CHECK(lt(tensor({1.0f, 2.0f, 3.0f}), 2.0f).to_vector() == std::vector<float>{1, 0, 0});
  CHECK(ne(tensor({1, 2, 3}), 2.0f).to_vector() == std::vector<float>{1, 0, 1});
  CHECK(lt(tensor({1, 2, 3}), 3.0f).to_vector() == std::vector<float>{1, 1, 0});
}

TEST_CASE("split, chunk, cat, stack") {
  Tensor x = arange(10, kFloat32);
  auto parts = split(x, 4);
  REQUIRE(parts.size() == 3);
  CHECK(parts[2].to_vector() == std::vector<float>{8, 9});
  auto ch = chunk(x, 3);
  REQUIRE(ch.size() == 3);
  CHECK(ch[0].numel() == 4);
  CHECK(cat(parts).to_vector() == x.to_vector());
  CHECK(stack({x, x}).shape() == Shape{2, 10});
  CHECK(stack({x, x}, 1).shape() == Shape{10, 2});
  // split_size 0 splits only an empty dimension, as in torch.
  const auto empty_parts = split(zeros({0, 3}), 0);
  REQUIRE(empty_parts.size() == 1);
  CHECK(empty_parts[0].shape() == Shape{0, 3});
  anatomy::testing::check_error([&] { split(x, 0); },
                                {"split", "can only be 0 if dimension size is 0", "size of 10"});
  anatomy::testing::check_error([&] { split(x, -1); }, {"split", "non-negative", "got -1"});
}

TEST_CASE("max and min along the only dimension of a vector, and of a 0-d tensor") {
  // torch.max(torch.tensor([1., 5., 2.]), 0) -> (tensor(5.), tensor(1))
  const auto [v, i] = max(tensor({1.0f, 5.0f, 2.0f}), 0);
  CHECK(v.dim() == 0);
  CHECK(v.item<float>() == 5.0f);
  CHECK(i.item<int64_t>() == 1);
  const auto [lo, at] = min(tensor({1.0f, 5.0f, -2.0f}), 0, true);
  CHECK(lo.shape() == Shape{1});
  CHECK(lo.to_vector() == std::vector<float>{-2.0f});
  CHECK(at.to_int_vector() == std::vector<int64_t>{2});
  // A 0-d tensor is its own maximum, at index 0.
  const auto [v0, i0] = max(full({}, 3.0f), 0);
  CHECK(v0.dim() == 0);
  CHECK(v0.item<float>() == 3.0f);
  CHECK(i0.item<int64_t>() == 0);
}

TEST_CASE("errors name the op, what was expected and what came") {
  Tensor a = randn({5, 768}), b = randn({512, 64});
  check_error([&] { matmul(a, b); },
              {"mat1 and mat2 shapes cannot be multiplied (5x768 and 512x64)"});
  // linear names its operands as torch's F.linear does: the input's rows, and the weight
  // transposed.
  check_error(
      [&] {
        linear(randn({5, 7}), randn({4, 6}));
      },
      {"mat1 and mat2 shapes cannot be multiplied (5x7 and 6x4)"});
  check_error(
      [&] {
        linear(randn({2, 5, 7}), randn({4, 6}));
      },
      {"mat1 and mat2 shapes cannot be multiplied (10x7 and 6x4)"});
  // A batched operand: both shapes whole and the contracted sizes, not "mat1 and mat2".
  check_error(
      [&] {
        matmul(randn({2, 3}), randn({4, 5, 6}));
      },
      {"matmul: shapes [2, 3] and [4, 5, 6] cannot be multiplied (3 != 5"});
  check_error(
      [&] {
        linear(randn({1, 5, 768}), randn({3072, 512}));
      },
      {"linear", "cannot be multiplied"});
  check_error(
      [&] {
        bmm(randn({1, 5, 64}), randn({1, 32, 5}));
      },
      {"bmm",
       "Expected size for first two dimensions of batch2 tensor to be: [1, 64] but "
       "got: [1, 32]."});
  check_error(
      [&] {
        add(randn({2, 3}), randn({4}));
      },
      {"add", "The size of tensor a (3) must match the size of tensor b (4)"});
  check_error(
      [&] {
        softmax(randn({2, 3}), 2);
      },
      {"softmax", "Dimension out of range", "[-2, 1]", "got 2"});
  check_error(
      [&] {
        randn({1, 5, 768}).select(1, 5);
      },
      {"select", "index 5 out of range", "[1, 5, 768]", "dimension 1"});
  check_error(
      [&] {
        embedding(tensor({{30522}}), randn({30522, 4}));
      },
      {"embedding", "index 30522 is out of range", "30522 rows"});
  check_error([&] { embedding(tensor({{-1}}), randn({3, 4})); }, {"embedding", "index -1"});
  check_error(
      [&] {
        randn({2, 3}).view({4, 2});
      },
      {"view", "[4, 2]", "invalid for input of size 6"});
  check_error([&] { randn({2, 3}).t().view({6}); }, {"view", "reshape"});
  check_error(
      [&] {
        cross_entropy(randn({3, 5}), tensor({1, 7, 2}));
      },
      {"cross_entropy", "Target 7 is out of bounds"});
  check_error(
      [&] {
        cross_entropy(randn({3, 5}), tensor({1, 2}));
      },
      {"cross_entropy", "Expected target size [3], got [2]"});
  check_error([&] { cross_entropy(randn({3, 5}), randn({3})); }, {"cross_entropy", "Long"});
  check_error(
      [&] {
        layer_norm(randn({1, 5, 512}), {768});
      },
      {"layer_norm", "normalized_shape=[768]", "[*, 768]", "[1, 5, 512]"});
  check_error(
      [&] {
        layer_norm(randn({2, 3}), Shape{});
      },
      {"layer_norm", "at least 1-dimensional", "normalized_shape = []"});
  check_error(
      [&] {
        cat({randn({2, 3}), randn({3, 3})}, 1);
      },
      {"cat", "Sizes of tensors must match except in dimension 1"});
  // The last dimension is compared too, as PyTorch words it.
  check_error(
      [&] {
        cat({randn({2, 3}), randn({2, 4})}, 0);
      },
      {"cat", "Sizes of tensors must match except in dimension 0",
       "Expected size 3 but got size 4 for tensor number 1"});
  check_error([&] { randn({2, 3}).expand({4, 3}); }, {"expand", "must match the existing size"});
  check_error(
      [&] {
        gather(randn({2, 3}), 1, tensor({{0, 3}, {1, 1}}));
      },
      {"gather", "index 3 is out of bounds"});
  check_error(
      [&] {
        index_select(randn({2, 3}), 0, tensor({2}));
      },
      {"index_select", "index 2 is out of range"});
  check_error([&] { dropout(randn({2}), 1.5f); }, {"dropout", "between 0 and 1", "1.5"});
  check_error([&] { exp(tensor({1, 2})); }, {"exp", "float32", "int64"});
  check_error([&] { randn({2, 2}).item(); }, {"item", "4 elements"});
  check_error([&] { Tensor().shape(); }, {"undefined"});
  check_error([&] { tensor({{1.0f, 2.0f}, {3.0f}}); }, {"tensor", "expected sequence of length 2"});
  check_error([&] { randn({2, 3}).permute({0, 0}); }, {"permute", "repeated dim"});
  check_error([&] { randn({2, 3}).narrow(1, 2, 2); }, {"narrow", "exceeds dimension size (3)"});
  check_error([&] { sum(randn({2, 3}), {0, 0}); }, {"sum", "dim 0 appears multiple times"});
  check_error([&] { gelu(randn({2}), "fast"); }, {"gelu", "none or tanh", "fast"});
}

// Logits-sized rows, split between threads: each row's first largest value, ties included (a
// search that took the last one, or lost its place between vectors, would differ).
TEST_CASE("argmax over long rows on 2 threads: the first largest of each row") {
  const int before = get_num_threads();
  set_num_threads(2);
  manual_seed(8);
  const int64_t rows = 300, V = 5003;
  Tensor x = randint(0, 50, {rows, V}).to(Dtype::Float32);  // many ties of the largest
  const auto got = argmax(x, 1).to_int_vector();
  const auto v = x.to_vector();
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = v.data() + r * V;
    CHECK(got[r] == std::max_element(row, row + V) - row);
  }
  set_num_threads(before);
}

TEST_CASE("NaN propagates through max, min, their indices, softmax, relu, clamp, as in PyTorch") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // PyTorch 2.13: x.amax(1) = [nan, 7], x.amin(0) = [1, nan, 0, 2], x.max(1) = ([nan, 7], [1, 3]),
  // x.argmin(1) = [1, 2], softmax(x, 1)[0] all nan.
  Tensor x = tensor({{1.0f, nan, 3.0f, 2.0f}, {4.0f, 5.0f, 0.0f, 7.0f}});
  auto amax1 = amax(x, {1}).to_vector();
  CHECK(std::isnan(amax1[0]));
  CHECK(amax1[1] == 7.0f);
  auto amin0 = amin(x, {0}).to_vector();  // the strided path: one row per step
  CHECK(amin0[0] == 1.0f);
  CHECK(std::isnan(amin0[1]));
  CHECK(amin0[2] == 0.0f);
  auto [values, indices] = max(x, 1);
  CHECK(std::isnan(values.to_vector()[0]));
  CHECK(indices.to_int_vector() == std::vector<int64_t>{1, 3});
  CHECK(argmin(x, 1).to_int_vector() == std::vector<int64_t>{1, 2});
  CHECK(argmax(tensor({{nan, 1.0f, nan}}), 1).to_int_vector() == std::vector<int64_t>{0});
  CHECK(std::isnan(x.max().item()));
  CHECK(std::isnan(x.min().item()));
  const auto s = softmax(x, 1).to_vector();
  CHECK(std::isnan(s[0]));
  CHECK(std::isnan(s[3]));
  CHECK(s[7] == doctest::Approx(0.84315f));
  // Long rows, where the SIMD loop does the work: a NaN inside a vector and one in the tail.
  for (const int64_t at : {5, 37}) {
    std::vector<float> v(40, 1.0f);
    v[static_cast<size_t>(at)] = nan;
    CAPTURE(at);
    CHECK(std::isnan(amax(from_vector(v, {40})).item()));
    std::vector<float> two(40, 2.0f);
    two.insert(two.end(), v.begin(), v.end());  // [2, 40]: the strided path, 40 wide
    const auto columns = amax(from_vector(two, {2, 40}), {0}).to_vector();
    CHECK(std::isnan(columns[static_cast<size_t>(at)]));
    CHECK(columns[static_cast<size_t>(at == 5 ? 37 : 5)] == 2.0f);
  }
  CHECK(std::isnan(relu(tensor({nan, -1.0f})).to_vector()[0]));
  CHECK(std::isnan(clamp(tensor({nan}), 0.0f, 1.0f).item()));
  CHECK(std::isnan(maximum(tensor({nan, 1.0f}), tensor({1.0f, nan})).to_vector()[0]));
  CHECK(std::isnan(maximum(tensor({nan, 1.0f}), tensor({1.0f, nan})).to_vector()[1]));
  CHECK(std::isnan(minimum(tensor({1.0f}), tensor({nan})).item()));
}
