// The Trainer's hooks of a classifier run: how `anatomy train --task majority` and
// `anatomy fine-tune` feed labelled texts to a TextClassifier and judge it.
#pragma once

#include <string>
#include <vector>

#include "inference/text_classifier.hpp"
#include "training/train_options.hpp"
#include "training/trainer.hpp"

namespace anatomy::training {

// Labelled texts: texts[i] has the class labels[i].
struct LabelledTexts {
  std::vector<std::string> texts;
  std::vector<int64_t> labels;
};

// The Trainer's hooks for `classifier` (both kinds of classifier run use them): each epoch a
// fresh shuffle of `train` from `seed`, cut into batches of `batch_size` with a cross-entropy
// loss; each evaluation the validation loss and accuracy on `valid`, the most accurate being the
// best. `train` and `valid` must outlive trainer.fit().
// The Trainer's options of a classifier run, from the command line's `o`: `epochs`, the time
// budget, clipping, logging, the run folder and anomaly detection; `title` heads the loss curve.
TrainerOptions classifier_trainer_options(const TrainOptions& o, int64_t epochs,
                                          const std::string& title);

void set_classifier_hooks(Trainer& trainer, const TextClassifier& classifier,
                          const LabelledTexts& train, const LabelledTexts& valid, uint64_t seed,
                          size_t batch_size);

}  // namespace anatomy::training
