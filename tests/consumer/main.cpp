// Proves an installed anatomy can be found, compiled against and linked.
#include <autograd/autograd.hpp>
#include <iostream>

int main() {
  anatomy::Tensor x = anatomy::tensor({1.0f, 2.0f, 3.0f}).requires_grad_();
  anatomy::Tensor y = anatomy::softmax(x, 0).max();
  y.backward();
  std::cout << y << "\n" << x.grad() << "\n";
  return x.grad().defined() ? 0 : 1;
}
