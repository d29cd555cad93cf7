#include "io/input_file.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "autograd/tensor.hpp"

namespace anatomy {

namespace {

// A pipe is read once something writes to it. Opening a named pipe that nothing writes to would
// wait forever, so the open waits for the first bytes (or the writer's end) for
// ANATOMY_PIPE_WAIT_SECONDS (10 by default) and refuses the pipe after that.
template <typename Refuse>
std::ifstream open_pipe(const std::string& path, Refuse refuse) {
  double wait = 10;
  if (const char* w = std::getenv("ANATOMY_PIPE_WAIT_SECONDS"); w && *w) wait = std::atof(w);
  const int reader = ::open(path.c_str(), O_RDONLY | O_NONBLOCK);  // never waits
  if (reader < 0) throw refuse(std::strerror(errno));
  pollfd p{reader, POLLIN, 0};
  const int ready = ::poll(&p, 1, static_cast<int>(std::max(0.0, wait) * 1000));
  if (ready <= 0) {
    ::close(reader);
    throw refuse(fmt::format(
        "it is a named pipe (FIFO) that nothing wrote to in {:g} s (start its writer first, or "
        "set ANATOMY_PIPE_WAIT_SECONDS to wait longer)",
        wait));
  }
  // The stream's own open waits for a writer; this end of ours is one until the stream is open,
  // so that a writer that has already finished does not leave the open waiting.
  const int writer = ::open(path.c_str(), O_WRONLY | O_NONBLOCK);
  std::ifstream f(path, std::ios::binary);
  if (writer >= 0) ::close(writer);
  ::close(reader);
  if (!f) throw refuse("the pipe cannot be read");
  return f;
}

}  // namespace

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
  if (status.type() == fs::file_type::fifo) return open_pipe(path, refuse);
  errno = 0;
  std::ifstream f(path, std::ios::binary);
  if (!f) throw refuse(errno ? std::strerror(errno) : "it cannot be read");
  return f;
}

}  // namespace anatomy
