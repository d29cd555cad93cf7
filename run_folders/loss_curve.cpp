#include "run_folders/loss_curve.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "io/safetensors.hpp"
#include "viz/ticks.hpp"
#include "viz/xml.hpp"

namespace anatomy::training {

void LossCurve::write_csv(const std::string& path) const {
  std::vector<std::string> names;  // the metrics' columns, in the order they first appear
  for (const auto& e : eval)
    for (const auto& [name, value] : e.metrics)
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  std::string s = "step,train_loss,lr,valid_loss";
  for (const auto& name : names) s += ",valid_" + name;
  s += "\n";
  // The eval cells of a row: valid_loss, then each named metric the evaluation has.
  auto eval_cells = [&](const EvalPoint& e) {
    std::string cells = fmt::format(",{:.6f}", e.valid_loss);
    for (const auto& name : names) {
      const auto it = std::find_if(e.metrics.begin(), e.metrics.end(),
                                   [&](const auto& m) { return m.first == name; });
      cells += it == e.metrics.end() ? "," : fmt::format(",{:.4f}", it->second);
    }
    return cells;
  };
  const std::string no_eval(1 + names.size(), ',');
  // Both lists are in step order: merge them, one row per step.
  size_t t = 0, e = 0;
  while (t < train.size() || e < eval.size()) {
    const bool take_train = t < train.size() && (e == eval.size() || train[t].step <= eval[e].step);
    const bool take_eval = e < eval.size() && (t == train.size() || eval[e].step <= train[t].step);
    const int64_t step = take_train ? train[t].step : eval[e].step;
    s += take_train ? fmt::format("{},{:.6f},{:.6g}", step, train[t].train_loss, train[t].lr)
                    : fmt::format("{},,", step);
    s += take_eval ? eval_cells(eval[e]) : no_eval;
    s += "\n";
    t += take_train;
    e += take_eval;
  }
  write_file_atomically(path, s);
}

void LossCurve::write_svg(const std::string& path, const std::string& title) const {
  const double W = 640, H = 360, L = 64, R = 20, T = 40, B = 52;
  // A loss that is NaN or infinite (an evaluation that diverged) has no place on the scale: it is
  // left out of the axes and not drawn, and the finite points keep their scale.
  double max_step = 1, lo = INFINITY, hi = -INFINITY;
  auto cover = [&](int64_t step, double loss) {
    max_step = std::max(max_step, static_cast<double>(step));
    if (!std::isfinite(loss)) return;
    lo = std::min(lo, loss);
    hi = std::max(hi, loss);
  };
  for (const auto& p : train) cover(p.step, p.train_loss);
  for (const auto& p : eval) cover(p.step, p.valid_loss);
  if (lo > hi) lo = 0, hi = 1;  // no finite loss
  // Round ticks that cover the data; the axes span exactly the ticks.
  const auto y_ticks = viz::nice_ticks(std::max(0.0, lo), hi, 5);
  const auto x_ticks = viz::nice_ticks(0, max_step, 6);
  const double y_lo = y_ticks.front(), y_hi = y_ticks.back(), x_hi = x_ticks.back();
  const double y_step = y_ticks[1] - y_ticks[0], x_step = x_ticks[1] - x_ticks[0];
  auto x = [&](double step) { return L + (W - L - R) * step / x_hi; };
  auto y = [&](double v) { return T + (H - T - B) * (1.0 - (v - y_lo) / (y_hi - y_lo)); };
  std::string s = fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-family="sans-serif" font-size="12">)"
      "\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      R"(<text x="{}" y="22" font-size="15" text-anchor="middle">{}</text>)"
      "\n",
      W, H, W / 2, viz::escape_xml(title));
  for (double v : y_ticks)  // horizontal grid with loss labels
    s += fmt::format(
        R"(<line x1="{}" x2="{}" y1="{:.1f}" y2="{:.1f}" stroke="#ddd"/><text class="y-tick" x="{}" y="{:.1f}" text-anchor="end">{}</text>)"
        "\n",
        L, W - R, y(v), y(v), L - 6, y(v) + 4, viz::tick_label(v, y_step));
  s += fmt::format(R"(<line x1="{}" x2="{}" y1="{}" y2="{}" stroke="black"/>)"
                   "\n",
                   L, W - R, H - B, H - B);
  for (double st : x_ticks)
    s += fmt::format(
        R"(<line x1="{:.1f}" x2="{:.1f}" y1="{}" y2="{}" stroke="black"/><text class="x-tick" x="{:.1f}" y="{}" text-anchor="middle">{}</text>)"
        "\n",
        x(st), x(st), H - B, H - B + 4, x(st), H - B + 18, viz::tick_label(st, x_step));
  s += fmt::format(R"(<text x="{}" y="{}" text-anchor="middle">optimizer step</text>)"
                   "\n",
                   (L + W - R) / 2, H - 12);
  s += fmt::format(
      R"svg(<text transform="translate(16,{}) rotate(-90)" text-anchor="middle">loss (cross-entropy, nats)</text>)svg"
      "\n",
      (T + H - B) / 2);
  std::string points;
  for (const auto& p : train)
    if (std::isfinite(p.train_loss))
      points += fmt::format("{:.1f},{:.1f} ", x(static_cast<double>(p.step)), y(p.train_loss));
  if (!points.empty())
    s +=
        R"(<polyline fill="none" stroke="#1f77b4" stroke-width="1.5" points=")" + points + "\"/>\n";
  for (const auto& p : eval)
    if (std::isfinite(p.valid_loss))
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
