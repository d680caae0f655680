// backward(ctx, loss) on a loss that still has an axis: it must be reduced to a Tensor<> first.
#include "common.h"

void case_body(tempra::ExecContext& ctx, const tempra::Tensor<batch, in>& x) {
#ifdef TEMPRA_EXPECT_FAIL
  tempra::backward(ctx, tempra::sum<in>(ctx, x));
#else
  tempra::backward(ctx, tempra::sum<batch>(ctx, tempra::sum<in>(ctx, x)));
#endif
}
