// Tutorial 00: tensors and autograd, a warm-up in micrograd's spirit.
//
// Before the chapter's Transformer, the machinery under it: a tensor remembers the ops that made
// it, and backward() walks that record in reverse, applying the chain rule. Everything in the
// later tutorials (attention, layer norm, training) rests on exactly this.
#include "autograd/autograd.hpp"
#include "tutorial.hpp"

using namespace anatomy;

int main(int argc, char** argv) {
  tutorial::Tutorial t(argc, argv, "00 - Tensors and autograd",
                       "A small expression, its gradients by backward(), a check against finite\n"
                       "differences, the same on the plain reference ops and on the fast kernels,\n"
                       "and the recorded graph as a picture.");
  manual_seed(42);

  t.section("A tensor, and one that requires grad");
  Tensor x = tensor({{1.0f, 2.0f}, {3.0f, 4.0f}});
  fmt::print("x = {}\nx.shape = {}\n\n", x, x.shape());
  Tensor w = tensor({{0.5f, -1.0f}, {2.0f, 0.25f}}).requires_grad_();
  w.set_name("w");
  fmt::print("w = {}\n", w);

  t.section("An expression builds a graph");
  // L = mean(tanh(x @ w) ** 2): a matmul, a nonlinearity, a power and a reduction.
  Tensor h = matmul(x, w);
  Tensor a = tanh(h);
  Tensor loss = pow(a, 2.0f).mean();
  fmt::print("h = x @ w = {}\n\na = tanh(h) = {}\n\nloss = mean(a ** 2) = {}\n", h, a, loss);
  fmt::print("\nEach result remembers its op: loss.grad_fn = {}, a.grad_fn = {}\n",
             loss.grad_fn()->name, a.grad_fn()->name);

  t.section("backward() applies the chain rule in reverse");
  loss.backward();
  fmt::print("dloss/dw = {}\n", w.grad());
  // By hand: dL/da = 2a/4, da/dh = 1 - a², dh/dw = xᵀ(.)
  Tensor by_hand;
  {
    NoGradGuard no_grad;
    Tensor da = a * 0.5f;
    Tensor dh = da * (1.0f - a * a);
    by_hand = matmul(x.t(), dh);
  }
  fmt::print("by hand:  xᵀ((a/2)(1 - a²)) = {}\n", by_hand);
  t.check(std::abs((w.grad() - by_hand).abs().max().item()) < 1e-6f,
          "backward() equals the chain rule worked by hand");

  t.section("Gradients accumulate until you clear them");
  pow(tanh(matmul(x, w)), 2.0f).mean().backward();
  fmt::print("after a second backward(), w.grad = {}  (twice the first)\n", w.grad());
  t.check(std::abs((w.grad() - by_hand * 2.0f).abs().max().item()) < 1e-6f,
          "a second backward() adds to .grad (+=)");
  w.zero_grad();
  fmt::print("after w.zero_grad(): w.grad is {}\n", w.grad().defined() ? "set" : "empty");

  t.section("gradcheck: backward() against finite differences");
  auto f = [&](const std::vector<Tensor>& in) { return pow(tanh(matmul(x, in[0])), 2.0f).mean(); };
  const GradcheckResult result = gradcheck(f, {w});
  fmt::print("gradcheck(mean(tanh(x @ w)²)): {} (largest error {:.2e})\n",
             result.ok ? "passed" : result.message, result.max_abs_error);
  t.check(result.ok, "analytic and numeric gradients agree");

  t.section("Two paths: the reference ops and the fast kernels");
  // Every op above is written plainly in autograd/ (matmul is three loops, tanh one); the fast
  // kernels in kernels/ compute the same with SIMD and threads, and take over by default.
  // ANATOMY_KERNELS=reference (or --kernels reference) runs the plain ops instead.
  fmt::print(
      "running on: {} kernels ({} ops have a fast kernel: matmul, softmax, layer_norm, ...)\n",
      kernels(), registered_kernels().size());
  const std::string path_before = kernels();
  auto loss_and_grad = [&](const char* path) {
    set_kernels(path);
    Tensor v = w.detach().clone().requires_grad_();
    Tensor l = pow(tanh(matmul(x, v)), 2.0f).mean();
    l.backward();
    return std::pair{l.item(), v.grad()};
  };
  const auto [ref_loss, ref_grad] = loss_and_grad("reference");
  const auto [fast_loss, fast_grad] = loss_and_grad("fast");
  set_kernels(path_before);
  fmt::print("reference: loss = {:.8f}, dloss/dw = {}\n", ref_loss, ref_grad);
  fmt::print("fast:      loss = {:.8f}, dloss/dw = {}\n", fast_loss, fast_grad);
  t.check(
      std::abs(ref_loss - fast_loss) < 1e-6f && (ref_grad - fast_grad).abs().max().item() < 1e-6f,
      "the reference ops and the fast kernels give the same loss and gradients");

  t.section("The graph, as Graphviz DOT");
  Tensor again = pow(tanh(matmul(x, w)), 2.0f).mean();
  const std::string dot = to_dot(again);
  fmt::print("{}", dot);
  const std::string path = t.output("00_graph.dot");
  save_dot(again, path);
  fmt::print("\nwritten to {}; render it with: dot -Tsvg {} -o graph.svg\n", path, path);
  t.check(
      dot.find("TanhBackward0") != std::string::npos && dot.find("w\\n[2, 2]") != std::string::npos,
      "the graph names each op and the leaf w");

  return t.finish();
}
