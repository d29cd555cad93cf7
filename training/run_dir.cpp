#include "training/run_dir.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "autograd/json_limits.hpp"
#include "autograd/safetensors.hpp"

namespace anatomy::training {

namespace fs = std::filesystem;

RunLock& RunLock::operator=(RunLock&& o) noexcept {
  std::swap(fd_, o.fd_);
  return *this;
}

RunLock::~RunLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the flock
}

RunLock RunDir::lock() const {
  const std::string path = file(".lock");
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(fmt::format("cannot open {} ({})", path, std::strerror(errno)));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char pid[32] = {};
    const auto n = ::pread(fd, pid, sizeof(pid) - 1, 0);
    ::close(fd);
    throw Error(
        fmt::format("{} is in use by another training (pid {}); wait for it to finish, "
                    "or choose another --out",
                    this->path, n > 0 ? std::string(pid, static_cast<size_t>(n)) : "?"));
  }
  // Holding the lock, no other training writes here: a *.tmp<pid> file left by one that was
  // killed inside a save (write_file_atomically) is garbage.
  for (const std::string sub : {"", "best", "last"}) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(file(sub), ec)) {
      const std::string name = entry.path().filename().string();
      const auto at = name.rfind(".tmp");
      if (at != std::string::npos && at + 4 < name.size() &&
          name.find_first_not_of("0123456789", at + 4) == std::string::npos)
        fs::remove(entry.path(), ec);
    }
  }
  const std::string me = std::to_string(::getpid());
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, me.data(), me.size(), 0) < 0) {
    // The pid is only for the message of a second training; the lock holds without it.
  }
  return RunLock(fd);
}

RunLock RunDir::create() const {
  std::error_code ec;
  fs::create_directories(file("best"), ec);
  if (!ec) fs::create_directories(file("last"), ec);
  if (ec) throw Error(fmt::format("cannot create the output folder {} ({})", path, ec.message()));
  // Fail now, not after an hour of training, if the folder is not writable.
  const std::string probe = file(".write-test");
  if (!std::ofstream(probe)) throw Error(fmt::format("the output folder {} is not writable", path));
  fs::remove(probe, ec);
  RunLock held = lock();
  // Another training may have started here between our check and our lock.
  if (fs::exists(file("run.json")))
    throw Error(fmt::format(
        "{} already holds a training run; pass --resume to continue it, or choose another --out",
        path));
  return held;
}

nlohmann::json RunDir::read_run() const {
  std::ifstream f(file("run.json"));
  if (!f)
    throw Error(
        fmt::format("{} is not a training run folder (no run.json); train one with "
                    "anatomy train --out {}",
                    path, path));
  nlohmann::json run;
  try {
    run = nlohmann::json::parse(f, json_depth_limit(file("run.json")));
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{}: run.json is not valid JSON ({})", path, e.what()));
  }
  if (!run.is_object())
    throw Error(
        fmt::format("{}: run.json must hold a JSON object (got {})", path, run.type_name()));
  return run;
}

nlohmann::json RunDir::read_run(const std::string& kind) const {
  auto run = read_run();
  if (run.value("kind", "") != kind)
    throw Error(fmt::format("{} holds a {} run, not a {} run", path, run.value("kind", "?"), kind));
  return run;
}

nlohmann::json RunDir::start(bool resume, const std::string& kind) const {
  if (resume) return read_run(kind);
  if (fs::exists(file("run.json"))) {
    if (fs::exists(file(".lock"))) RunLock running = lock();  // "in use by pid N", if it is
    throw Error(fmt::format(
        "{} already holds a training run; pass --resume to continue it, or choose another --out",
        path));
  }
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
