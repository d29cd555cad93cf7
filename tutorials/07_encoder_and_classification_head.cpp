// Tutorial 07: the whole encoder, and a classification head on top. The encoder stacks the
// embeddings and 12 encoder layers; TransformerForSequenceClassification takes the first
// token's final hidden state, applies dropout and a Linear layer to num_labels logits. Then a
// short training run shows the head (and everything under it) learning a toy task.
#include "chapter.hpp"
#include "data/data.hpp"
#include "training/training.hpp"

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

  t.section("The head on a pretrained encoder");
  if (const auto bert = tutorial::pretrained_bert(t)) {
    // The same class with BERT's sizes; its encoder takes the pretrained weights, so only the
    // head is new (random) and training would start from what BERT learned.
    auto bert_config = bert->config;
    bert_config.num_labels = 3;
    models::TransformerForSequenceClassification pretrained(bert_config);
    pretrained.encoder->load_state_dict(bert->model->state_dict());
    pretrained.eval();
    const auto tok = text::load_folder_tokenizer(bert->dir);
    const auto ids = tok->encode_plus(tutorial::kText).input_ids;
    const Tensor bert_input = from_vector(ids, {1, static_cast<int64_t>(ids.size())});
    Tensor bert_logits = pretrained.forward(bert_input);
    fmt::print("{} pretrained layers + a new head: logits {}\n", bert->config.num_hidden_layers,
               bert_logits.sizes());
    t.check(bert_logits.sizes() == Shape{1, 3},
            "the pretrained encoder with the head gives [1, 3]");
    t.check((pretrained.encoder->forward(bert_input) - bert->model->forward(bert_input))
                    .abs()
                    .max()
                    .item() == 0.0f,
            "its encoder computes what the pretrained one does");
  }

  t.section("Training a small encoder: which of a, b, c occurs most?");
  // The toy task "majority" (data/tasks.hpp): sequences over a..h, labelled by the most
  // frequent of a, b, c. Validation examples are never trained on.
  const auto examples = data::majority_examples((t.fast() ? 1500 : 6000) + 500, 7);
  const std::vector<data::LabeledText> valid(examples.begin(), examples.begin() + 500),
      train(examples.begin() + 500, examples.end());
  std::vector<std::string> texts;
  for (const auto& e : train) texts.push_back(e.text);
  // TextClassifier (inference/text_classifier.hpp) pairs a tokenizer with the model: it puts a
  // [BOS] token first (the [CLS] slot the head reads) and pads batches with their masks.
  training::TextClassifier classifier;
  classifier.tokenizer = std::make_shared<text::WordTokenizer>(text::WordTokenizer::train(texts));
  auto small = models::TransformerConfig::preset("tiny");
  small.vocab_size = classifier.tokenizer->vocab().size();
  small.intermediate_size = 128;
  small.max_position_embeddings = 32;
  small.num_labels = 3;
  small.final_layer_norm = true;
  classifier.model = std::make_shared<models::TransformerForSequenceClassification>(small);
  auto& model = *classifier.model;
  models::init_weights(model);
  std::vector<std::string> valid_texts;
  std::vector<int64_t> valid_labels;
  for (const auto& e : valid) valid_texts.push_back(e.text), valid_labels.push_back(e.label);
  const double before = classifier.accuracy(valid_texts, valid_labels);
  fmt::print("accuracy before training: {:.1f}% (chance: about 33%)\n", before);
  set_grad_enabled(true);

  // The Trainer (training/trainer.hpp) runs the loop every run here uses: loss, backward,
  // clipping, the optimizer step; an evaluation after each epoch.
  nn::AdamW opt(model.parameters(), {.lr = 1e-3});
  training::Trainer trainer(model, opt, nullptr, {.epochs = t.fast() ? 2 : 4, .clip = 0});
  const int64_t batch_size = 32;
  trainer.batches = [&](int64_t) {
    return static_cast<int64_t>((train.size() + batch_size - 1) / batch_size);
  };
  trainer.loss = [&](int64_t, int64_t b) {
    std::vector<std::string> texts_b;
    std::vector<int64_t> labels;
    for (size_t i = b * batch_size; i < std::min(train.size(), size_t((b + 1) * batch_size)); ++i)
      texts_b.push_back(train[i].text), labels.push_back(train[i].label);
    auto [ids, mask] = classifier.batch(texts_b);
    Tensor logits = model.forward(ids, mask);  // [B, 3]
    return training::BatchLoss{
        cross_entropy(logits, from_vector(labels, {static_cast<int64_t>(labels.size())})),
        ids.numel()};
  };
  trainer.evaluate = [&](bool) {
    return training::Metrics{{"accuracy", classifier.accuracy(valid_texts, valid_labels)}};
  };
  const auto result = trainer.fit();
  const double after = classifier.accuracy(valid_texts, valid_labels);
  t.check(after > before + 15.0 && after > 55.0 && result.step > 0,
          "training lifts accuracy well above chance");
  return t.finish();
}
