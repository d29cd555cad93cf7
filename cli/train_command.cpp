// anatomy train: --task NAME (a toy translation task, lm, or majority) or --corpus FILE.tsv.
#include <fmt/format.h>

#include "autograd/tensor.hpp"
#include "commands.hpp"
#include "data/tasks.hpp"
#include "run_dir.hpp"
#include "train.hpp"

namespace anatomy::cli {

nlohmann::json training_options(const TrainOptions& o) {
  return {{"lr", o.lr},
          {"warmup", o.warmup},
          {"max_tokens", o.max_tokens},
          {"label_smoothing", o.label_smoothing},
          {"clip", o.clip},
          {"limit", o.limit}};
}

void restore_training_options(TrainOptions& o, const nlohmann::json& saved) {
  o.lr = saved.value("lr", o.lr);
  o.warmup = saved.value("warmup", o.warmup);
  o.max_tokens = saved.value("max_tokens", o.max_tokens);
  o.label_smoothing = saved.value("label_smoothing", o.label_smoothing);
  o.clip = saved.value("clip", o.clip);
  o.limit = saved.value("limit", o.limit);
}

Runner add_train_command(CLI::App& app) {
  auto o = std::make_shared<TrainOptions>();
  auto* cmd = app.add_subcommand(
      "train", "Train a model: a toy task, a TSV corpus, or a character language model");
  auto* task =
      cmd->add_option("--task", o->task,
                      "copy | reverse | numbers | dates | toylang (translation), lm (with --text), "
                      "majority (classification)");
  auto* corpus = cmd->add_option("--corpus", o->corpus, "a source<TAB>target corpus (translation)");
  task->excludes(corpus);
  cmd->add_option("--text", o->text, "a UTF-8 text file (--task lm)");
  cmd->add_option("--out", o->out, "the run folder: checkpoints, tokenizers, loss curve")
      ->required();
  cmd->add_option("--preset", o->preset, "model size: tiny | small | base (nanogpt for lm)");
  cmd->add_option("--epochs", o->epochs, "epochs (translation, classification)");
  cmd->add_option("--iters", o->iters, "optimizer steps (lm)");
  cmd->add_option("--time-budget", o->time_budget,
                  "stop after this many seconds, best checkpoint saved");
  cmd->add_option("--seed", o->seed, "random seed (data splits, initialization, dropout)");
  cmd->add_flag("--resume", o->resume, "continue the run in --out exactly where it stopped");
  cmd->add_option("--lr", o->lr, "peak learning rate (default: the preset's)");
  cmd->add_option("--warmup", o->warmup, "warmup steps (default: the preset's)");
  cmd->add_option("--max-tokens", o->max_tokens, "tokens per batch, padding included");
  cmd->add_option(
      "--schedule", o->schedule,
      "learning rate: noam (the paper's warmup), linear or cosine (warmup, then decay to 0 "
      "at the last epoch)");
  cmd->add_option("--label-smoothing", o->label_smoothing, "label smoothing (default 0.1)");
  cmd->add_option("--clip", o->clip, "gradient norm clipping (default 1.0)");
  cmd->add_option("--vocab-size", o->vocab_size, "BPE vocabulary size per side");
  cmd->add_option("--limit", o->limit, "use only the first N training pairs");
  cmd->add_option("--max-chars", o->max_chars, "drop corpus pairs longer than this many bytes");
  cmd->add_flag("--skip-malformed", o->skip_malformed, "skip (and count) malformed corpus lines");
  cmd->add_flag("!--no-early-stop", o->early_stop,
                "keep training after 100% validation exact match");
  cmd->add_option("--threads", o->threads, "threads (default: all cores)");
  return [o] {
    if (o->task.empty() && o->corpus.empty())
      throw Error("train: give --task NAME or --corpus FILE.tsv");
    if (o->resume && o->task != "majority")
      restore_training_options(*o, RunDir{o->out}.read_run().value("options", nlohmann::json{}));
    if (o->task == "lm") {
      if (o->text.empty())
        throw Error("train: --task lm needs --text FILE (a UTF-8 text to learn)");
      return train_language_model(*o);
    }
    if (!o->text.empty()) throw Error("train: --text goes with --task lm");
    if (o->task == "majority") return train_classifier(*o);
    if (!o->task.empty()) {
      const auto& names = data::task_names();
      if (std::find(names.begin(), names.end(), o->task) == names.end())
        throw Error(fmt::format(
            "train: unknown task '{}' (copy, reverse, numbers, dates, toylang, lm, majority)",
            o->task));
    }
    return train_translation(*o);
  };
}

}  // namespace anatomy::cli
