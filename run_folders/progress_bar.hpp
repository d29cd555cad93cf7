// A progress bar: "epoch 3/10 [=======>     ] 61% loss 1.234 lr 9.8e-04 12.3k tok/s ETA 0:12".
// On a terminal it redraws in place; in a log (CI, a file) it prints nothing, so logs hold only
// the Trainer's summary lines.
#pragma once

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

namespace anatomy::training {

// "12.3k", "1.2M" for tokens/s.
std::string human(double x);
// "1:05" / "1:02:03"
std::string clock(double seconds);

class ProgressBar {
 public:
  ProgressBar(std::string label, int64_t total)
      : label_(std::move(label)), total_(total), tty_(isatty(fileno(stdout))) {}

  // `done` of `total` steps; `info` goes after the bar.
  void update(int64_t done, const std::string& info) {
    if (!tty_) return;
    const auto now = std::chrono::steady_clock::now();
    if (done < total_ && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    const int width = 28;
    const double frac = total_ > 0 ? static_cast<double>(done) / static_cast<double>(total_) : 1.0;
    const int filled = static_cast<int>(frac * width);
    std::string bar(static_cast<size_t>(filled), '=');
    if (filled < width) bar += '>' + std::string(static_cast<size_t>(width - filled - 1), ' ');
    fmt::print("\r{} [{}] {:3.0f}% {}\033[K", label_, bar, frac * 100.0, info);
    std::fflush(stdout);
    drawn_ = true;
  }

  // Removes the bar, so that a log line can take its place.
  void clear() {
    if (tty_ && drawn_) fmt::print("\r\033[K");
    drawn_ = false;
  }

 private:
  std::string label_;
  int64_t total_;
  bool tty_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace anatomy::training
