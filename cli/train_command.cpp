// anatomy train: --task NAME (a toy translation task, lm, majority, or classify) or --corpus
// FILE.tsv.
// Parses the options; the runs themselves are the training library's (training/).
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "training/checkpoint_average.hpp"
#include "training/export.hpp"
#include "training/run_dir.hpp"
#include "training/train_options.hpp"
#include "training/trainer.hpp"

namespace anatomy::cli {

namespace {

// What a run learns from, and where it writes.
void declare_data_options(CLI::App& cmd, training::TrainOptions& o) {
  auto* task =
      cmd.add_option("--task", o.task,
                     "copy | reverse | numbers | dates | toylang (translation), lm (with --text), "
                     "majority (classification), classify (fine-tune --model-dir on --data)");
  auto* corpus = cmd.add_option("--corpus", o.corpus, "a source<TAB>target corpus (translation)");
  task->excludes(corpus);
  cmd.add_option("--valid", o.valid,
                 "validation pairs of your own (TSV), instead of a cut of --corpus");
  cmd.add_option("--test", o.test, "test pairs of your own (TSV), instead of a cut of --corpus");
  cmd.add_flag("--reverse", o.reverse,
               "translate the second column into the first (deu-eng from eng-deu.tsv)");
  cmd.add_option("--select", o.select,
                 "keep the best checkpoint by: bleu | loss | exact_match (default: bleu for a "
                 "corpus, exact_match for a task)")
      ->check(CLI::IsMember({"bleu", "loss", "exact_match"}));
  cmd.add_option("--average", o.average,
                 "average the last N evaluated models at the end; kept if it validates better "
                 "(0: none; default: 5 for a corpus, none for a task)")
      ->check(in_range(0, 100));
  cmd.add_option("--text", o.text, "a UTF-8 text file (--task lm)");
  cmd.add_option("--model-dir", o.model_dir,
                 "a pretrained Hugging Face BERT folder to fine-tune (--task classify)");
  cmd.add_option("--data", o.data, "labelled lines text<TAB>label (--task classify)");
  cmd.add_flag("--freeze-body", o.freeze_body,
               "train the classification head alone, the pretrained body frozen (--task classify)");
  cmd.add_flag("--random-weights", o.random_weights,
               "the folder's model from random weights, the baseline (--task classify)");
  cmd.add_option("--out", o.out, "the run folder: checkpoints, tokenizers, loss curve")->required();
}

// The model's size and config.
void declare_model_options(CLI::App& cmd, training::TrainOptions& o) {
  auto* preset =
      cmd.add_option("--preset", o.preset,
                     fmt::format("model size: {} (lm: nanogpt, tiny, small; default: a "
                                 "corpus gets the size its time budget buys)",
                                 fmt::join(models::TransformerConfig::preset_names(), " | ")))
          ->check(CLI::IsMember(models::TransformerConfig::preset_names()));  // before any data
  cmd.add_option("--config", o.config_file,
                 "the model's config.json (Hugging Face keys; instead of --preset)")
      ->excludes(preset);
  cmd.add_option("--set", o.set,
                 "override a config field, e.g. --set hidden_size=256 --set norm_type=rms_norm "
                 "(anatomy config lists them)");
}

// How long and how fast it trains.
void declare_schedule_options(CLI::App& cmd, training::TrainOptions& o) {
  cmd.add_option("--epochs", o.epochs,
                 "epochs (default: a translation run with --time-budget trains until the "
                 "budget; else 6 for copy and reverse, 40 for numbers, 20 for the other tasks "
                 "and a corpus, 5 for majority)")
      ->check(in_range(1, 1e6));
  cmd.add_option("--iters", o.iters,
                 "optimizer steps (lm; default: the preset's: nanogpt 2000, tiny 500, small 4000)")
      ->check(in_range(1, 1e9));
  cmd.add_option("--time-budget", o.time_budget,
                 "seconds for the whole run, resumes included; it stops in time with the best "
                 "checkpoint saved (default: no limit)")
      ->check(in_range(1, 1e7));
  cmd.add_option("--seed", o.seed, "random seed (data splits, initialization, dropout)")
      ->capture_default_str();
  cmd.add_flag("--resume", o.resume, "continue the run in --out exactly where it stopped");
  cmd.add_option("--lr", o.lr,
                 "peak learning rate (default: 2e-3 for a corpus without --preset or --config, "
                 "else the preset's)")
      ->check(in_range(1e-12, 1e30));
  cmd.add_option("--warmup", o.warmup,
                 "warmup steps (default: the preset's; translation: half an epoch, 20 to the "
                 "preset's)")
      ->check(in_range(1, 1e9));
  cmd.add_option("--max-tokens", o.max_tokens,
                 "tokens per batch, padding included (default: 512 for copy and reverse, else the "
                 "preset's)")
      ->check(in_range(8, 1e7));
  cmd.add_option(
         "--schedule", o.schedule,
         "learning rate: noam (the paper's warmup), linear or cosine (warmup, then decay to 0 "
         "at the last epoch, or at the end of the time budget; default: linear for a corpus, "
         "copy and reverse, noam for the other tasks)")
      ->check(CLI::IsMember({"noam", "linear", "cosine"}));
  cmd.add_option("--label-smoothing", o.label_smoothing, "label smoothing")
      ->capture_default_str()
      ->check(in_range(0, 0.99));
  cmd.add_option("--log-every", o.log_every,
                 "also print a line every N steps within an epoch (for logs; 0: none)")
      ->capture_default_str()
      ->check(in_range(0, 1e9));
  cmd.add_option("--clip", o.clip, "gradient norm clipping (0: none)")
      ->capture_default_str()
      ->check(in_range(0, 1e6));
}

// The vocabulary, the corpus's limits, and how the run behaves.
void declare_other_options(CLI::App& cmd, training::TrainOptions& o, bool& no_early_stop) {
  cmd.add_option("--vocab-size", o.vocab_size,
                 "BPE vocabulary size per side, or of the one shared vocabulary (default: 200 "
                 "for a task, 8000 for a corpus)")
      ->check(in_range(16, 1e6));
  cmd.add_option("--shared-vocab", o.shared_vocab,
                 "one BPE vocabulary and one token table for source, target and output: yes | "
                 "no | auto (a corpus whose two sides are written in one script)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "yes", "no"}));
  cmd.add_option("--limit", o.limit, "use only the first N training pairs (default: all)")
      ->check(in_range(1, 1e9));
  cmd.add_option(
         "--max-chars", o.max_chars,
         "drop corpus pairs with a side longer than this many characters (default: keep all)")
      ->check(in_range(1, 1e9));
  cmd.add_flag("--skip-malformed", o.skip_malformed, "skip (and count) malformed corpus lines");
  cmd.add_flag("--no-early-stop", no_early_stop, "keep training after 100% validation exact match");
  cmd.add_flag("--detect-anomaly", o.detect_anomaly,
               "check every op's output and gradient for NaN/Inf and name the first (slow)");
  cmd.add_option("--threads", o.threads,
                 "threads (default: OMP_NUM_THREADS if set, else all cores)")
      ->check(in_range(1, 256));
}

}  // namespace

Runner add_train_command(CLI::App& app) {
  auto o = std::make_shared<training::TrainOptions>();
  auto* cmd = app.add_subcommand(
      "train", "Train a model: a toy task, a TSV corpus, or a character language model");
  auto no_early_stop = std::make_shared<bool>(false);
  declare_data_options(*cmd, *o);
  declare_model_options(*cmd, *o);
  declare_schedule_options(*cmd, *o);
  declare_other_options(*cmd, *o, *no_early_stop);
  return [o, no_early_stop] {
    if (*no_early_stop) o->early_stop = false;
    return training::train(*o);
  };
}

// anatomy export: a run folder as a PyTorch package that continues it with torch.distributed.
Runner add_export_command(CLI::App& app) {
  struct Options {
    std::string checkpoint, to, to_hf;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "export",
      "Write a run as a PyTorch package (model.py, train.py for torchrun, weights, data), or as "
      "a Hugging Face model folder (--to-hf)");
  cmd->add_option("--checkpoint", o->checkpoint, "a run folder from anatomy train")->required();
  auto* to = cmd->add_option("--to", o->to, "the PyTorch package's folder (new or empty)");
  auto* to_hf = cmd->add_option(
      "--to-hf", o->to_hf,
      "a Hugging Face folder instead (new or empty): a language model as GPT2LMHeadModel, a "
      "fine-tuned BERT classifier as BertForSequenceClassification");
  to->excludes(to_hf);
  return [o] {
    if (!o->to_hf.empty()) {
      training::export_to_hugging_face(o->checkpoint, o->to_hf);
      fmt::print("wrote {}: transformers loads it with from_pretrained(\"{}\")\n", o->to_hf,
                 o->to_hf);
      return 0;
    }
    if (o->to.empty()) throw Error("export: give --to DIR (a PyTorch package) or --to-hf DIR");
    training::export_to_pytorch(o->checkpoint, o->to);
    fmt::print("wrote {}: see {}/README.md\n", o->to, o->to);
    return 0;
  };
}

// anatomy average: checkpoint averaging on a run folder trained with --average N.
Runner add_average_command(CLI::App& app) {
  struct Options {
    std::string checkpoint;
    int64_t last = 5;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("average",
                                 "Average a translation run's last checkpoints; keep the mean as "
                                 "best/ if it validates better");
  cmd->add_option("--checkpoint", o->checkpoint, "a run folder trained with --average N")
      ->required();
  cmd->add_option("--last", o->last, "how many of the last kept checkpoints")
      ->capture_default_str()
      ->check(in_range(2, 100));
  return [o] {
    const training::RunDir run{o->checkpoint};
    run.read_run();                // "not a training run folder", before the lock file is made
    const auto lock = run.lock();  // not while a training writes there
    const auto a = training::average_translation_run(o->checkpoint, o->last);
    fmt::print("averaged {} checkpoints ({} ... {}):{}\nthe best before ({}):{}\n{}\n",
               a.files.size(), a.files.front(), a.files.back(),
               training::format_metrics(a.averaged), training::describe_select(a.select),
               training::format_metrics(a.best),
               a.kept ? fmt::format("kept as {}", run.file("best/model.safetensors"))
                      : std::string("not better: best/ unchanged"));
    return 0;
  };
}

// anatomy config: every TransformerConfig field, or a preset's config.json.
Runner add_config_command(CLI::App& app) {
  auto preset = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand(
      "config", "List the model config's fields, or print a preset as config.json");
  cmd->add_option("--preset", *preset,
                  fmt::format("print this preset's config.json ({})",
                              fmt::join(models::TransformerConfig::preset_names(), ", ")));
  return [preset] {
    if (!preset->empty()) {
      fmt::print("{}", models::TransformerConfig::preset(*preset).to_json());
      return 0;
    }
    fmt::print("{:30} {:12} {}\n", "field", "default", "meaning");
    for (const auto& line : models::TransformerConfig::describe()) fmt::print("{}\n", line);
    return 0;
  };
}

}  // namespace anatomy::cli
