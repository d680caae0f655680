// tempra/core/grad_node.h: the autograd graph, held by the values themselves.
//
// There is no tape and no graph object. An Array that requires a gradient holds a GradNode:
//   - a leaf node for a parameter (Array::set_requires_grad), which accumulates `.grad`;
//   - an op node for a result computed from such arrays: the op's name, the nodes of its
//     differentiable inputs (the edges backward walks), and its vector-Jacobian product (VJP),
//     which maps the gradient of the result to one gradient per input and owns whatever the op
//     saved for it (inputs, detached outputs, masks).
// ag::backward (tempra/ag/backward.h) discovers the graph by walking `inputs` from the loss,
// counts each node's consumers, and fires a node's VJP once all of them have contributed. Its
// bookkeeping is local to the call, so a VJP may itself run a backward pass (checkpointing).
//
// Who records: every op of the op library (tempra/ops, through ops/record.h) and every view of
// core's Array (a generic strided scatter, view_vjp below). Recording happens only when grad
// mode is on (the default; NoGradGuard turns it off for this thread) and some input requires
// a gradient: inference pays one pointer test per input and nothing else.
//
// Ownership: a node is shared by the arrays it produced and by its consumers' nodes; the graph
// lives exactly as long as some value still reaches it. A VJP must never keep its own output
// with its node attached (that is a cycle and a leak): it saves `out.detach()`.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tempra/core/array.h"

namespace tempra {

// Grad mode is per thread, like the ops a thread runs. On by default.
bool grad_mode_enabled();

// Sets this thread's grad mode while in scope and restores the previous one after.
class GradModeGuard {
 public:
  explicit GradModeGuard(bool enabled);
  ~GradModeGuard();
  GradModeGuard(const GradModeGuard&) = delete;
  GradModeGuard& operator=(const GradModeGuard&) = delete;

 private:
  bool previous_;
};

// Recording off while in scope: optimizer updates, evaluation, and the VJPs themselves.
class NoGradGuard : public GradModeGuard {
 public:
  NoGradGuard() : GradModeGuard(false) {}
};

// Whether an op with these inputs records a node: grad mode is on and one of them requires a
// gradient.
bool any_requires_grad(std::initializer_list<const Array*> inputs);
bool any_requires_grad(const std::vector<Array>& inputs);

// The gradients of an op's inputs given the gradient of its result. `needs[i]` says whether
// input i wants one; an entry may be left empty (an undefined Array) where it does not, or
// where the input is not differentiable (integer indices).
using VjpFn = std::function<std::vector<Array>(ExecContext& ctx, const Array& grad_out, const std::vector<bool>& needs)>;

class GradNode {
 public:
  // An op node: `inputs` holds one entry per input of the op (null where the input needs no
  // gradient); `shape`/`dtype` describe the result, which the gradient arriving here matches.
  GradNode(std::string name, std::vector<std::shared_ptr<GradNode>> inputs, Dims shape, DType dtype, VjpFn vjp);
  // A leaf: a parameter of the given shape and dtype.
  static std::shared_ptr<GradNode> leaf(Dims shape, DType dtype);

  const std::string& name() const { return name_; }
  bool is_leaf() const { return leaf_; }
  const std::vector<std::shared_ptr<GradNode>>& inputs() const { return inputs_; }
  const Dims& shape() const { return shape_; }
  DType dtype() const { return dtype_; }

  // Runs the VJP. Throws if this node's saved state was already released by a backward pass.
  std::vector<Array> vjp(ExecContext& ctx, const Array& grad_out, const std::vector<bool>& needs);
  // Frees what the VJP saved; a later vjp() is an error naming the op (a graph is used once).
  void release();
  bool released() const { return released_; }

  // A leaf's accumulated gradient (empty until a backward pass reaches it).
  Array grad;

 private:
  GradNode(std::string name, Dims shape, DType dtype);

  std::string name_;
  std::vector<std::shared_ptr<GradNode>> inputs_;
  Dims shape_;
  DType dtype_;
  VjpFn vjp_;
  bool leaf_ = false;
  bool released_ = false;
};

// Attaches to `out` a node named `name` over `inputs` (null edges for those that need no
// gradient) unconditionally: for an op that checked any_requires_grad before running its
// internals on detached inputs.
void attach_grad_node(Array& out, std::string name, const std::vector<Array>& inputs, VjpFn vjp);

// Attaches to `out` a node named `name` over `inputs` with the given VJP, if any input requires
// a gradient and grad mode is on; otherwise does nothing. The op-library entry point.
void record_op(Array& out, std::string name, const std::vector<Array>& inputs, VjpFn vjp);

}  // namespace tempra
