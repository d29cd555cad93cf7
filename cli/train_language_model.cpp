// Training a character-level decoder-only language model on a text file, nanoGPT-style:
// random blocks of the first 90% of the text, validation loss on the last 10%.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "loss_curve.hpp"
#include "progress.hpp"
#include "run_dir.hpp"
#include "train.hpp"

namespace anatomy::cli {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

struct LmPreset {
  int64_t layers, heads, hidden, block, batch, iters, warmup;
  double lr, min_lr, dropout;
};

// "nanogpt" is nanoGPT's shakespeare_char CPU recipe.
LmPreset lm_preset(const std::string& name) {
  if (name == "nanogpt" || name.empty()) return {4, 4, 128, 64, 12, 2000, 100, 1e-3, 1e-4, 0.0};
  if (name == "tiny") return {2, 4, 64, 32, 16, 500, 50, 2e-3, 2e-4, 0.0};
  if (name == "small") return {6, 6, 192, 128, 16, 4000, 200, 1e-3, 1e-4, 0.1};
  throw Error(fmt::format("unknown preset '{}' for --task lm (nanogpt, tiny or small)", name));
}

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(fmt::format("train: cannot open the text {}", path));
  std::stringstream ss;
  ss << f.rdbuf();
  if (ss.str().empty()) throw Error(fmt::format("train: the text {} is empty", path));
  return ss.str();
}

// A batch of `batch` random windows: x = ids[i : i+T], y = ids[i+1 : i+T+1].
std::pair<Tensor, Tensor> sample(const std::vector<int64_t>& ids, int64_t batch, int64_t T,
                                 Generator& g) {
  std::vector<int64_t> x, y;
  const auto span = static_cast<uint64_t>(ids.size() - T - 1);
  for (int64_t b = 0; b < batch; ++b) {
    const auto i =
        static_cast<int64_t>((static_cast<uint64_t>(g.next_u32()) << 32 | g.next_u32()) % span);
    x.insert(x.end(), ids.begin() + i, ids.begin() + i + T);
    y.insert(y.end(), ids.begin() + i + 1, ids.begin() + i + T + 1);
  }
  return {from_vector(x, {batch, T}), from_vector(y, {batch, T})};
}

double estimate_loss(models::TransformerForCausalLM& model, const std::vector<int64_t>& ids,
                     int64_t batch, int64_t T, int64_t iters) {
  NoGradGuard no_grad;
  model.eval();
  Generator g(1234);  // the same windows every time, and the training generator untouched
  double total = 0;
  for (int64_t i = 0; i < iters; ++i) {
    auto [x, y] = sample(ids, batch, T, g);
    Tensor logits = model.forward(x);
    total += cross_entropy(logits.reshape({-1, logits.size(-1)}), y.reshape({-1})).item<double>();
  }
  model.train();
  return total / static_cast<double>(iters);
}

}  // namespace

int train_language_model(const TrainOptions& o) {
  const auto started = Clock::now();
  if (o.threads > 0) set_num_threads(o.threads);
  RunDir run{o.out};
  if (!o.resume && std::filesystem::exists(run.file("run.json")))
    throw Error(fmt::format(
        "{} already holds a training run; pass --resume to continue it, or choose another --out",
        o.out));
  nlohmann::json meta = o.resume ? run.read_run() : nlohmann::json::object();
  if (o.resume && meta.value("kind", "") != "lm")
    throw Error(
        fmt::format("{} holds a {} run, not a language model", o.out, meta.value("kind", "?")));
  const std::string text = read_text(o.text);  // before creating anything in the run folder
  run.create();
  const LmPreset p = lm_preset(o.resume ? meta.value("preset", "nanogpt") : o.preset);
  std::unique_ptr<text::Tokenizer> tok;
  models::TransformerConfig config;
  if (o.resume) {
    tok = text::load_tokenizer(run.file("tokenizer"));
    config = run.read_config();
  } else {
    tok = std::make_unique<text::CharTokenizer>(text::CharTokenizer::train({text}));
    tok->save(run.file("tokenizer"));
    config.vocab_size = tok->vocab().size();
    config.hidden_size = p.hidden;
    config.num_attention_heads = p.heads;
    config.num_hidden_layers = p.layers;
    config.intermediate_size = 4 * p.hidden;
    config.max_position_embeddings = p.block;
    config.hidden_dropout_prob = config.attention_probs_dropout_prob = p.dropout;
    config.layer_norm_eps = 1e-5;
    config.final_layer_norm = true;
    config.embedding_layer_norm = false;  // GPT's layout: no LayerNorm right after the embeddings
    config.bias = false;                  // and nanoGPT's bias-free Linear and LayerNorm layers
    config.tie_word_embeddings = true;
    config.validate();
    write_file_atomically(run.file("config.json"), config.to_json());
  }
  const std::vector<int64_t> ids = tok->encode(text);
  const auto n_train = static_cast<int64_t>(ids.size() * 9 / 10);
  const std::vector<int64_t> train_ids(ids.begin(), ids.begin() + n_train),
      val_ids(ids.begin() + n_train, ids.end());
  if (static_cast<int64_t>(val_ids.size()) <= p.block + 1)
    throw Error(fmt::format("train: {} is too short for blocks of {} characters", o.text, p.block));
  const uint64_t seed = o.resume ? meta["seed"].get<uint64_t>() : o.seed;
  manual_seed(seed);
  models::TransformerForCausalLM model(config);
  models::init_weights(model, config.initializer_range, config.num_hidden_layers);
  const int64_t iters = o.iters > 0 ? o.iters : o.resume ? meta.value("iters", p.iters) : p.iters;
  const double lr = o.lr > 0 ? o.lr : p.lr;
  nn::AdamW opt(model.parameters(), {.lr = lr, .beta1 = 0.9, .beta2 = 0.99, .weight_decay = 0.1});
  opt.no_decay_for_vectors();  // biases and LayerNorm gains are not decayed (nanoGPT's rule)
  // The floor keeps the preset's ratio to the peak (nanoGPT's min_lr = learning_rate / 10).
  nn::WarmupDecaySchedule schedule(opt, lr, o.warmup > 0 ? o.warmup : p.warmup, iters,
                                   nn::WarmupDecaySchedule::Decay::Cosine, lr * p.min_lr / p.lr);
  int64_t step = 0;
  double best = 1e30;
  LossCurve curve;
  if (o.resume) {
    step = nn::load_checkpoint(run.file("last/training.safetensors"), model, opt, &schedule).step;
    best = meta.value("best_valid_loss", 1e30);
    for (const auto& c : meta.value("curve", nlohmann::json::array()))
      curve.train.push_back({c[0].get<int64_t>(), c[1].get<double>(), c[2].get<double>()});
    for (const auto& e : meta.value("evals", nlohmann::json::array()))
      curve.eval.push_back({e[0].get<int64_t>(), e[1].get<double>(), NAN});
    fmt::print("resuming {} at step {}\n", o.out, step);
  } else {
    meta = {{"kind", "lm"},
            {"seed", seed},
            {"preset", o.preset.empty() ? "nanogpt" : o.preset},
            {"text", o.text},
            {"options", training_options(o)}};
  }
  meta["iters"] = iters;
  fmt::print(
      "character language model on {} ({} characters, vocabulary {}): {} parameters, {} layers, "
      "{} heads, hidden {}, block {}, batch {}\n",
      o.text, ids.size(), tok->vocab().size(), model.num_parameters(), p.layers, p.heads, p.hidden,
      p.block, p.batch);
  auto save = [&](bool is_best) {
    model.save(run.file("last/model.safetensors"));
    if (is_best) model.save(run.file("best/model.safetensors"));
    nn::save_checkpoint(run.file("last/training.safetensors"), model, opt, &schedule, step);
    nlohmann::json c = nlohmann::json::array(), e = nlohmann::json::array();
    for (const auto& pt : curve.train) c.push_back({pt.step, pt.train_loss, pt.lr});
    for (const auto& pt : curve.eval) e.push_back({pt.step, pt.valid_loss});
    meta["curve"] = c;
    meta["evals"] = e;
    meta["best_valid_loss"] = best;
    meta["step"] = step;
    run.write_run(meta);
    curve.write_csv(run.file("loss.csv"));
    curve.write_svg(run.file("loss.svg"), "character language model: loss");
  };
  install_interrupt_handler();
  model.train();
  ProgressBar bar("training", iters);
  double window = 0;
  int64_t in_window = 0;
  const int64_t eval_every = std::max<int64_t>(iters / 8, 50);
  auto& g = default_generator();
  const auto loop_start = Clock::now();
  const int64_t first = step;
  bool stop = false;
  while (step < iters && !stop) {
    if (interrupted() || (o.time_budget > 0 && seconds_since(started) > o.time_budget)) {
      stop = true;
      break;
    }
    auto [x, y] = sample(train_ids, p.batch, p.block, g);
    Tensor logits = model.forward(x);
    Tensor loss = cross_entropy(logits.reshape({-1, logits.size(-1)}), y.reshape({-1}));
    opt.zero_grad();
    loss.backward();
    nn::clip_grad_norm_(model.parameters(), static_cast<float>(o.clip));
    opt.step();
    schedule.step();
    ++step;
    window += loss.item<double>();
    if (++in_window == 10) {
      curve.train.push_back({step, window / 10.0, opt.lr()});
      window = 0;
      in_window = 0;
    }
    const double per = seconds_since(loop_start) / static_cast<double>(step - first);
    bar.update(
        step, fmt::format("loss {:.3f} lr {:.1e} {} tok/s ETA {}",
                          curve.train.empty() ? loss.item<double>() : curve.train.back().train_loss,
                          opt.lr(), human(static_cast<double>(p.batch * p.block) / per),
                          clock(per * static_cast<double>(iters - step))));
    if (step % eval_every == 0 && step < iters) {
      const double v = estimate_loss(model, val_ids, p.batch, p.block, 50);
      curve.eval.push_back({step, v, NAN});
      const bool is_best = v < best;
      if (is_best) best = v;
      save(is_best);
    }
  }
  const double v = estimate_loss(model, val_ids, p.batch, p.block, 200);
  curve.eval.push_back({step, v, NAN});
  const bool is_best = v < best;
  if (is_best) best = v;
  save(is_best);
  bar.finish(fmt::format("step {}/{}  validation loss {:.4f}  (best {:.4f}, {})", step, iters, v,
                         best, clock(seconds_since(started))));
  if (interrupted()) {
    fmt::print(
        "interrupted: saved {}; resume with: anatomy train --task lm --text {} --out {} --resume\n",
        o.out, o.text, o.out);
    return 130;
  }
  NoGradGuard no_grad;
  model.eval();
  const auto prompt = tok->encode("\n");
  auto sample_text = models::generate(model, prompt, 200, {.temperature = 0.8f, .top_k = 40});
  fmt::print("sample:\n{}\n", tok->decode(sample_text.tokens));
  fmt::print("saved {}; loss curve in {}\n", o.out, run.file("loss.svg"));
  return 0;
}

}  // namespace anatomy::cli
