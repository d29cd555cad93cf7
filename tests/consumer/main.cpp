// Proves an installed anatomy can be found, compiled against and linked, layers included.
#include <iostream>
#include <models/models.hpp>

int main() {
  using namespace anatomy;
  models::TransformerConfig config;
  config.vocab_size = 50;
  config.hidden_size = 16;
  config.num_attention_heads = 2;
  config.num_hidden_layers = 1;
  config.intermediate_size = 32;
  config.max_position_embeddings = 8;
  models::TransformerForSequenceClassification model(config);
  nn::AdamW opt(model.parameters(), {.lr = 1e-2});
  Tensor loss = cross_entropy(model.forward(tensor({{1, 2, 3}})), tensor({1}));
  loss.backward();
  opt.step();
  std::cout << loss << "\n";
  return model.classifier->weight.grad().defined() ? 0 : 1;
}
