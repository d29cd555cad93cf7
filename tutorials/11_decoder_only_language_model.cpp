// Tutorial 11: a decoder-only language model, GPT's shape: the decoder without cross-attention,
// trained to predict each next character of a text, then sampled from: --text PATH (Tiny
// Shakespeare, say), else a built-in paragraph.
#include <cmath>
#include <fstream>
#include <map>
#include <numeric>
#include <sstream>

#include "chapter.hpp"
#include "training/training.hpp"

using namespace anatomy;

int main(int argc, char** argv) {
  tutorial::Tutorial t(argc, argv, "11 - A decoder-only language model",
                       "A tiny character-level model: train briefly, then generate.", {"--text"});
  manual_seed(0);

  t.section("Text and characters");
  std::string text;
  if (const std::string path = t.option("--text"); !path.empty()) {
    std::ifstream f{path};
    if (!f) {
      fmt::print(stderr, "error: --text {}: cannot be read\n", path);
      return 2;
    }
    std::stringstream ss;
    ss << f.rdbuf();
    text = ss.str().substr(0, 200000);
    fmt::print("(text: the first 200,000 characters of {})\n", path);
  } else {
    fmt::print(
        "(a built-in paragraph; --text PATH learns from a text of your own, such as Tiny "
        "Shakespeare)\n");
    for (int i = 0; i < 40; ++i)
      text +=
          "time flies like an arrow; fruit flies like a banana. the cat sat on the mat and the dog "
          "sat on the log. ";
  }
  auto tok = text::CharTokenizer::train({text});
  const auto ids = tok.encode(text);
  fmt::print("{} characters, {} distinct\n", ids.size(), tok.vocab().size() - 4);

  t.section("TransformerForCausalLM: decoder layers without cross-attention + lm_head");
  auto config = models::TransformerConfig::preset("tiny");  // hidden 64, 4 heads, 2 layers
  config.vocab_size = tok.vocab().size();
  config.max_position_embeddings = 32;
  config.hidden_dropout_prob = config.attention_probs_dropout_prob = 0.0;
  config.final_layer_norm = true;
  config.tie_word_embeddings = true;
  models::TransformerForCausalLM model(config);
  models::init_weights(model);
  fmt::print("{} parameters; lm_head shares the token embedding table\n", model.num_parameters());

  t.section("Training: predict every next character");
  const int64_t T = 32, B = 16, steps = t.fast() ? 150 : 600;
  nn::AdamW opt(model.parameters(), {.lr = 3e-3, .beta2 = 0.99, .weight_decay = 0.1});
  // One pass of `steps` random windows, a log line every fifth of the way.
  training::Trainer trainer(model, opt, nullptr,
                            {.clip = 0, .eval_every = steps / 5, .unit = "step"});
  Generator g(1);
  std::vector<double> losses;
  trainer.batches = [&](int64_t) { return steps; };
  trainer.loss = [&](int64_t, int64_t) {
    std::vector<int64_t> x, y;
    for (int64_t b = 0; b < B; ++b) {
      const int64_t i = g.next_u32() % (ids.size() - T - 1);
      x.insert(x.end(), ids.begin() + i, ids.begin() + i + T);
      y.insert(y.end(), ids.begin() + i + 1, ids.begin() + i + T + 1);
    }
    Tensor logits = model.forward(from_vector(x, {B, T}));  // [B, T, V]
    Tensor loss = cross_entropy(logits.reshape({-1, config.vocab_size}), from_vector(y, {B * T}));
    losses.push_back(loss.item());
    return training::BatchLoss{loss, B * T};
  };
  trainer.fit();
  t.check(losses.back() < losses.front() * 0.75, "the loss fell from about log(vocabulary)");
  // A model that ignored the context could at best learn how common each character is: its loss
  // would be the text's unigram entropy. Below it, the model predicts from what came before.
  std::map<int64_t, double> counts;
  for (int64_t id : ids) counts[id] += 1;
  double unigram = 0;
  for (const auto& [id, n] : counts) {
    const double p = n / static_cast<double>(ids.size());
    unigram -= p * std::log(p);
  }
  const double recent =
      std::accumulate(losses.end() - 10, losses.end(), 0.0) / 10.0;  // the last 10 steps
  fmt::print("loss of the last 10 steps {:.3f}; the characters' unigram entropy {:.3f}\n", recent,
             unigram);
  t.check(recent < unigram - 0.2, "below the unigram entropy: the model uses the context");

  t.section("Generating, one character at a time (with the KV cache)");
  model.eval();
  manual_seed(3);
  const auto prompt = tok.encode("the ");
  auto sample = generation::generate(model, prompt, 120, {.temperature = 0.8f, .top_k = 10});
  fmt::print("\"the {}\"\n", tok.decode(sample.tokens));
  manual_seed(3);
  auto again = generation::generate(model, prompt, 120, {.temperature = 0.8f, .top_k = 10});
  t.check(again.tokens == sample.tokens, "the same seed gives the same text");
  return t.finish();
}
