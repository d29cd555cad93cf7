// Everything of the training layer in one include: the Trainer (the one training loop), run
// folders, and the inference API over them (Translator, TextGenerator, TextClassifier).
#pragma once

#include "checkpoints/checkpoints.hpp"
#include "generation/generation.hpp"
#include "training/checkpoint_average.hpp"
#include "training/export.hpp"
#include "training/loss_curve.hpp"
#include "training/progress_bar.hpp"
#include "training/run_dir.hpp"
#include "training/text_classifier.hpp"
#include "training/text_generator.hpp"
#include "training/train_options.hpp"
#include "training/trainer.hpp"
#include "training/translation_data.hpp"
#include "training/translator.hpp"
