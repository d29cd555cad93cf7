// The loss curve of a run, as CSV (one row per logged step) and as an SVG picture: training
// loss as a line, validation loss as dots at the end of each epoch.
#pragma once

#include <string>
#include <vector>

namespace anatomy::training {

struct CurvePoint {
  int64_t step;
  double train_loss, lr;
};
struct EvalPoint {
  int64_t step;
  double valid_loss, score;  // score: BLEU, accuracy, ... (NaN when not measured)
};

struct LossCurve {
  std::vector<CurvePoint> train;
  std::vector<EvalPoint> eval;
  void write_csv(const std::string& path) const;
  void write_svg(const std::string& path, const std::string& title) const;
};

}  // namespace anatomy::training
