// What every tutorial shares: command-line flags, section banners, pausing with --step, and the
// final checks that make each tutorial a test.
//
//   --step       pause after each section until Enter is pressed
//   --full       print in full what is summarised by default, as PyTorch summarises it: tensors
//                of more than 1000 values ("...") and repeated modules ("12 x AttentionHead")
//   --out DIR    where pictures (DOT, SVG, HTML) go; default ./tutorial_output
//   --fast       shorter training runs (what the test suite uses)
//   --vocab PATH bert-base-uncased's vocab.txt (tutorials that tokenize the book's sentence)
//   --text PATH  a text to learn from (tutorial 11; a built-in paragraph without it)
//   --model DIR  a pretrained Hugging Face BERT folder (tutorials 01, 03 and 05-07; --bert too)
// Every tutorial accepts all of them, so one loop can run them all with the same flags.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <limits>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include "io/io.hpp"

namespace anatomy::tutorial {

class Tutorial {
 public:
  // `extra` lists further flags a tutorial accepts (each takes one value).
  Tutorial(int argc, char** argv, const std::string& title, const std::string& intro,
           std::vector<std::string> extra = {}) {
    for (const char* common : {"--vocab", "--text", "--model", "--bert"})
      if (std::find(extra.begin(), extra.end(), common) == extra.end()) extra.push_back(common);
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg == "--step") {
        step_ = true;
      } else if (arg == "--full") {
        // torch.set_printoptions(profile="full"), and every module of a list printed.
        print_options().threshold = std::numeric_limits<int64_t>::max();
        print_options().collapse_repeated_modules = false;
      } else if (arg == "--fast") {
        fast_ = true;
      } else if (arg == "--out" && i + 1 < argc) {
        out_dir_ = argv[++i];
      } else if (arg == "--help" || arg == "-h") {
        usage(argv[0], extra);
        std::exit(0);
      } else if (std::find(extra.begin(), extra.end(), arg) != extra.end() && i + 1 < argc) {
        options_.push_back({arg, argv[++i]});
      } else {
        fmt::print(stderr, "{}: unknown or incomplete argument '{}'\n", argv[0], arg);
        usage(argv[0], extra);
        std::exit(2);
      }
    }
    // A path that is not there is refused before anything runs: never silently replaced by
    // the default. --vocab and --text name files, --model and --bert folders.
    for (const auto& [flag, path] : options_) {
      if (!is_path_flag(flag)) continue;
      const bool folder = flag == "--model" || flag == "--bert";
      std::error_code ec;
      if (folder ? !std::filesystem::is_directory(path, ec)
                 : !std::filesystem::is_regular_file(path, ec)) {
        fmt::print(stderr, "{}: {} {}: no such {}\n", argv[0], flag, path,
                   folder ? "folder" : "file");
        std::exit(2);
      }
    }
    std::setvbuf(stdout, nullptr, _IOLBF, 0);  // a log or `| tee` sees each line as it comes
    fmt::print("{}\n{}\n\n{}\n", title, std::string(title.size(), '='), intro);
  }

  // A flag's value, if given.
  std::string option(const std::string& name, const std::string& fallback = "") const {
    for (const auto& [k, v] : options_)
      if (k == name) return v;
    return fallback;
  }

  void section(const std::string& title) {
    if (sections_++ > 0 && step_) {
      fmt::print("\n[press Enter for the next step]");
      std::fflush(stdout);
      std::string line;
      std::getline(std::cin, line);
    }
    fmt::print("\n--- {}. {} ---\n\n", sections_, title);
  }

  bool fast() const { return fast_; }

  // A file path inside the output folder (created on first use).
  std::string output(const std::string& name) {
    std::filesystem::create_directories(out_dir_);
    return (std::filesystem::path(out_dir_) / name).string();
  }

  // Prints "[ok] what" the first time a check passes (a check made in a loop says it once) and
  // "[FAILED] what" every time one fails.
  void check(bool ok, const std::string& what) {
    if (!ok) ++failures_;
    if (ok && !passed_.insert(what).second) return;
    fmt::print("  [{}] {}\n", ok ? "ok" : "FAILED", what);
  }

  // Prints the summary; the return value is the process exit code.
  int finish() {
    fmt::print("\n{}\n", failures_ == 0 ? "All checks passed."
                                        : fmt::format("{} check(s) FAILED.", failures_));
    return failures_ == 0 ? 0 : 1;
  }

 private:
  static bool is_path_flag(const std::string& flag) {
    return flag == "--vocab" || flag == "--text" || flag == "--model" || flag == "--bert";
  }
  static void usage(const char* prog, const std::vector<std::string>& extra) {
    fmt::print("usage: {} [--step] [--full] [--fast] [--out DIR]", prog);
    for (const auto& e : extra) fmt::print(" [{} VALUE]", e);
    fmt::print(
        "\n\n  --step        pause after each section until Enter is pressed\n"
        "  --full        print in full what is summarised by default (tensors of more than\n"
        "                1000 values, repeated modules)\n"
        "  --fast        shorter training runs (what the test suite runs)\n"
        "  --out DIR     where pictures go (default ./tutorial_output)\n"
        "  --vocab PATH  bert-base-uncased's vocab.txt (default: the one make setup puts in\n"
        "                ~/.cache/anatomy)\n"
        "  --text PATH   a UTF-8 text to learn from (tutorial 11; default: a built-in paragraph)\n"
        "  --model DIR   a pretrained BERT folder as Hugging Face saves it (config.json,\n"
        "                model.safetensors, tokenizer.json or vocab.txt): tutorials 01, 03 and\n"
        "                05-07 use it\n"
        "                (default: all-MiniLM-L6-v2, which make setup puts in ~/.cache/anatomy,\n"
        "                else bert-base-uncased in the Hugging Face cache; --bert DIR too)\n");
  }
  bool step_ = false;
  bool fast_ = false;
  std::string out_dir_ = "tutorial_output";
  std::vector<std::pair<std::string, std::string>> options_;
  int sections_ = 0;
  int failures_ = 0;
  std::set<std::string> passed_;  // the checks already shown as passed
};

}  // namespace anatomy::tutorial
