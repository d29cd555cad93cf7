#include "autograd/engine.hpp"

#include <fmt/format.h>

#include <unordered_set>
#include <utility>
#include <variant>

#include "autograd/anomaly.hpp"
#include "autograd/ops.hpp"
#include "autograd/storage.hpp"

namespace anatomy {

static thread_local bool grad_enabled = true;
bool is_grad_enabled() { return grad_enabled; }
void set_grad_enabled(bool enabled) { grad_enabled = enabled; }

Node::~Node() {
  // Take the edges first, then drop the closure: the closure may hold the very tensors whose
  // producers are on `pending`, so releasing it only lowers their counts. Each node taken from
  // `pending` as sole owner is emptied the same way before it dies, so no destructor nests.
  std::vector<std::shared_ptr<Node>> pending;
  auto empty = [&pending](Node& n) {
    for (auto& e : n.edges)
      if (e.node) pending.push_back(std::move(e.node));
    n.backward = nullptr;
  };
  empty(*this);
  while (!pending.empty()) {
    std::shared_ptr<Node> n = std::move(pending.back());
    pending.pop_back();
    if (n.use_count() == 1) empty(*n);
  }
}

Tensor record(Tensor output, std::string name, std::vector<Tensor> inputs, BackwardFn backward) {
  if (is_anomaly_enabled())
    detail::check_anomaly(
        output, fmt::format("the output of {} ({})", name.substr(0, name.rfind("Backward")), name),
        inputs, {}, /*allow_negative_inf=*/true);
  if (!grad_enabled) return output;
  bool any = false;
  for (const auto& in : inputs) any = any || (in.defined() && in.requires_grad());
  if (!any) return output;
  auto node = std::make_shared<Node>();
  node->name = std::move(name);
  for (const auto& in : inputs) {
    Edge e;
    if (in.defined() && in.requires_grad()) {
      e.shape = in.shape();
      if (in.grad_fn())
        e.node = in.grad_fn();
      else
        e.leaf = in.impl_ptr();
    }
    node->edges.push_back(std::move(e));
  }
  node->backward = std::move(backward);
  node->output_shape = output.shape();
  output.impl()->requires_grad = true;
  output.impl()->grad_fn = std::move(node);
  return output;
}

// Nodes reachable from `root`, ordered so that every node comes before the nodes it feeds.
// Iterative DFS: a deep graph (a long training loop unrolled by mistake) must not blow the stack.
static std::vector<std::shared_ptr<Node>> topological_order(const std::shared_ptr<Node>& root) {
  std::vector<std::shared_ptr<Node>> order;
  std::unordered_set<Node*> visited{root.get()};
  std::vector<std::pair<std::shared_ptr<Node>, size_t>> stack{{root, 0}};
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next < node->edges.size()) {
      const std::shared_ptr<Node>& child = node->edges[next++].node;
      if (child && visited.insert(child.get()).second) stack.push_back({child, 0});
    } else {
      order.push_back(node);
      stack.pop_back();
    }
  }
  // `order` is post-order (inputs first); reverse it so outputs come first.
  return {order.rbegin(), order.rend()};
}

// True when nothing but `g` holds its tensor and its storage, and g covers all of that storage
// in order: the leaf can then keep it as its gradient without a copy, as PyTorch's
// AccumulateGrad steals a gradient no one else references.
static bool sole_owner(const Tensor& g) {
  const auto& impl = g.impl_ptr();
  if (impl.use_count() != 1 || impl->storage.use_count() != 1 || impl->grad_fn || impl->grad)
    return false;
  const auto size = std::visit([](const auto& b) { return static_cast<int64_t>(b.size()); },
                               impl->storage->buffer);
  return impl->offset == 0 && size == g.numel() && g.is_contiguous();
}

static void accumulate_leaf(TensorImpl* impl, const Tensor& g) {
  if (!impl->grad) {
    if (sole_owner(g)) {
      impl->grad = g.impl_ptr();
      return;
    }
    // Own the buffer: `g` may be shared with another input's gradient (add returns one tensor
    // for both), and the leaf's grad is later updated in place.
    Tensor owned = empty(g.shape());
    owned.copy_(g);
    impl->grad = owned.impl_ptr();
  } else {
    Tensor(impl->grad).add_(g);
  }
}

// The gradient backward() starts from: `gradient`, checked against the root, or 1 for a scalar.
static Tensor seed_gradient(const Tensor& root, const Tensor& gradient) {
  if (!root.requires_grad())
    throw Error(
        "backward: element 0 of tensors does not require grad and does not have a "
        "grad_fn");
  if (!gradient.defined() && root.numel() != 1)
    throw Error(
        fmt::format("backward: grad can be implicitly created only for scalar outputs "
                    "(this tensor has shape {}); pass a gradient",
                    root.shape().str()));
  if (gradient.defined() && gradient.shape() != root.shape())
    throw Error(
        fmt::format("backward: Mismatch in shape: grad_output[0] has a shape of {} and "
                    "output[0] has a shape of {}",
                    gradient.shape().str(), root.shape().str()));
  return gradient.defined() ? gradient : ones(root.shape());
}

// A view's gradient g (Node::input_part), added into its part of the producer's buffer.
// DetectAnomaly loses nothing: the gradients summed into g were each checked when computed.
static void add_view_gradient(Node& node, const Tensor& g) {
  Node* producer = node.edges[0].node.get();
  if (!producer->grad_buffer.defined())
    producer->grad_buffer = zeros(node.edges[0].shape);
  else if (!producer->grad_buffer_owned)  // it may be another node's gradient as well
    producer->grad_buffer = producer->grad_buffer.clone();
  producer->grad_buffer_owned = true;
  node.input_part(producer->grad_buffer).add_(g);
}

// The gradients node.backward returned, checked, into each input's leaf or producer's buffer.
static void send_gradients(const std::shared_ptr<Node>& node, const std::vector<Tensor>& grads) {
  if (grads.size() != node->edges.size())
    throw Error(fmt::format("backward: {} returned {} gradients for {} inputs", node->name,
                            grads.size(), node->edges.size()));
  for (size_t i = 0; i < grads.size(); ++i) {
    const Edge& e = node->edges[i];
    const Tensor& gi = grads[i];
    if (!e.live() || !gi.defined()) continue;
    if (is_anomaly_enabled())
      detail::check_anomaly(
          gi, fmt::format("the gradient that {} computed for its input {}", node->name, i), {},
          {node}, /*allow_negative_inf=*/false);
    if (gi.shape() != e.shape)
      throw Error(
          fmt::format("backward: {} returned a gradient of shape {} for input {} of shape {}",
                      node->name, gi.shape().str(), i, e.shape.str()));
    if (e.leaf) {
      accumulate_leaf(e.leaf.get(), gi);
    } else {
      Node* producer = e.node.get();
      producer->grad_buffer = producer->grad_buffer.defined() ? add(producer->grad_buffer, gi) : gi;
      producer->grad_buffer_owned = false;
    }
  }
}

void run_backward(const Tensor& root, const Tensor& gradient, bool retain_graph) {
  Tensor seed = seed_gradient(root, gradient);
  NoGradGuard no_grad;  // gradients are plain values: no graph of the backward pass
  if (root.is_leaf()) {
    accumulate_leaf(root.impl(), seed);
    return;
  }
  const auto& root_node = root.grad_fn();
  root_node->grad_buffer = seed;
  for (const auto& node : topological_order(root_node)) {
    if (node->released)
      throw Error(fmt::format(
          "backward: Trying to backward through the graph a second time (or directly access saved "
          "tensors after they have already been freed) at {}. Specify retain_graph=true if you "
          "need to backward through the graph a second time.",
          node->name));
    const Tensor g = std::exchange(node->grad_buffer, Tensor());
    node->grad_buffer_owned = false;
    if (!g.defined()) continue;  // no gradient reached this node
    if (node->input_part && node->edges[0].node)
      add_view_gradient(*node, g);
    else
      send_gradients(node, node->backward(g));
    if (!retain_graph) {
      // Free what the closure saved; the edges stay, so the graph can still be drawn.
      node->backward = nullptr;
      node->released = true;
    }
  }
}

}  // namespace anatomy
