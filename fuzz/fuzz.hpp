// What every harness shares. A harness feeds libFuzzer's bytes to one loader and asks two things
// of it: no crash or sanitizer report (libFuzzer and ASan/UBSan see those), and every refusal an
// anatomy::Error, the project's "what was expected, what came" message. Any other exception
// (nlohmann's type_error, std::out_of_range from map::at, std::invalid_argument from stoll...)
// is a raw library error reaching the user: the harness aborts, so libFuzzer records it as a
// crash with its input.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <typeinfo>
#include <vector>

#include "autograd/tensor.hpp"

namespace anatomy::fuzz {

template <typename F>
void expect_clear_errors(F&& load) {
  try {
    load();
  } catch (const Error& e) {
    if (std::string(e.what()).empty()) {
      std::fprintf(stderr, "an anatomy::Error with an empty message\n");
      std::abort();
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "a raw %s escaped the loader: %s\n", typeid(e).name(), e.what());
    std::abort();
  }
}

// A folder of this process's own for loaders that read files: in memory (/dev/shm) where there
// is one, since a harness writes its input there on every execution. Removed when the process
// exits normally (a crash leaves it, with the input that caused it).
struct ScratchFolder {
  std::string path;
  ~ScratchFolder() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};
inline const std::string& scratch() {
  static const ScratchFolder folder{[] {
    const std::filesystem::path shm = "/dev/shm";
    auto p = (std::filesystem::is_directory(shm) ? shm : std::filesystem::temp_directory_path()) /
             ("anatomy-fuzz-" + std::to_string(getpid()));
    std::filesystem::create_directories(p);
    return p.string();
  }()};
  return folder.path;
}

inline std::string write(const std::string& name, const std::string& bytes) {
  const std::string path = scratch() + "/" + name;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  return path;
}

// Splits one input into parts at a line "----" (a harness that needs several files).
inline std::vector<std::string> parts(const std::string& bytes, size_t n) {
  std::vector<std::string> out;
  size_t begin = 0;
  while (out.size() + 1 < n) {
    const auto at = bytes.find("\n----\n", begin);
    if (at == std::string::npos) break;
    out.push_back(bytes.substr(begin, at - begin));
    begin = at + 6;
  }
  out.push_back(begin <= bytes.size() ? bytes.substr(begin) : "");
  while (out.size() < n) out.emplace_back();
  return out;
}

}  // namespace anatomy::fuzz
