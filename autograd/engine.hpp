// The autograd engine: the recorded graph and the reverse walk over it.
//
// Every differentiable op computes its result and then calls record(): if grad mode is on and an
// input requires a gradient, the result gets a Node holding the inputs and a closure that maps
// dL/d(output) to dL/d(each input). backward() sorts the nodes topologically and walks them in
// reverse, adding (+=) each input's gradient into its leaf's .grad or its producer's buffer.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "autograd/tensor.hpp"

namespace anatomy {

// Maps dL/d(output) to dL/d(input) for every input (an undefined Tensor where none flows). Each
// gradient must have its input's shape: ops that broadcast undo it with sum_to().
using BackwardFn = std::function<std::vector<Tensor>(const Tensor& grad_output)>;

// Where an input's gradient goes: into the node that produced it, or into a leaf's .grad.
// Edges point at nodes, not tensors, so an intermediate result is freed as soon as nothing
// (a closure that saved it, a user's handle) holds it.
struct Edge {
  std::shared_ptr<Node> node;        // the producer of a non-leaf input
  std::shared_ptr<TensorImpl> leaf;  // a leaf input that requires grad
  Shape shape;                       // the input's shape, to check gradients against
  bool live() const { return node || leaf; }
};

struct Node {
  std::string name;         // PyTorch's name for the op's backward, e.g. "SoftmaxBackward0"
  std::vector<Edge> edges;  // one per input; an empty edge where no gradient is needed
  BackwardFn backward;      // with what it saved; freed after backward() unless retain_graph
  Shape output_shape;
  bool released = false;
  Tensor grad_buffer;              // dL/d(output), summed over all uses during one backward()
  bool grad_buffer_owned = false;  // the engine made grad_buffer itself: it may add into it
  // For a view that picks part of its one input (select, slice): that part of a tensor shaped
  // like the input. The engine then adds the gradient into that part of the producer's buffer
  // instead of calling `backward`, which would build a zero tensor of the input's size for
  // every view: q, k and v picked from one projection cost one zero tensor, not three and two
  // additions (what `backward` computes is the same).
  std::function<Tensor(const Tensor&)> input_part;
  // Frees the graph behind this node iteratively: a chain of 100,000 ops would otherwise be
  // destroyed one nested destructor per node and overflow the stack (as PyTorch's delete queue).
  ~Node();
};

// Attaches history to `output` when grad mode is on and any input requires a gradient; returns
// `output` either way. The closure should capture what it needs by value; to use the op's own
// output, capture output.detach() (capturing `output` itself would make a reference cycle).
Tensor record(Tensor output, std::string name, std::vector<Tensor> inputs, BackwardFn backward);

// Runs the backward pass from `root` (what Tensor::backward calls).
void run_backward(const Tensor& root, const Tensor& gradient, bool retain_graph);

// Grad mode: on by default; NoGradGuard turns it off for a scope (PyTorch's torch.no_grad()).
bool is_grad_enabled();
void set_grad_enabled(bool enabled);
class NoGradGuard {
 public:
  NoGradGuard() : previous_(is_grad_enabled()) { set_grad_enabled(false); }
  ~NoGradGuard() { set_grad_enabled(previous_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace anatomy
