// tempra/ag/backward.cpp: discovery with fixed slots, then firing in waves (see backward.h).
#include "tempra/ag/backward.h"

#include <memory>
#include <unordered_map>
#include <vector>

#include "tempra/core/grad_node.h"
#include "tempra/ops/creation.h"
#include "tempra/ops/elementwise.h"

namespace tempra::ag {
namespace {

struct NodeState {
  GradNode* node = nullptr;
  int pending = 0;                 // consumer edges that have not contributed yet
  std::vector<Array> slots;        // one contribution per consumer edge, in slot order
  std::vector<int> input_slot;     // for each input edge of this node: its slot in the input
  std::vector<int> input_state;    // for each input edge: the input's index in `states`
};

class Graph {
 public:
  Graph(const std::shared_ptr<GradNode>& root) {
    // Iterative DFS; a node's input edges are numbered when the node is first expanded, in
    // input order, so slot numbers depend only on the graph's shape.
    std::vector<GradNode*> stack{root.get()};
    index_of(root.get());
    while (!stack.empty()) {
      GradNode* node = stack.back();
      stack.pop_back();
      const int self = index_.at(node);
      if (node->is_leaf()) continue;
      check(!node->released(), "backward", "the graph through '", node->name(),
            "' was already used by a backward pass, which freed what it saved; run the forward pass again "
            "(one backward per forward)");
      const auto& inputs = node->inputs();
      std::vector<int> slot(inputs.size(), -1), state(inputs.size(), -1);
      for (size_t i = 0; i < inputs.size(); ++i) {
        GradNode* in = inputs[i].get();
        if (!in) continue;
        const bool fresh = !index_.count(in);
        const int k = index_of(in);
        state[i] = k;
        slot[i] = counts_[k]++;
        if (fresh) stack.push_back(in);
      }
      edges_[self] = {std::move(slot), std::move(state)};
    }
    states_ = std::make_unique<NodeState[]>(order_.size());
    for (size_t k = 0; k < order_.size(); ++k) {
      NodeState& s = states_[k];
      s.node = order_[k];
      s.pending = counts_[k];
      s.slots.resize(counts_[k]);
      s.input_slot = std::move(edges_[k].first);
      s.input_state = std::move(edges_[k].second);
    }
  }

  NodeState& state(int k) { return states_[k]; }

 private:
  int index_of(GradNode* node) {
    auto [it, inserted] = index_.try_emplace(node, static_cast<int>(order_.size()));
    if (inserted) {
      order_.push_back(node);
      counts_.push_back(0);
      edges_.emplace_back();
    }
    return it->second;
  }

  std::unordered_map<GradNode*, int> index_;
  std::vector<GradNode*> order_;
  std::vector<int> counts_;
  std::vector<std::pair<std::vector<int>, std::vector<int>>> edges_;
  std::unique_ptr<NodeState[]> states_;
};

// The gradient arriving at a node: its contributions summed in slot order (empty if none came).
Array sum_slots(ExecContext& ctx, std::vector<Array>& slots) {
  Array total;
  for (Array& c : slots) {
    if (!c.defined()) continue;
    total = total.defined() ? add(ctx, total, c) : c;
    c = Array{};
  }
  return total;
}

// Fires one ready node; appends the indices of inputs it made ready to `ready`.
void fire(ExecContext& ctx, Graph& graph, int k, std::vector<int>& ready) {
  NodeState& s = graph.state(k);
  GradNode& node = *s.node;
  Array g = sum_slots(ctx, s.slots);
  if (node.is_leaf()) {
    if (g.defined()) node.grad = node.grad.defined() ? add(ctx, node.grad, g) : copy(ctx, g);
    return;
  }
  std::vector<Array> grads;
  if (g.defined()) {
    std::vector<bool> needs(node.inputs().size());
    for (size_t i = 0; i < needs.size(); ++i) needs[i] = node.inputs()[i] != nullptr;
    grads = node.vjp(ctx, g, needs);
    check(grads.size() == needs.size(), "backward", "the VJP of '", node.name(), "' returned ", grads.size(),
          " gradients for ", needs.size(), " inputs");
  }
  node.release();
  for (size_t i = 0; i < s.input_state.size(); ++i) {
    const int in = s.input_state[i];
    if (in < 0) continue;
    NodeState& target = graph.state(in);
    if (i < grads.size() && grads[i].defined()) {
      const Array& gi = grads[i];
      check(gi.shape() == target.node->shape() && gi.dtype() == target.node->dtype(), "backward", "the VJP of '",
            node.name(), "' gave input ", i, " a gradient ", gi.dtype().name(), " ", gi.shape(), " for a value ",
            target.node->dtype().name(), " ", target.node->shape());
      target.slots[s.input_slot[i]] = gi.detach();
    }
    if (--target.pending == 0) ready.push_back(in);
  }
}

}  // namespace

void backward(ExecContext& ctx, const Array& root, const Array& seed) {
  check(root.defined(), "backward", "the root is an empty array");
  check(root.requires_grad(), "backward", "the root (shape ", root.shape(),
        ") does not require a gradient: no input of the ops that made it requires one");
  Array g = seed;
  if (g.defined()) {
    check(g.shape() == root.shape() && g.dtype() == root.dtype(), "backward", "seed ", g.dtype().name(), " ",
          g.shape(), " does not match the root ", root.dtype().name(), " ", root.shape());
  } else {
    check(root.numel() == 1, "backward", "the root has shape ", root.shape(),
          "; give a seed gradient for a root with more than one element");
    g = full(ctx, root.shape(), 1.0, root.dtype());
  }
  NoGradGuard no_grad;
  Graph graph(root.grad_node());
  graph.state(0).slots.assign(1, g.detach());

  // First in, first fired: fire appends the nodes it makes ready.
  std::vector<int> ready{0};
  for (size_t i = 0; i < ready.size(); ++i) fire(ctx, graph, ready[i], ready);
}

}  // namespace tempra::ag
