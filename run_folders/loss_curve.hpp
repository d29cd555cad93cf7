// The loss curve of a run, as CSV (one row per logged step, in step order) and as an SVG
// picture: training loss as a line, validation loss as dots at the end of each epoch.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace anatomy::training {

struct CurvePoint {
  int64_t step;
  double train_loss, lr;
};
struct EvalPoint {
  int64_t step;
  double valid_loss;
  // The evaluation's other metrics by name, as the run measures them: "bleu", "exact_match",
  // "accuracy"...
  std::vector<std::pair<std::string, double>> metrics;
};

struct LossCurve {
  std::vector<CurvePoint> train;
  std::vector<EvalPoint> eval;
  // Columns step, train_loss, lr, valid_loss and valid_NAME for each metric any evaluation has
  // (valid_bleu, ...); a cell the row has no value for is empty.
  void write_csv(const std::string& path) const;
  void write_svg(const std::string& path, const std::string& title) const;
};

}  // namespace anatomy::training
