// Proves an installed anatomy can be found, compiled against and linked.
#include <iostream>
#include <nn/nn.hpp>

int main() {
  using namespace anatomy;
  auto model = std::make_shared<nn::Linear>(3, 2);
  nn::AdamW opt(model->parameters(), {.lr = 1e-2});
  Tensor loss = cross_entropy(model->forward(tensor({{1.0f, 2.0f, 3.0f}})), tensor({1}));
  loss.backward();
  opt.step();
  std::cout << *model << "\n" << loss << "\n";
  return model->weight.grad().defined() ? 0 : 1;
}
