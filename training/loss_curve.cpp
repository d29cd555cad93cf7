#include "training/loss_curve.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "autograd/safetensors.hpp"

namespace anatomy::training {

void LossCurve::write_csv(const std::string& path) const {
  std::string s = "step,train_loss,lr,valid_loss,score\n";
  size_t e = 0;
  for (const auto& p : train) {
    s += fmt::format("{},{:.6f},{:.6g},", p.step, p.train_loss, p.lr);
    if (e < eval.size() && eval[e].step == p.step) {
      s += fmt::format("{:.6f},{:.4f}", eval[e].valid_loss, eval[e].score);
      ++e;
    } else {
      s += ",";
    }
    s += "\n";
  }
  for (; e < eval.size(); ++e)
    s += fmt::format("{},,,{:.6f},{:.4f}\n", eval[e].step, eval[e].valid_loss, eval[e].score);
  write_file_atomically(path, s);
}

void LossCurve::write_svg(const std::string& path, const std::string& title) const {
  const double W = 640, H = 360, L = 60, R = 20, T = 40, B = 50;
  double max_step = 1, lo = 1e30, hi = -1e30;
  for (const auto& p : train) {
    max_step = std::max(max_step, static_cast<double>(p.step));
    lo = std::min(lo, p.train_loss);
    hi = std::max(hi, p.train_loss);
  }
  for (const auto& p : eval) {
    max_step = std::max(max_step, static_cast<double>(p.step));
    lo = std::min(lo, p.valid_loss);
    hi = std::max(hi, p.valid_loss);
  }
  if (lo > hi) lo = 0, hi = 1;
  lo = std::max(0.0, lo - 0.05 * (hi - lo));
  hi += 0.05 * (hi - lo) + 1e-9;
  auto x = [&](double step) { return L + (W - L - R) * step / max_step; };
  auto y = [&](double v) { return T + (H - T - B) * (1.0 - (v - lo) / (hi - lo)); };
  std::string s = fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-family="sans-serif" font-size="12">)"
      "\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      R"(<text x="{}" y="22" font-size="15" text-anchor="middle">{}</text>)"
      "\n",
      W, H, W / 2, title);
  for (int i = 0; i <= 4; ++i) {  // horizontal grid with loss labels
    const double v = lo + (hi - lo) * i / 4.0;
    s += fmt::format(
        R"(<line x1="{}" x2="{}" y1="{:.1f}" y2="{:.1f}" stroke="#ddd"/><text x="{}" y="{:.1f}" text-anchor="end">{:.2f}</text>)"
        "\n",
        L, W - R, y(v), y(v), L - 6, y(v) + 4, v);
  }
  s += fmt::format(R"(<line x1="{}" x2="{}" y1="{}" y2="{}" stroke="black"/>)"
                   "\n",
                   L, W - R, H - B, H - B);
  for (int i = 0; i <= 4; ++i) {
    const double st = max_step * i / 4.0;
    s += fmt::format(R"(<text x="{:.1f}" y="{}" text-anchor="middle">{:.0f}</text>)"
                     "\n",
                     x(st), H - B + 18, st);
  }
  s += fmt::format(R"(<text x="{}" y="{}" text-anchor="middle">step</text>)"
                   "\n",
                   (L + W - R) / 2, H - 12);
  if (!train.empty()) {
    s += R"(<polyline fill="none" stroke="#1f77b4" stroke-width="1.5" points=")";
    for (const auto& p : train)
      s += fmt::format("{:.1f},{:.1f} ", x(static_cast<double>(p.step)), y(p.train_loss));
    s += "\"/>\n";
  }
  for (const auto& p : eval)
    s += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="4" fill="#d62728"/>)"
                     "\n",
                     x(static_cast<double>(p.step)), y(p.valid_loss));
  s += fmt::format(
      R"(<line x1="{}" x2="{}" y1="{}" y2="{}" stroke="#1f77b4" stroke-width="2"/><text x="{}" y="{}">train loss</text>)"
      R"(<circle cx="{}" cy="{}" r="4" fill="#d62728"/><text x="{}" y="{}">valid loss</text>)"
      "\n</svg>\n",
      W - 220, W - 200, T + 6, T + 6, W - 195, T + 10, W - 110, T + 6, W - 100, T + 10);
  write_file_atomically(path, s);
}

}  // namespace anatomy::training
