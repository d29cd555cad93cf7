// The safetensors parser: header length, JSON header, dtypes, shapes, offsets. Whatever it
// accepts must be usable: every tensor's elements are read back.
#include "fuzz/fuzz.hpp"
#include "io/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  anatomy::fuzz::expect_clear_errors([&] {
    const auto file = anatomy::parse_safetensors(bytes, "fuzz.safetensors");
    double sum = 0;
    for (const auto& [name, t] : file.tensors) {
      if (t.is_floating_point())
        for (float v : t.to_vector()) sum += v;
      else
        for (int64_t v : t.to_int_vector()) sum += static_cast<double>(v);
    }
    if (sum == 0.5) std::fprintf(stderr, " ");  // keeps the reads from being optimized away
  });
  return 0;
}
