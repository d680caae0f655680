// tempra/ag/custom_op.h: define an op with its own backward, and checkpoint a block.
//
// custom_op(ctx, name, inputs, forward, vjp): runs forward(ctx, inputs) with recording off (its
// internals leave no graph) and, if an input requires a gradient, attaches one node named
// `name` whose VJP is `vjp` (core's VjpFn: one gradient per input, each the input's shape and
// dtype, empty where needs[i] is false). The same mechanism every built-in op uses.
//
// checkpoint(ctx, block, inputs): activation checkpointing. Runs block without recording and
// keeps only the inputs; the backward pass reruns block with recording on and back-propagates
// through that fresh graph. Parameters the block captures (leaves it closes over) receive their
// gradients during that inner pass. Gradients are bitwise equal to running block directly
// (tests/ag/checkpoint_test.cpp), because the recomputed graph has the same shape and so the
// same fixed summation order. block must be deterministic (dropout draws from the counter RNG).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tempra/core/grad_node.h"

namespace tempra::ag {

using ForwardFn = std::function<Array(ExecContext&, const std::vector<Array>&)>;

Array custom_op(ExecContext& ctx, std::string name, const std::vector<Array>& inputs, const ForwardFn& forward,
                VjpFn vjp);

Array checkpoint(ExecContext& ctx, const ForwardFn& block, const std::vector<Array>& inputs);

}  // namespace tempra::ag
