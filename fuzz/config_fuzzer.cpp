// config.json: the model's TransformerConfig (and Hugging Face's config.json keys). What it
// accepts must survive its own round trip: to_json() read back gives the same config.
#include "fuzz/fuzz.hpp"
#include "models/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  anatomy::fuzz::expect_clear_errors([&] {
    using anatomy::models::TransformerConfig;
    const auto c = TransformerConfig::from_json(text, "config.json");
    const std::string saved = c.to_json();
    if (TransformerConfig::from_json(saved, "saved config.json").to_json() != saved) {
      std::fprintf(stderr, "config.json does not survive its round trip:\n%s", saved.c_str());
      std::abort();
    }
  });
  return 0;
}
