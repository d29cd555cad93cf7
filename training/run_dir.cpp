#include "training/run_dir.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "autograd/safetensors.hpp"

namespace anatomy::training {

namespace fs = std::filesystem;

void RunDir::create() const {
  std::error_code ec;
  fs::create_directories(file("best"), ec);
  if (!ec) fs::create_directories(file("last"), ec);
  if (ec) throw Error(fmt::format("cannot create the output folder {} ({})", path, ec.message()));
  // Fail now, not after an hour of training, if the folder is not writable.
  const std::string probe = file(".write-test");
  if (!std::ofstream(probe)) throw Error(fmt::format("the output folder {} is not writable", path));
  fs::remove(probe, ec);
}

nlohmann::json RunDir::read_run() const {
  std::ifstream f(file("run.json"));
  if (!f)
    throw Error(
        fmt::format("{} is not a training run folder (no run.json); train one with "
                    "anatomy train --out {}",
                    path, path));
  try {
    return nlohmann::json::parse(f);
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{}: run.json is not valid JSON ({})", path, e.what()));
  }
}

nlohmann::json RunDir::read_run(const std::string& kind) const {
  auto run = read_run();
  if (run.value("kind", "") != kind)
    throw Error(fmt::format("{} holds a {} run, not a {} run", path, run.value("kind", "?"), kind));
  return run;
}

nlohmann::json RunDir::start(bool resume, const std::string& kind) const {
  if (resume) return read_run(kind);
  if (fs::exists(file("run.json")))
    throw Error(fmt::format(
        "{} already holds a training run; pass --resume to continue it, or choose another --out",
        path));
  return nlohmann::json::object();
}

void RunDir::write_run(const nlohmann::json& run) const {
  write_file_atomically(file("run.json"), run.dump(2) + "\n");
}

models::TransformerConfig RunDir::read_config() const {
  return models::TransformerConfig::from_json_file(file("config.json"));
}

std::string RunDir::weights() const {
  if (fs::exists(file("best/model.safetensors"))) return file("best/model.safetensors");
  if (fs::exists(file("last/model.safetensors"))) return file("last/model.safetensors");
  throw Error(fmt::format("{} holds no weights yet (best/ and last/ are empty)", path));
}

}  // namespace anatomy::training
