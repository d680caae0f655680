// An einsum whose output names an axis neither operand has.
#include "common.h"

void case_body(tempra::ExecContext& ctx, const tempra::Tensor<batch, in>& x, const tempra::Tensor<h1, in>& w) {
#ifdef TEMPRA_EXPECT_FAIL
  auto y = tempra::einsum<batch, cls>(ctx, x, w);
#else
  tempra::Tensor<batch, h1> y = tempra::einsum<batch, h1>(ctx, x, w);
#endif
  (void)y;
}
