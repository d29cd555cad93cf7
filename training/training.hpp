// Everything of training and what it builds on in one include: the Trainer (the one training loop)
// and its task recipes, run folders (run_folders/), and the inference API over them (inference/:
// Translator, TextGenerator, TextClassifier). Export (export/export.hpp) sits above training and
// has its own include.
#pragma once

#include "checkpoints/checkpoints.hpp"
#include "generation/generation.hpp"
#include "inference/text_classifier.hpp"
#include "inference/text_generator.hpp"
#include "inference/translation_data.hpp"
#include "inference/translator.hpp"
#include "run_folders/loss_curve.hpp"
#include "run_folders/progress_bar.hpp"
#include "run_folders/run_dir.hpp"
#include "training/checkpoint_average.hpp"
#include "training/classifier_hooks.hpp"
#include "training/train_options.hpp"
#include "training/trainer.hpp"
