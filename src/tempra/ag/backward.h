// tempra/ag/backward.h: reverse-mode differentiation over the graph the values hold.
//
// Contract:
//   backward(ctx, root) adds d(root)/d(leaf) to the .grad of every leaf that requires a gradient
//   and that root depends on (tempra/core/grad_node.h). root must hold one element, or `seed`
//   (the gradient of some scalar with respect to root, root's shape and dtype) must be given.
//
// How it runs (no tape, no engine object):
//   1. Discovery: a depth-first walk from root over each node's `inputs` counts, per node, the
//      consumer edges that will send it a contribution, and gives each edge a fixed slot
//      (in walk order, which depends only on the graph, never on timing).
//   2. Firing: a node is ready when every consumer has written its slot. Its gradient is the sum
//      of its slots in slot order; an op node then runs its VJP (with grad mode off) and writes
//      into its inputs' slots, decrementing their pending counters; a leaf adds the sum to its
//      .grad. Each fired node releases what its VJP saved.
//   3. Nodes fire one at a time, in the order they became ready, each with the whole thread pool
//      for its kernels. (Running the nodes ready at once one per worker was tried: that paired a
//      linear layer's input gradient with a cheap elementwise node, so the GEMM ran on one worker
//      while the other idled; firing in turn made a Qwen3 LoRA step 1.2x faster and a small
//      transformer block's step 1.1x.)
//   Determinism: every sum has a fixed order (slot order, and kernels that are bitwise identical
//   for any thread count), so gradients are bitwise identical for 1 and N threads.
//
// A graph is used once: a second backward through a node whose VJP already ran throws, naming
// the op. Leaves keep accumulating across calls until zero_grad().
#pragma once

#include "tempra/core/array.h"

namespace tempra::ag {

void backward(ExecContext& ctx, const Array& root, const Array& seed = {});

}  // namespace tempra::ag
