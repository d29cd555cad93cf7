// The parallel-corpus reader (source<TAB>target lines), both strict and skipping bad lines, and
// the split every run makes of what it read.
#include "data/corpus.hpp"
#include "fuzz/fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path =
      anatomy::fuzz::write("corpus.tsv", std::string(reinterpret_cast<const char*>(data), size));
  for (const bool skip : {false, true})
    anatomy::fuzz::expect_clear_errors([&] {
      auto corpus =
          anatomy::data::read_tsv(path, {.max_chars = skip ? 40 : 0, .skip_malformed = skip});
      if (corpus.pairs.size() >= 3) (void)anatomy::data::split_corpus(corpus.pairs, 1, path);
    });
  return 0;
}
