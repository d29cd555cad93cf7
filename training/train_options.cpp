#include "training/train_options.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "autograd/tensor.hpp"
#include "data/tasks.hpp"
#include "run_folders/run_dir.hpp"

namespace anatomy::training {

nlohmann::json training_options(const TrainOptions& o) {
  return {{"lr", o.lr},
          {"warmup", o.warmup},
          {"max_tokens", o.max_tokens},
          {"label_smoothing", o.label_smoothing},
          {"clip", o.clip},
          {"limit", o.limit},
          {"early_stop", o.early_stop},
          {"select", o.select},
          {"average", std::max<int64_t>(o.average, 0)},  // -1, "the default", is none here
          {"time_budget", o.time_budget}};
}

nlohmann::json classifier_options(const TrainOptions& o, double lr) {
  TrainOptions used = o;
  used.lr = lr;
  nlohmann::json j = training_options(used);
  j.erase("warmup");  // a classifier trains at a constant rate, in batches of texts
  j.erase("max_tokens");
  return j;
}

void restore_training_options(TrainOptions& o, const nlohmann::json& saved) {
  o.lr = saved.value("lr", o.lr);
  o.warmup = saved.value("warmup", o.warmup);
  o.max_tokens = saved.value("max_tokens", o.max_tokens);
  o.label_smoothing = saved.value("label_smoothing", o.label_smoothing);
  o.clip = saved.value("clip", o.clip);
  o.limit = saved.value("limit", o.limit);
  o.early_stop = saved.value("early_stop", o.early_stop);
  o.select = saved.value("select", o.select);
  o.average = saved.value("average", o.average);
  // The run's budget, unless this command gives it a new one (as --epochs does).
  if (!(o.time_budget > 0)) o.time_budget = saved.value("time_budget", o.time_budget);
}

models::TransformerConfig build_config(
    const TrainOptions& o, const std::string& fallback_preset,
    const std::function<void(models::TransformerConfig&)>& layout) {
  models::TransformerConfig c;
  if (!o.config_file.empty()) {
    if (!o.preset.empty()) throw Error("train: give --preset or --config, not both");
    c = models::TransformerConfig::from_json_file(o.config_file);
  } else {
    c = models::TransformerConfig::preset(o.preset.empty() ? fallback_preset : o.preset);
    layout(c);
  }
  for (const auto& s : o.set) c.set(s);
  return c;
}

int train(TrainOptions o) {
  if (o.task.empty() && o.corpus.empty())
    throw Error("train: give --task NAME or --corpus FILE.tsv");
  if (o.resume)
    restore_training_options(o, RunDir{o.out}.read_run().value("options", nlohmann::json{}));
  if (o.task != "classify" &&
      (!o.model_dir.empty() || !o.data.empty() || o.freeze_body || o.random_weights))
    throw Error(
        "train: --model-dir, --data, --freeze-body and --random-weights go with --task classify");
  if (o.task == "lm") {
    if (o.text.empty()) throw Error("train: --task lm needs --text FILE (a UTF-8 text to learn)");
    return train_language_model(o);
  }
  if (!o.text.empty()) throw Error("train: --text goes with --task lm");
  if (o.corpus.empty() && o.task != "classify" &&
      (!o.valid.empty() || !o.test.empty() || o.reverse))
    throw Error("train: --valid, --test and --reverse go with --corpus");
  if (o.task == "majority") return train_classifier(o);
  if (o.task == "classify") return fine_tune_classifier(o);
  if (!o.task.empty()) {
    const auto& names = data::task_names();
    if (std::find(names.begin(), names.end(), o.task) == names.end())
      throw Error(fmt::format(
          "train: unknown task '{}' (copy, reverse, numbers, dates, toylang, lm, majority, "
          "classify)",
          o.task));
  }
  return train_translation(o);
}

}  // namespace anatomy::training
