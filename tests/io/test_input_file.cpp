// open_input: a file a user names that cannot be read is refused with the reason.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>

#include "helpers.hpp"

using namespace anatomy;
using namespace anatomy::testing;

TEST_CASE("open_input reads a file, and says why when it cannot") {
  TempDir dir;
  { std::ofstream(dir / "here.txt") << "a line\n"; }
  std::ifstream f = open_input("test", dir / "here.txt");
  std::string line;
  std::getline(f, line);
  CHECK(line == "a line");

  check_error([&] { open_input("translate", dir / "missing.txt"); },
              {"translate: cannot open", "missing.txt", "no such file"});
  // A folder is refused, not read as an empty file.
  check_error([&] { open_input("corpus", dir.str(), "the corpus"); },
              {"corpus: cannot open the corpus", dir.str(), "it is a folder, not a file"});
  check_error([&] { open_input("bleu", ""); }, {"bleu", "the path is empty"});
  // Without read permission (root reads anything, so only an ordinary user sees this).
  if (geteuid() != 0) {
    std::ofstream(dir / "secret.txt") << "x";
    chmod((dir / "secret.txt").c_str(), 0);
    check_error([&] { open_input("config", dir / "secret.txt"); }, {"Permission denied"});
  }
}

TEST_CASE(
    "open_input reads a pipe once something writes to it, and refuses one nothing writes to") {
  TempDir dir;
  const std::string fifo = dir / "pipe";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  setenv("ANATOMY_PIPE_WAIT_SECONDS", "0.2", 1);
  // Nothing writes to it: refused after the wait, not an open that never returns.
  check_error([&] { open_input("translate", fifo, "the inputs"); },
              {"translate: cannot open the inputs", fifo, "named pipe (FIFO) that nothing wrote to",
               "ANATOMY_PIPE_WAIT_SECONDS"});
  // With a writer the wait ends at its first bytes or its close; the bound is then only a
  // safeguard against a hang.
  setenv("ANATOMY_PIPE_WAIT_SECONDS", "60", 1);
  // A writer that writes and is gone: its line is read. Its open waits for our reader, so it
  // starts before the read and may end before the stream is open.
  std::thread writer([&] {
    const int fd = ::open(fifo.c_str(), O_WRONLY);
    if (fd < 0) return;
    const std::string line = "through the pipe\n";
    CHECK(::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()));
    ::close(fd);
  });
  {
    std::ifstream f = open_input("translate", fifo);
    std::string line;
    std::getline(f, line);
    CHECK(line == "through the pipe");
  }
  writer.join();
  // A writer that closes without writing: an empty input, read to its end.
  std::thread silent([&] {
    const int fd = ::open(fifo.c_str(), O_WRONLY);
    if (fd >= 0) ::close(fd);
  });
  {
    std::ifstream f = open_input("translate", fifo);
    std::string line;
    CHECK_FALSE(std::getline(f, line));
  }
  silent.join();
  unsetenv("ANATOMY_PIPE_WAIT_SECONDS");
}

TEST_CASE("the loaders name the reason a file cannot be opened") {
  TempDir dir;
  check_error([&] { load_safetensors(dir.str()); }, {"load_safetensors", "is a folder"});
  check_error([&] { load_safetensors(dir / "none.safetensors"); },
              {"load_safetensors", "no such file"});
}
