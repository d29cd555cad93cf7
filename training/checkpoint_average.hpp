// Checkpoint averaging, as Marian and fairseq's scripts/average_checkpoints.py do it: the
// element-wise mean of the weights of the last N models a run saved. Late in training the weights
// wander around a minimum with the noise of the last batches; their mean often sits closer to it
// than any one of them. `anatomy train --average N` does it at the end of a run, `anatomy average`
// on a run folder.
#pragma once

#include <string>
#include <vector>

#include "inference/translator.hpp"
#include "nn/nn.hpp"

namespace anatomy::training {

// The mean of each tensor over the files (safetensors written by Module::save); an error names
// the file whose names or shapes differ from the first's.
nn::StateDict average_state_dicts(const std::vector<std::string>& files);

struct AverageResult {
  std::vector<std::string> files;  // the checkpoints averaged, oldest first
  Metrics averaged, best;          // validation metrics of the mean, and the run's best before
  std::string select;              // what compared them (TrainOptions::select)
  bool kept = false;               // the mean is now the run's best/model.safetensors
};

// Averages the last `n` (>= 2) of a translation run's kept checkpoints, validates the mean on the
// run's validation pairs, and makes it best/model.safetensors (and run.json's best, with
// "averaged": the count) when it beats the run's best by the run's selection criterion. The
// caller holds the run's lock.
AverageResult average_translation_run(const std::string& run_dir, int64_t n);

}  // namespace anatomy::training
