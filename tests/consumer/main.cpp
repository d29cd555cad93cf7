// Proves an installed anatomy can be found, compiled against and linked, layers included.
#include <iostream>
#include <models/models.hpp>

int main() {
  using namespace anatomy;
  auto config = models::TransformerConfig::preset("tiny");
  config.vocab_size = 50;
  config.max_position_embeddings = 8;
  models::TransformerForSequenceClassification model(config);
  nn::AdamW opt(model.parameters(), {.lr = 1e-2});
  Tensor loss = cross_entropy(model.forward(tensor({{1, 2, 3}})), tensor({1}));
  loss.backward();
  opt.step();
  std::cout << loss << "\n";
  return model.classifier->weight.grad().defined() ? 0 : 1;
}
