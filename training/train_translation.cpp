// Training a translation model (a toy task or a TSV corpus) with the Trainer: AdamW with the
// Transformer's warmup schedule, label smoothing, gradient clipping and dropout; validation
// loss, BLEU and exact match after every epoch.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <optional>

#include <unistd.h>

#include "data/data.hpp"
#include "generation/generation.hpp"
#include "inference/translation_data.hpp"
#include "inference/translator.hpp"
#include "kernels/frozen_weights.hpp"
#include "kernels/parallel.hpp"
#include "run_folders/run_dir.hpp"
#include "tokenizers/unicode.hpp"
#include "training/checkpoint_average.hpp"
#include "training/corpus_recipe.hpp"
#include "training/train_options.hpp"
#include "training/trainer.hpp"

namespace anatomy::training {

namespace {

// The training side of a preset (the model side is TransformerConfig::preset).
struct Recipe {
  int64_t max_tokens, warmup;
  double lr;
};

Recipe recipe(const std::string& preset) {
  if (preset == "tiny") return {1024, 400, 2e-3};
  if (preset == "base") return {3072, 1000, 7e-4};
  return {1536, 400, 1e-3};  // small, medium, and any other preset or --config
}

std::unique_ptr<text::Tokenizer> train_tokenizer(const std::string& kind,
                                                 const std::vector<std::string>& texts,
                                                 int64_t vocab_size) {
  if (kind == "char")
    return std::make_unique<text::CharTokenizer>(text::CharTokenizer::train(texts));
  if (kind == "word")
    return std::make_unique<text::WordTokenizer>(text::WordTokenizer::train(texts));
  if (kind == "bpe")
    return std::make_unique<text::BpeTokenizer>(text::BpeTokenizer::train(texts, vocab_size));
  throw Error(fmt::format("unknown tokenizer kind '{}'", kind));
}

// Whether the two sides share one BPE vocabulary: --shared-vocab yes or no, or auto: yes for a
// corpus whose two sides are written mostly in one script (English and German, not English and
// Russian), where many subwords are the same on both sides.
bool share_vocabulary(const std::string& choice, const TranslationData& d,
                      const std::vector<std::string>& sources,
                      const std::vector<std::string>& targets) {
  const bool bpe = d.source_tokenizer == "bpe" && d.target_tokenizer == "bpe";
  if (choice == "yes" && !bpe)
    throw Error(fmt::format(
        "train: --shared-vocab yes needs BPE on both sides; this task's tokenizers are {} and {}",
        d.source_tokenizer, d.target_tokenizer));
  if (choice == "yes") return true;
  if (choice == "no" || d.is_task || !bpe) return false;
  if (choice != "auto")
    throw Error(fmt::format("train: --shared-vocab is yes, no or auto, not '{}'", choice));
  const std::string script = text::main_script(sources);
  return script != "Common" && script == text::main_script(targets);
}

// The pairs as a TSV file, one per line: what a run held out, for the user and for other tools
// (benchmarks/corpus_reference.py trains PyTorch on the same split).
void write_split(const std::string& path, const std::vector<data::Pair>& pairs) {
  std::string text;
  for (const auto& p : pairs) text += p.source + "\t" + p.target + "\n";
  write_file_atomically(path, text);
}

// Targets that are not padding (id 0): the tokens a batch's loss is the mean over.
int64_t non_pad(const Tensor& targets) {
  const Tensor t = targets.contiguous();
  const int64_t* id = t.data_ptr<int64_t>();
  return t.numel() - std::count(id, id + t.numel(), int64_t{0});
}

// A translation model's loss on a batch, label-smoothed by `smoothing`, with the plain NLL from
// the same pass: the validation loss is one (fairseq's nll_loss).
std::function<BatchLoss(nn::Module&, const Batch&)> translation_batch_loss(float smoothing) {
  return [smoothing](nn::Module& m, const Batch& batch) {
    Tensor logits =
        static_cast<models::Seq2SeqTransformer&>(m).forward(batch.input, batch.decoder_input);
    logits = logits.reshape({-1, logits.size(-1)});  // [B * T, V]
    const Tensor targets = batch.labels.reshape({-1});
    double nll = 0;
    BatchLoss out{cross_entropy(logits, targets,
                                {.ignore_index = 0,
                                 .label_smoothing = smoothing,
                                 .reduction = "mean",
                                 .nll = smoothing > 0 ? &nll : nullptr}),
                  non_pad(targets)};
    if (smoothing > 0) out.nll = nll;
    return out;
  };
}

nn::AdamWOptions adamw_options(double peak) {
  return {.lr = peak, .beta1 = 0.9, .beta2 = 0.98, .eps = 1e-9, .weight_decay = 0.01};
}

// What a corpus run's size is measured with: the run's data, batches and optimization.
struct Measuring {
  const Encoded &train, &valid;
  uint64_t seed;
  double clip;
  float smoothing;
  int64_t bos, eos;
  double window;  // seconds of training steps per size, warm-up included
};

// Target tokens a second of training steps: the run's Trainer, threads, batches (its first
// epoch's) and optimizer, on `model`, timed after a few steps of warm-up.
double training_rate(models::Seq2SeqTransformer& model, const models::TransformerConfig& config,
                     const Encoded& train, int64_t max_tokens, double peak, const Measuring& m) {
  constexpr int64_t kWarmup = 3;  // the first steps also allocate what the later ones reuse
  nn::AdamW opt(model.parameters(), adamw_options(peak));
  Trainer trainer(model, opt, nullptr,
                  {.epochs = 0, .time_budget = m.window, .clip = m.clip, .quiet = true});
  std::vector<data::Batch> batches;
  trainer.batches = [&](int64_t epoch) {
    batches = epoch_batches(train, max_tokens, m.seed, epoch);
    return static_cast<int64_t>(batches.size());
  };
  int64_t steps = 0, tokens = 0, measured_tokens = 0;
  const auto started = Clock::now();
  Clock::time_point measuring = started;
  trainer.batch = [&](int64_t, int64_t b) {
    if (steps++ == kWarmup) measuring = Clock::now();
    tokens += batches[b].target_tokens;
    if (steps > kWarmup) measured_tokens += batches[b].target_tokens;
    return Batch{batches[b].source, batches[b].target_in, batches[b].target_out};
  };
  trainer.batch_loss = translation_batch_loss(m.smoothing);
  trainer.replicate = [&] { return std::make_shared<models::Seq2SeqTransformer>(config); };
  trainer.fit();
  // A window too short for any step after the warm-up counts the warm-up's.
  if (steps <= kWarmup) return static_cast<double>(tokens) / seconds_since(started);
  return static_cast<double>(measured_tokens) / seconds_since(measuring);
}

// What an evaluation costs `model` (validate: the loss pass and greedy decoding), measured on
// the validation pairs of middling source length, up to one decoding batch of them, and scaled
// to them all. Each is decoded to its reference's length: about what a trained model emits,
// where this untrained one would run on to its limit.
double evaluation_seconds(models::Seq2SeqTransformer& model, int64_t max_tokens,
                          const Measuring& m) {
  const size_t n = m.valid.src.size();
  if (n == 0) return 0;
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return m.valid.src[a].size() > m.valid.src[b].size();
  });
  const size_t take = std::min<size_t>(n, 256), first = (n - take) / 2;
  std::vector<std::vector<int64_t>> src, tgt;
  std::vector<int64_t> limits;
  for (size_t k = first; k < first + take; ++k) {
    src.push_back(m.valid.src[order[k]]);
    tgt.push_back(m.valid.tgt[order[k]]);
    limits.push_back(std::min<int64_t>(static_cast<int64_t>(tgt.back().size()) + 1,
                                       model.config.max_position_embeddings - 1));
  }
  NoGradGuard no_grad;
  FrozenWeightsGuard frozen;
  model.eval();
  const auto started = Clock::now();
  for (const auto& b : data::make_batches(src, tgt, {.max_tokens = max_tokens, .shuffle = false}))
    (void)translation_loss(model, b, 0.0f, "sum").item<double>();
  generation::greedy_decode(model, data::pad_batch(src, model.config.pad_token_id), m.bos, m.eos,
                            limits);
  return seconds_since(started) * static_cast<double>(n) / static_cast<double>(take);
}

// What the saves after an evaluation cost `model`: the training state (model and optimizer),
// and the model twice more (last/ and the kept checkpoint), into a fresh temporary folder.
double saving_seconds(const models::Seq2SeqTransformer& model, const nn::Optimizer& opt) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() /
      fmt::format("anatomy-plan-{}-{}", ::getpid(), Clock::now().time_since_epoch().count());
  fs::create_directories(dir);
  // The folder goes however the saves end.
  struct Remove {
    fs::path dir;
    ~Remove() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } remove{dir};
  const auto started = Clock::now();
  nn::save_checkpoint((dir / "training.safetensors").string(), model, opt, nullptr, 0);
  model.save((dir / "model.safetensors").string());
  model.save((dir / "kept.safetensors").string());
  return seconds_since(started);
}

// What `size` costs here, measured on a throwaway model of it: the run's own model and random
// generator are made after, from its seed, so the measuring changes neither.
SizeCost measure_size(const models::TransformerConfig& config, int64_t max_tokens, double peak,
                      const Measuring& m) {
  const auto started = Clock::now();
  models::Seq2SeqTransformer model(config);
  models::init_weights(model, config.initializer_range);
  Encoded train = m.train;  // as the run trains it: without the pairs too long for the model
  drop_too_long(train, config.max_position_embeddings);
  SizeCost cost;
  cost.tokens_per_second = training_rate(model, config, train, max_tokens, peak, m);
  cost.epoch_overhead = evaluation_seconds(model, max_tokens, m);
  nn::AdamW opt(model.parameters(), adamw_options(peak));
  cost.epoch_overhead += saving_seconds(model, opt);
  cost.seconds = seconds_since(started);
  return cost;
}

// run.json's `plan`: what a corpus run sized for its budget measured and planned.
nlohmann::json plan_json(const CorpusPlan& plan, double time_budget, int64_t steps_per_epoch) {
  nlohmann::json measured = nlohmann::json::object();
  for (const auto& [name, rate] : plan.measured) measured[name] = rate;
  return {{"size", plan.size.name},
          {"threads", plan.threads},
          {"tokens_per_second", plan.tokens_per_second},
          {"epoch_overhead", plan.epoch_overhead},
          {"measure_seconds", plan.measure_seconds},
          {"time_budget", time_budget},
          {"epochs", plan.epochs},
          {"steps_per_epoch", steps_per_epoch},
          {"measured", measured}};
}

// A new run's model: the preset's (or --config's) sizes laid out for translation, with the
// tokenizers' vocabularies (`target_vocab` 0 when `shared`). `longest` is the data's longest
// sequence in tokens.
models::TransformerConfig translation_config(const TrainOptions& o, const std::string& preset,
                                             size_t longest, bool is_task, int64_t source_vocab,
                                             int64_t target_vocab, bool shared) {
  models::TransformerConfig config = build_config(o, preset, [&](models::TransformerConfig& c) {
    // Room for inputs a bit longer than any seen in training.
    c.max_position_embeddings =
        std::clamp<int64_t>((static_cast<int64_t>(longest) * 3 / 2 + 31) / 32 * 32, 64, 512);
    c.hidden_dropout_prob = c.attention_probs_dropout_prob = 0.1;
    c.pre_layer_norm = true;
    c.final_layer_norm = true;
    c.tie_word_embeddings = true;
    // A corpus trains from a larger init: std 0.06, near Xavier's for these sizes (what
    // nn.Transformer uses), which learns faster in its first epochs than BERT's 0.02 or 0.1
    // (docs/training.md). The toy tasks keep 0.02, which they were tuned with.
    if (!is_task) c.initializer_range = 0.06;
  });
  config.vocab_size = source_vocab;  // the tokenizers decide these
  config.target_vocab_size = target_vocab;
  config.share_embeddings = shared;
  config.pad_token_id = 0;
  config.validate();
  return config;
}

// A corpus run's size and epochs, each candidate size measured with the run's own options,
// batches and threads (a budget of 0 measures nothing).
CorpusPlan plan_size(const TrainOptions& o, const Encoded& train, const Encoded& valid,
                     uint64_t seed, const text::Tokenizer& target,
                     const std::function<models::TransformerConfig(const std::string&)>& config) {
  int64_t target_tokens = 0;  // per epoch, [EOS] included: what the loss is the mean over
  for (const auto& v : train.tgt) target_tokens += static_cast<int64_t>(v.size()) + 1;
  // A few seconds of steps per size: a hundredth of the budget, within 1-5 s.
  const Measuring m{.train = train,
                    .valid = valid,
                    .seed = seed,
                    .clip = o.clip,
                    .smoothing = static_cast<float>(o.label_smoothing),
                    .bos = target.vocab().id("[BOS]"),
                    .eos = target.vocab().id("[EOS]"),
                    .window = std::clamp(o.time_budget / 100, 1.0, 5.0)};
  CorpusPlan plan =
      plan_corpus_run(target_tokens, o.time_budget, get_num_threads(), [&](const CorpusSize& s) {
        const auto c = config(s.name);
        return measure_size(c, o.max_tokens > 0 ? o.max_tokens : recipe(s.name).max_tokens,
                            o.lr > 0 ? o.lr : s.lr, m);
      });
  // --epochs stops a run before its budget does; the log's size line says so beside what the
  // budget would buy.
  if (o.epochs > 0 && static_cast<double>(o.epochs) < plan.epochs) {
    plan.epochs = static_cast<double>(o.epochs);
    plan.why += fmt::format("; --epochs {} stops it there", o.epochs);
  }
  return plan;
}

// One translation run, in the steps train_translation takes: each reads what the ones before it
// made. A resumed run reads back what its first command chose (data, seed, tokenizers, config,
// schedule); a new run chooses them from the options and writes them to its folder.
struct TranslationRun {
  const TrainOptions& o;
  RunDir run;
  nlohmann::json meta;  // run.json's own fields
  RunLock lock;
  uint64_t seed = 0;
  DataSpec spec;
  TranslationData d;
  std::string select;  // the model selection's metric
  std::function<bool(const Metrics& now, const Metrics& best)> better;  // by `select`
  int64_t average = 0;  // the last N evaluated models averaged at the end (0, 1: none)
  // The symbol tasks learn fastest with a tiny model, small batches and a decay to zero (the
  // small preset takes longer to reach the same exact match).
  bool symbols = false;
  std::unique_ptr<text::Tokenizer> source_tokenizer, target_tokenizer;
  bool shared = false;  // one vocabulary and token table for both sides
  Encoded train_set, valid_set;
  size_t longest = 0;  // of the data's sequences, in tokens (a target's end token counted)
  std::optional<CorpusPlan> size;  // a corpus run sized for its budget
  std::string preset_name;
  Recipe preset_recipe;
  int64_t max_tokens = 0;
  models::TransformerConfig config;
  Translator tr;
  // The optimization: the peak learning rate, its warmup, the epochs and the steps the schedule
  // aims at.
  double peak = 0;
  int64_t steps_per_epoch = 0, warmup = 0, epochs = 0, planned_steps = 0;
  std::string schedule_name;
  std::unique_ptr<nn::AdamW> opt;
  std::unique_ptr<nn::LRScheduler> schedule;

  explicit TranslationRun(const TrainOptions& options);
  void read_data();
  void make_tokenizers();
  models::TransformerConfig new_config(const std::string& preset) const;
  bool plan_size();  // false: interrupted while measuring
  void make_config();
  void build_model();
  void plan_steps();
  void make_schedule();
  void describe();
  nlohmann::json recipe_json() const;
  TrainResult train();
  void after_training(const TrainResult& r);
  void choose_decoding_and_test();
};

TranslationRun::TranslationRun(const TrainOptions& options) : o(options), run{options.out} {
  meta = run.start(o.resume, "translation");
  lock = o.resume ? run.lock() : RunLock();  // a new run locks when it creates the folder
  if (o.resume) {
    const auto data = run.field<nlohmann::json>(meta, "data");
    const std::string was = data.value("task", "") + data.value("corpus", "");
    const std::string now = o.task + o.corpus;
    if (was != now)
      throw Error(
          fmt::format("{} was trained on '{}', not '{}'; resume with the same --task or --corpus",
                      o.out, was, now));
  }
  symbols = o.task == "copy" || o.task == "reverse";
}

// The data, read before anything is created in the run folder; a resumed run reads its data as
// it was first read, whatever this command line says.
void TranslationRun::read_data() {
  seed = o.resume ? run.field<uint64_t>(meta, "seed") : o.seed;
  if (o.resume) {
    spec = DataSpec::from_json(run.field<nlohmann::json>(meta, "data"));
  } else {
    spec.task = o.task;
    spec.corpus = o.corpus;
    spec.valid = o.valid;
    spec.test = o.test;
    spec.reverse = o.reverse;
    spec.read = {.max_chars = o.max_chars, .skip_malformed = o.skip_malformed};
  }
  d = read_translation_data(spec, seed, o.limit);
  fmt::print("{}\n", d.description);
  for (const auto& line : d.report) fmt::print("  {}\n", line);
  fmt::print("  train {} / valid {} / test {} pairs\n", d.splits.train.size(),
             d.splits.valid.size(), d.splits.test.size());
  // The best checkpoint: by validation BLEU for a corpus; by exact match for the toy tasks,
  // whose outputs are often a word or two (BLEU 0 whatever their quality).
  select = !o.select.empty() ? o.select : d.is_task ? "exact_match" : "bleu";
  better = better_by(select);
  // A corpus run averages its last 5 evaluated models at the end and keeps the mean when it
  // validates better than the best of them (docs/training.md has the runs); a task does not.
  average = o.average >= 0 ? o.average : d.is_task ? 0 : 5;
}

void TranslationRun::make_tokenizers() {
  const int64_t vocab_size = o.vocab_size > 0 ? o.vocab_size : d.is_task ? 200 : 8000;
  if (o.resume) {
    source_tokenizer = text::load_tokenizer(run.file("source_tokenizer"));
    target_tokenizer = text::load_tokenizer(run.file("target_tokenizer"));
  } else {
    std::vector<std::string> s, t;
    for (const auto& pr : d.splits.train) s.push_back(pr.source), t.push_back(pr.target);
    shared = share_vocabulary(o.shared_vocab, d, s, t);
    if (shared) {
      // One vocabulary learned from both sides: a word spelled alike in both (a name, a number,
      // "Computer") is one token with one embedding.
      std::vector<std::string> both = s;
      both.insert(both.end(), t.begin(), t.end());
      const auto bpe = text::BpeTokenizer::train(both, vocab_size);
      source_tokenizer = std::make_unique<text::BpeTokenizer>(bpe);
      target_tokenizer = std::make_unique<text::BpeTokenizer>(bpe);
    } else {
      source_tokenizer = train_tokenizer(d.source_tokenizer, s, vocab_size);
      target_tokenizer = train_tokenizer(d.target_tokenizer, t, vocab_size);
    }
  }
  train_set = encode(d.splits.train, *source_tokenizer, *target_tokenizer);
  valid_set = encode(d.splits.valid, *source_tokenizer, *target_tokenizer);
  for (const auto* e : {&train_set, &valid_set}) {
    for (const auto& v : e->src) longest = std::max(longest, v.size());
    for (const auto& v : e->tgt) longest = std::max(longest, v.size() + 1);
  }
}

models::TransformerConfig TranslationRun::new_config(const std::string& preset) const {
  return translation_config(o, preset, longest, d.is_task, source_tokenizer->vocab().size(),
                            shared ? 0 : target_tokenizer->vocab().size(), shared);
}

// A corpus without --preset or --config gets the size its time budget buys on this machine
// (corpus_recipe.hpp), measured here; a task, its preset.
bool TranslationRun::plan_size() {
  if (o.resume || d.is_task || !o.preset.empty() || !o.config_file.empty()) return true;
  StopOnSignal signals;  // one Ctrl-C stops the whole measuring, not one size's fit
  size = training::plan_size(o, train_set, valid_set, seed, *target_tokenizer,
                             [&](const std::string& preset) { return new_config(preset); });
  if (interrupted()) {  // Ctrl-C while measuring: nothing was made yet
    fmt::print("interrupted while measuring the sizes: nothing was saved\n");
    return false;
  }
  return true;
}

// The model's config; a new run's folder is created here, with its tokenizers, split and config.
void TranslationRun::make_config() {
  preset_name = o.resume            ? meta.value("preset", "small")
                : !o.preset.empty() ? o.preset
                : symbols           ? "tiny"
                : size              ? size->size.name
                                    : "small";
  preset_recipe = recipe(preset_name);
  max_tokens = o.max_tokens > 0 ? o.max_tokens : symbols ? 512 : preset_recipe.max_tokens;
  if (o.resume) {
    config = run.read_config();
  } else {
    config = new_config(preset_name);
    // Training memory, from the config and the batch, before the run folder is made.
    config.check_training_memory(max_tokens, std::min(max_tokens, config.max_position_embeddings),
                                 "--max-tokens");
    lock = run.create();
    source_tokenizer->save(run.file("source_tokenizer"));
    target_tokenizer->save(run.file("target_tokenizer"));
    if (!d.is_task) {
      std::error_code ec;
      std::filesystem::create_directories(run.file("split"), ec);
      if (ec) throw Error(fmt::format("cannot create {} ({})", run.file("split"), ec.message()));
      for (const char* name : {"train", "valid", "test"})
        write_split(run.file(fmt::format("split/{}.tsv", name)), d.splits.split(name));
    }
    write_file_atomically(run.file("config.json"),
                          config.to_json(models::TransformerConfig::Model::Seq2Seq));
  }
  // Pairs that do not fit the model's positions cannot be trained on.
  if (const size_t dropped = drop_too_long(train_set, config.max_position_embeddings))
    fmt::print("  {} training pairs longer than {} tokens dropped\n", dropped,
               config.max_position_embeddings);
}

void TranslationRun::build_model() {
  manual_seed(seed);
  tr.config = config;
  tr.model = std::make_shared<models::Seq2SeqTransformer>(config);
  tr.source = std::move(source_tokenizer);
  tr.target = std::move(target_tokenizer);
  tr.bos = tr.target->vocab().id("[BOS]");
  tr.eos = tr.target->vocab().id("[EOS]");
  // Plain N(0, 0.02): GPT-2's scaled residual init (which the language model uses) makes the
  // copy task learn an epoch later.
  models::init_weights(*tr.model, config.initializer_range);
  peak = o.lr > 0 ? o.lr : size ? size->size.lr : preset_recipe.lr;
  opt = std::make_unique<nn::AdamW>(tr.model->parameters(), adamw_options(peak));
}

// The run's epochs and the steps its schedule aims at.
void TranslationRun::plan_steps() {
  // Warm up over the preset's steps, but never longer than half the first epoch: a short run on
  // a small dataset must reach its peak learning rate.
  steps_per_epoch = static_cast<int64_t>(
      data::make_batches(train_set.src, train_set.tgt, {.max_tokens = max_tokens, .shuffle = false})
          .size());
  warmup =
      o.warmup > 0 ? o.warmup : std::clamp<int64_t>(steps_per_epoch / 2, 20, preset_recipe.warmup);
  // With a time budget and no --epochs the budget is the run's length (epochs 0 in run.json);
  // otherwise the task's number of epochs.
  const int64_t default_epochs = symbols ? 6 : o.task == "numbers" ? 40 : 20;
  epochs = o.epochs > 0        ? o.epochs
           : o.resume          ? meta.value("epochs", int64_t{10})
           : o.time_budget > 0 ? 0
                               : default_epochs;
  // The steps a decaying schedule aims at first: the planned epochs' for a corpus run sized for
  // its budget (a resumed one kept them in run.json); a budget-long run re-plans them as it goes.
  const double plan_epochs = size                    ? size->epochs
                             : meta.contains("plan") ? meta["plan"].value("epochs", 0.0)
                                                     : 0.0;
  planned_steps = std::max(
      warmup, epochs > 0 ? steps_per_epoch * epochs
              : plan_epochs > 0
                  ? static_cast<int64_t>(static_cast<double>(steps_per_epoch) * plan_epochs)
                  : steps_per_epoch * default_epochs);
}

// The paper's warmup schedule (noam), scaled so that its peak (at step `warmup`) is `peak`; or
// warmup then linear/cosine decay to zero at the end of the planned epochs.
void TranslationRun::make_schedule() {
  schedule_name = o.resume                ? meta.value("schedule", "noam")
                  : !o.schedule.empty()   ? o.schedule
                  : symbols || !d.is_task ? "linear"
                                          : "noam";
  if (schedule_name == "noam")
    schedule = std::make_unique<nn::NoamSchedule>(
        *opt, config.hidden_size, warmup,
        peak * std::sqrt(static_cast<double>(config.hidden_size * warmup)));  // its peak: `peak`
  else if (schedule_name == "linear" || schedule_name == "cosine")
    schedule = std::make_unique<nn::WarmupDecaySchedule>(
        *opt, peak, warmup, planned_steps,
        schedule_name == "linear" ? nn::WarmupDecaySchedule::Decay::Linear
                                  : nn::WarmupDecaySchedule::Decay::Cosine);
  else
    throw Error(
        fmt::format("train: unknown --schedule '{}' (noam, linear or cosine)", schedule_name));
}

// run.json's own fields, and the log's lines on the run's size and model.
void TranslationRun::describe() {
  if (!o.resume) {
    TrainOptions used = o;  // run.json keeps the values the run uses, the preset's included
    used.lr = peak;
    used.warmup = warmup;
    used.max_tokens = max_tokens;
    used.average = average;
    meta = {{"kind", "translation"},
            {"seed", seed},
            {"preset", preset_name},
            {"schedule", schedule_name},
            {"data", spec.to_json()},
            {"description", d.description},
            {"options", training_options(used)}};
  }
  if (size) {
    meta["size"] = {{"name", size->size.name}, {"why", size->why}};
    if (o.time_budget > 0) meta["plan"] = plan_json(*size, o.time_budget, steps_per_epoch);
  }
  meta["epochs"] = epochs;
  meta.erase("decoding");  // chosen again for the model this run ends with
  meta["recipe"] = recipe_json();
  if (size) fmt::print("size: {}, as {}\n", size->size.name, size->why);
  if (size && o.time_budget > 0) fmt::print("{}\n", training::describe(*size, o.time_budget));
  if (o.resume && meta.contains("plan"))
    fmt::print("plan (as the run first made it): {}, about {:.0f} epochs\n",
               meta["plan"].value("size", "?"), meta["plan"].value("epochs", 0.0));
  fmt::print("model: {} parameters; vocab {} -> {}\n  {}\n", tr.model->num_parameters(),
             config.vocab_size, config.target_vocab(), config.architecture(true, true));
}

// Everything the loop does, spelled out for `anatomy export` (PyTorch continues it).
nlohmann::json TranslationRun::recipe_json() const {
  const double noam_factor = peak * std::sqrt(static_cast<double>(config.hidden_size * warmup));
  return {{"max_tokens", max_tokens},
          {"label_smoothing", o.label_smoothing},
          {"clip", o.clip},
          {"bos", tr.bos},
          {"eos", tr.eos},
          {"optimizer",
           {{"lr", peak},
            {"beta1", 0.9},
            {"beta2", 0.98},
            {"eps", 1e-9},
            {"weight_decay", 0.01},
            {"decay_vectors", true}}},
          {"schedule",
           {{"name", schedule_name},
            {"warmup", warmup},
            {"total_steps", planned_steps},
            {"min_lr", 0.0},
            {"d_model", config.hidden_size},
            {"factor", noam_factor}}}};
}

TrainResult TranslationRun::train() {
  Trainer trainer(
      *tr.model, *opt, schedule.get(),
      {.epochs = epochs,
       .time_budget = o.time_budget,
       .seconds_before = size ? size->measure_seconds : 0.0,
       .clip = o.clip,
       .log_every = o.log_every,
       .run_dir = o.out,
       .resume = o.resume,
       .title = fmt::format(
           "{}: loss{}",
           o.task.empty() ? std::filesystem::path(o.corpus).filename().string() : o.task,
           o.label_smoothing > 0
               ? fmt::format(" (train loss label-smoothed {:g})", o.label_smoothing)
               : ""),
       .detect_anomaly = o.detect_anomaly,
       .keep_last = average,
       .best_by = describe_select(select)});
  trainer.run_info = meta;
  std::vector<data::Batch> batches;
  trainer.batches = [&](int64_t epoch) {
    batches = epoch_batches(train_set, max_tokens, seed, epoch);
    return static_cast<int64_t>(batches.size());
  };
  trainer.batch = [&](int64_t, int64_t b) {
    return Batch{batches[b].source, batches[b].target_in, batches[b].target_out};
  };
  trainer.batch_loss = translation_batch_loss(static_cast<float>(o.label_smoothing));
  // Each thread trains on its own rows of the batch (nn::DataParallel).
  trainer.replicate = [&] { return std::make_shared<models::Seq2SeqTransformer>(config); };
  trainer.evaluate = [&](bool) { return validate(tr, valid_set, max_tokens); };
  trainer.better = better;
  if (o.early_stop)
    trainer.should_stop = [](const Metrics& m) {
      const bool done = m["exact_match"].get<double>() >= 100.0;
      if (done) fmt::print("validation exact match is 100%: stopping\n");
      return done;
    };
  fmt::print("model selection: {}{}\n", describe_select(select),
             average > 1
                 ? fmt::format("; the last {} evaluated models averaged at the end", average)
                 : "");
  return trainer.fit();
}

// What a run that trained to its end does after: run.json's final schedule, the averaged
// checkpoints, and for a corpus the decoding and the test score.
void TranslationRun::after_training(const TrainResult& r) {
  if (meta.contains("plan") && steps_per_epoch > 0)
    fmt::print("trained {:.1f} epochs; the plan was about {:.0f}\n",
               static_cast<double>(r.step) / static_cast<double>(steps_per_epoch),
               meta["plan"].value("epochs", 0.0));
  // A budget-long run planned its decay as it went: run.json's recipe keeps where it ends (what
  // `anatomy export` hands on to PyTorch), not the first guess.
  if (const auto* decay = dynamic_cast<const nn::WarmupDecaySchedule*>(schedule.get());
      decay && epochs == 0) {
    nlohmann::json saved = run.read_run();
    saved["recipe"]["schedule"]["total_steps"] = decay->total_steps;
    run.write_run(saved);
  }
  if (r.interrupted) {
    fmt::print("saved {}; resume with: anatomy train {} --out {} --resume{}\n", o.out,
               o.task.empty() ? "--corpus " + o.corpus : "--task " + o.task, o.out,
               o.time_budget > 0 ? " (it keeps every option, and the rest of the time budget)"
                                 : " (it keeps every option)");
    return;
  }
  if (average > 1 && kept_checkpoints(run).size() >= 2) {
    const auto a = average_translation_run(o.out, average);
    fmt::print("averaged the last {} checkpoints:{}; the best before:{}{}\n", a.files.size(),
               format_metrics(a.averaged), format_metrics(a.best),
               a.kept ? "  kept as best" : "  (best kept)");
  }
  const Metrics best = RunDir{o.out}.read_run().value("best", Metrics::object());
  fmt::print("saved {} (best:{}); loss curve in {} and {}\n", o.out, format_metrics(best),
             run.file("loss.svg"), run.file("loss.csv"));
  if (!d.is_task) choose_decoding_and_test();
}

// "greedy BLEU; beam 4 with length penalty P: BLEU, P: BLEU, ...", as choose_decoding tried them.
std::string describe_tried(const DecodingChoice& c) {
  std::string tried;
  std::vector<std::string> beams;
  for (const auto& [beam, penalty, bleu] : c.tried)
    if (beam == 1)
      tried = fmt::format("greedy {:.2f}", bleu);
    else
      beams.push_back(fmt::format("{:g}: {:.2f}", penalty, bleu));
  if (!beams.empty())
    tried += fmt::format("; beam {} with length penalty {}", std::get<0>(c.tried.back()),
                         fmt::join(beams, ", "));
  return tried;
}

// How the best model decodes by default, chosen on (up to 500 of) the validation pairs: the
// later commands read it from run.json. Then its held-out score, as `anatomy evaluate --split
// test` reports it.
void TranslationRun::choose_decoding_and_test() {
  const auto started = Clock::now();
  Translator best_model = Translator::load(o.out);
  const std::vector<data::Pair> held(
      d.splits.valid.begin(),
      d.splits.valid.begin() + std::min<size_t>(d.splits.valid.size(), 500));
  const DecodingChoice c = choose_decoding(best_model, held);
  fmt::print("decoding: {}, chosen on {} validation pairs (BLEU {}; {:.0f} s)\n",
             c.beam > 1 ? fmt::format("beam {}, length penalty {:g}", c.beam, c.length_penalty)
                        : std::string("greedy"),
             held.size(), describe_tried(c), seconds_since(started));
  nlohmann::json saved = run.read_run();
  saved["decoding"] = {{"beam", c.beam},
                       {"length_penalty", c.length_penalty},
                       {"pairs", held.size()},
                       {"greedy_bleu", c.greedy_bleu},
                       {"beam_bleu", c.beam_bleu}};
  run.write_run(saved);
  best_model.default_beam = c.beam;
  best_model.default_length_penalty = c.length_penalty;
  std::vector<std::string> sources, refs;
  for (const auto& p : d.splits.test) sources.push_back(p.source), refs.push_back(p.target);
  const auto hyps = best_model.translate(sources, c.beam, c.length_penalty);
  fmt::print("test ({} pairs, {}): {}\n", hyps.size(),
             c.beam > 1 ? fmt::format("beam {}", c.beam) : std::string("greedy"),
             data::corpus_bleu(hyps, {refs}).format());
}

}  // namespace

int train_translation(const TrainOptions& o) {
  if (o.threads > 0) set_num_threads(o.threads);
  TranslationRun translation(o);
  translation.read_data();
  translation.make_tokenizers();
  if (!translation.plan_size()) return 130;  // interrupted while measuring: nothing was made yet
  translation.make_config();
  translation.build_model();
  translation.plan_steps();
  translation.make_schedule();
  translation.describe();
  const TrainResult r = translation.train();
  translation.after_training(r);
  return r.interrupted ? 130 : 0;
}

}  // namespace anatomy::training
