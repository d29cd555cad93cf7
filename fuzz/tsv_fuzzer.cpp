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
      // Any number of pairs and sources: too few is an anatomy::Error, never a crash.
      const auto n = static_cast<int64_t>(corpus.pairs.size());
      (void)anatomy::data::split_by_source(corpus.pairs, anatomy::data::held_out_size(n),
                                           skip ? 0 : anatomy::data::held_out_size(n), 1, path);
      if (n >= 4) (void)anatomy::data::split_corpus_by_pair(corpus.pairs, 1, path);
    });
  return 0;
}
