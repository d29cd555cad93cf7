#include "io/input_file.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "autograd/tensor.hpp"

namespace anatomy {

std::ifstream open_input(const std::string& who, const std::string& path, const std::string& what) {
  namespace fs = std::filesystem;
  const std::string name = what.empty() ? path : what + " " + path;
  auto refuse = [&](const std::string& why) {
    return Error(fmt::format("{}: cannot open {}: {}", who, name, why));
  };
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (path.empty()) throw refuse("the path is empty");
  if (status.type() == fs::file_type::not_found) throw refuse("no such file");
  if (status.type() == fs::file_type::directory) throw refuse("it is a folder, not a file");
  if (status.type() == fs::file_type::socket) throw refuse("it is a socket, not a file");
  errno = 0;
  std::ifstream f(path, std::ios::binary);
  if (!f) throw refuse(errno ? std::strerror(errno) : "it cannot be read");
  return f;
}

}  // namespace anatomy
