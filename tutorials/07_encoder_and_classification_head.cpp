// Tutorial 07: the whole encoder, and a classification head on top. The encoder stacks the
// embeddings and 12 encoder layers; TransformerForSequenceClassification takes the first
// token's final hidden state, applies dropout and a Linear layer to num_labels logits. Then a
// short training run shows the head (and everything under it) learning a toy task.
#include <chrono>

#include "chapter.hpp"
#include "data/data.hpp"

using namespace anatomy;

int main(int argc, char** argv) {
  tutorial::Tutorial t(
      argc, argv, "07 - The encoder and a classification head",
      "TransformerEncoder, TransformerForSequenceClassification, and a short training run.",
      {"--vocab"});
  manual_seed(0);
  bool real = false;
  const auto tokenizer = tutorial::bert_tokenizer(t, real);
  auto config = tutorial::bert_config();
  if (!real) config.vocab_size = tokenizer.vocab().size();
  Tensor input_ids = from_vector(tokenizer.encode(tutorial::kText), {1, 5});
  NoGradGuard no_grad_for_shapes;

  t.section("TransformerEncoder(config): embeddings and 12 encoder layers");
  models::TransformerEncoder encoder(config);
  encoder.eval();
  fmt::print("encoder: {} layers, {} parameters\n", encoder.layers->size(),
             encoder.num_parameters());
  Tensor hidden = encoder.forward(input_ids);
  fmt::print("encoder(inputs.input_ids).size()\n{}\n", hidden.sizes());
  t.check(hidden.sizes() == Shape{1, 5, 768}, "the encoder's output is [1, 5, 768]");

  t.section("A classification head on the first token");
  config.num_labels = 3;
  models::TransformerForSequenceClassification encoder_classifier(config);
  encoder_classifier.eval();
  Tensor logits = encoder_classifier.forward(input_ids);
  fmt::print("encoder_classifier(inputs.input_ids).size()\n{}\n\nlogits: {}\n", logits.sizes(),
             logits);
  t.check(logits.sizes() == Shape{1, 3}, "the classifier gives [1, 3] logits");
  fmt::print("\nUntrained, these logits mean nothing. Training makes them mean something:\n");

  t.section("Training a small encoder: which of a, b, c occurs most?");
  // The toy task "majority" (data/tasks.hpp): sequences over a..h, labelled by the most
  // frequent of a, b, c. Validation examples are never trained on.
  const auto examples = data::majority_examples((t.fast() ? 1500 : 6000) + 500, 7);
  const std::vector<data::LabeledText> valid(examples.begin(), examples.begin() + 500),
      train(examples.begin() + 500, examples.end());
  std::vector<std::string> texts;
  for (const auto& e : train) texts.push_back(e.text);
  auto tok = text::WordTokenizer::train(texts);
  models::TransformerConfig small;
  small.vocab_size = tok.vocab().size();
  small.hidden_size = 64;
  small.num_attention_heads = 4;
  small.num_hidden_layers = 2;
  small.intermediate_size = 128;
  small.max_position_embeddings = 32;
  small.num_labels = 3;
  small.final_layer_norm = true;
  models::TransformerForSequenceClassification model(small);
  models::init_weights(model);
  nn::AdamW opt(model.parameters(), {.lr = 1e-3});
  auto batch = [&](const std::vector<data::LabeledText>& set, size_t start, size_t n) {
    std::vector<std::vector<int64_t>> rows;
    std::vector<int64_t> labels;
    for (size_t i = start; i < std::min(set.size(), start + n); ++i) {
      auto ids = tok.encode(set[i].text);
      ids.insert(ids.begin(), tok.vocab().id("[BOS]"));  // position 0: the [CLS] slot
      rows.push_back(ids);
      labels.push_back(set[i].label);
    }
    Tensor x = data::pad_batch(rows);
    return std::tuple{x, ne(x.to(kFloat32), full({}, 0.0f)),
                      from_vector(labels, {static_cast<int64_t>(labels.size())})};
  };
  auto accuracy = [&] {
    NoGradGuard ng;
    model.eval();
    auto [x, mask, y] = batch(valid, 0, valid.size());
    const auto pred = argmax(model.forward(x, mask), -1).to_int_vector(), truth = y.to_int_vector();
    int64_t right = 0;
    for (size_t i = 0; i < pred.size(); ++i) right += pred[i] == truth[i];
    model.train();
    return 100.0 * static_cast<double>(right) / static_cast<double>(pred.size());
  };
  const double before = accuracy();
  fmt::print("accuracy before training: {:.1f}% (chance: about 33%)\n", before);
  set_grad_enabled(true);
  const int epochs = t.fast() ? 2 : 4;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    double loss_sum = 0;
    int steps = 0;
    for (size_t start = 0; start < train.size(); start += 32, ++steps) {
      auto [x, mask, y] = batch(train, start, 32);
      Tensor loss = cross_entropy(model.forward(x, mask), y);
      opt.zero_grad();
      loss.backward();
      opt.step();
      loss_sum += loss.item();
    }
    fmt::print("epoch {}: loss {:.3f}, validation accuracy {:.1f}%\n", epoch + 1, loss_sum / steps,
               accuracy());
  }
  const double after = accuracy();
  t.check(after > before + 15.0 && after > 55.0, "training lifts accuracy well above chance");
  return t.finish();
}
