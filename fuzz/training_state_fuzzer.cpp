// A training checkpoint (last/training.safetensors) loaded into a small model, its AdamW and its
// schedule, as --resume does: every part checked before any is applied, then the position.
#include "fuzz/fuzz.hpp"
#include "nn/nn.hpp"
#include "training/trainer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace anatomy;
  static auto model = std::make_shared<nn::Sequential>(std::vector<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(4, 3), std::make_shared<nn::LayerNorm>(Shape{3})});
  const std::string path =
      fuzz::write("training.safetensors", std::string(reinterpret_cast<const char*>(data), size));
  fuzz::expect_clear_errors([&] {
    nn::AdamW optimizer(model->parameters(), {});
    nn::NoamSchedule schedule(optimizer, 16, 4, 1.0);
    const auto ck = nn::load_checkpoint(path, *model, optimizer, &schedule);
    (void)training::read_position(ck, path);
  });
  return 0;
}
