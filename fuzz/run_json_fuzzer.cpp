// run.json, as --resume, translate, evaluate and export read it: the checked object, the options
// a resumed run takes back, and the history and loss curve the Trainer continues.
#include "fuzz/fuzz.hpp"
#include "run_folders/run_dir.hpp"
#include "training/train_options.hpp"
#include "training/trainer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  anatomy::fuzz::write("run.json", std::string(reinterpret_cast<const char*>(data), size));
  anatomy::fuzz::expect_clear_errors([&] {
    using namespace anatomy::training;
    const RunDir run{anatomy::fuzz::scratch()};
    const auto meta = run.read_run();
    TrainOptions o;
    restore_training_options(o, meta.value("options", nlohmann::json::object()));
    const auto saved = read_history(meta);
    (void)saved.curve.train.size();
    if (meta.contains("data")) {
      const auto d = run.field<nlohmann::json>(meta, "data");
      (void)d.value("task", ""), (void)d.value("corpus", ""), (void)d.value("max_chars", 0);
    }
    (void)run.field<uint64_t>(meta, "seed");
  });
  return 0;
}
