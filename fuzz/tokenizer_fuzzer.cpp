// The tokenizer files Tokenizer::save writes (tokenizer.json, .vocab.txt, .merges.txt), then
// text through whatever loaded. The input holds the four, separated by lines "----".
#include "fuzz/fuzz.hpp"
#include "tokenizers/tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto p = anatomy::fuzz::parts(std::string(reinterpret_cast<const char*>(data), size), 4);
  anatomy::fuzz::write("tokenizer.json", p[0]);
  anatomy::fuzz::write("tokenizer.vocab.txt", p[1]);
  anatomy::fuzz::write("tokenizer.merges.txt", p[2]);
  anatomy::fuzz::expect_clear_errors([&] {
    const auto tokenizer = anatomy::text::load_tokenizer(anatomy::fuzz::scratch() + "/tokenizer");
    const auto ids = tokenizer->encode(p[3]);
    for (int64_t id : ids)
      if (id < 0 || id >= tokenizer->vocab().size()) {
        std::fprintf(stderr, "encode gave id %ld outside the vocabulary\n", static_cast<long>(id));
        std::abort();
      }
    (void)tokenizer->decode(ids);
  });
  return 0;
}
