// tempra/ag/custom_op.cpp: user-defined VJPs and recompute-in-backward blocks.
#include "tempra/ag/custom_op.h"

#include "tempra/ag/backward.h"

namespace tempra::ag {

Array custom_op(ExecContext& ctx, std::string name, const std::vector<Array>& inputs, const ForwardFn& forward,
                VjpFn vjp) {
  Array out;
  {
    NoGradGuard no_grad;
    out = forward(ctx, inputs).detach();
  }
  record_op(out, std::move(name), inputs, std::move(vjp));
  return out;
}

Array checkpoint(ExecContext& ctx, const ForwardFn& block, const std::vector<Array>& inputs) {
  std::vector<Array> saved;
  for (const Array& x : inputs) saved.push_back(x.detach());
  Array out;
  {
    NoGradGuard no_grad;
    out = block(ctx, saved).detach();
  }
  // Whether the block's output needs a gradient also depends on the parameters it captures,
  // which are invisible here: with grad mode on, always record. A block that depends on nothing
  // trainable returns no gradients when its node fires.
  if (!grad_mode_enabled()) return out;
  VjpFn vjp = [block, saved](ExecContext& c, const Array& g, const std::vector<bool>& needs) {
    std::vector<Array> xs = saved;  // constants, except fresh leaves where a gradient is wanted
    for (size_t i = 0; i < xs.size(); ++i)
      if (needs[i]) xs[i].set_requires_grad();
    Array y;
    {
      GradModeGuard record(true);  // the engine runs VJPs with recording off; the recompute records
      y = block(c, xs);
    }
    std::vector<Array> grads(xs.size());
    if (!y.requires_grad()) return grads;
    backward(c, y, g);
    for (size_t i = 0; i < xs.size(); ++i)
      if (needs[i]) grads[i] = xs[i].grad();
    return grads;
  };
  std::vector<std::shared_ptr<GradNode>> edges;
  for (const Array& x : inputs) edges.push_back(x.grad_node());
  out.set_grad_node(
      std::make_shared<GradNode>("checkpoint", std::move(edges), out.shape(), out.dtype(), std::move(vjp)));
  return out;
}

}  // namespace tempra::ag
