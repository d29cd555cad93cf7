// Running the `anatomy` program from the tests of training and of the command line (tests/cli/):
// fresh run folders, small texts and corpora, and one run on one thread against one on two.
#pragma once

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <nlohmann/json.hpp>

#include "helpers.hpp"

namespace anatomy::testing {

using Result = testing::CommandResult;

// `anatomy args`, after `prefix` (a command that runs it, such as timeout).
inline Result run(const std::string& args, const std::string& prefix = "") {
  return testing::run_command(prefix + std::string(ANATOMY_CLI) + " " + args);
}

inline std::string bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// Waits for `ready()` to hold, checking every 20 ms, for at most `seconds`: a wait for an event,
// never a fixed sleep. Returns whether it holds.
template <typename F>
bool wait_until(F ready, int seconds = 60) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (!ready() && std::chrono::steady_clock::now() < deadline) usleep(20000);
  return ready();
}

// `anatomy args` started in the background: its pid at once, and its exit code and output once
// it has ended. Its files are `base`.log, .pid and .code.
struct Background {
  std::string base;
  pid_t pid = 0;
  Background(const std::string& args, const std::string& base_path) : base(base_path) {
    std::filesystem::remove(base + ".code");
    std::filesystem::remove(base + ".pid");
    // The inner shell waits for the program, so that its exit code is known; .code appears whole.
    std::system(fmt::format("sh -c '{} {} > {}.log 2>&1 & echo $! > {}.pid.tmp; mv {}.pid.tmp "
                            "{}.pid; wait $!; echo $? > {}.code.tmp; mv {}.code.tmp {}.code' &",
                            ANATOMY_CLI, args, base, base, base, base, base, base, base)
                    .c_str());
    REQUIRE(wait_until([&] {
      std::ifstream f(base + ".pid");
      return bool(f >> pid) && pid > 0;
    }));
  }
  // Waits for the program to end (a few minutes at most): what it printed and its exit code.
  Result finish() {
    REQUIRE(wait_until([&] { return std::filesystem::exists(base + ".code"); }, 300));
    int code = -1;
    std::ifstream(base + ".code") >> code;
    return {code, bytes(base + ".log")};
  }
};

// `anatomy args` stopped by Ctrl-C (SIGINT) once its output shows `marker`, a line its training
// loop prints after the Ctrl-C handler is in place: the signal follows an event, not a fixed time.
// Its files are `base`.log, .pid and .code, as Background's.
inline Result interrupted_at(const std::string& args, const std::string& base,
                             const std::string& marker) {
  Background job(args, base);
  REQUIRE(wait_until(
      [&] {
        return bytes(base + ".log").find(marker) != std::string::npos ||
               std::filesystem::exists(base + ".code");
      },
      300));
  kill(job.pid, SIGINT);
  return job.finish();
}

inline std::string fresh_dir(const std::string& name) {
  const auto d = anatomy::testing::temp_root() / ("anatomy_run_" + name);
  std::filesystem::remove_all(d);
  return d.string();
}

// `anatomy train` with `args` on one thread into `one` and on two into `two`: both succeed, and
// only the second says it splits every batch between the threads. Returns their run.json.
inline std::pair<nlohmann::json, nlohmann::json> train_on_one_and_two(const std::string& args,
                                                                      const std::string& one,
                                                                      const std::string& two) {
  auto a = run("train --threads 1 --out " + one + " " + args);
  REQUIRE_MESSAGE(a.code == 0, a.output);
  CHECK(a.output.find("data parallel") == std::string::npos);
  auto b = run("train --threads 2 --out " + two + " " + args);
  REQUIRE_MESSAGE(b.code == 0, b.output);
  CHECK(b.output.find("data parallel: each batch's rows split between 2 threads") !=
        std::string::npos);
  auto run_json = [](const std::string& dir) {
    std::ifstream f(dir + "/run.json");
    return nlohmann::json::parse(f);
  };
  return {run_json(one), run_json(two)};
}

inline const std::string kQuick = "--preset tiny --limit 1500";

// A text file of 400 lines for the language model, some ending in "\r\n"; returns its path.
inline std::string lm_text(const std::string& name) {
  const std::string text = fresh_dir(name) + ".txt";
  std::ofstream f(text);
  const char* lines[] = {"To be, or not to be: that is the question.",
                         "Whether 'tis nobler in the mind to suffer", "The slings and arrows",
                         "Or to take arms against a sea of troubles,"};
  for (int i = 0; i < 400; ++i) f << lines[i % 4] << (i % 9 == 0 ? "\r\n" : "\n");
  return text;
}

// A toy corpus in Tatoeba's layout: `n` pairs over 35 sources, each source with several targets.
inline std::string write_corpus(const std::string& path, int n, const std::string& tail = "") {
  std::ofstream f(path);
  for (int i = 0; i < n; ++i)
    f << "w" << i % 7 << " x" << i % 5 << "\tv" << i % 7 << " y" << i % 5 << (i % 2 ? " z" : "")
      << "\n";
  f << tail;
  return path;
}

// The lines of a file, as `wc -l` counts them.
inline int64_t lines_of(const std::string& path) {
  std::ifstream f(path);
  int64_t n = 0;
  for (std::string line; std::getline(f, line);) ++n;
  return n;
}

}  // namespace anatomy::testing
