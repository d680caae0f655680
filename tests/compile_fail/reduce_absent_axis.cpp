// Reducing over an axis the tensor does not have.
#include "common.h"

void case_body(tempra::ExecContext& ctx, const tempra::Tensor<batch, in>& x) {
#ifdef TEMPRA_EXPECT_FAIL
  auto y = tempra::sum<cls>(ctx, x);
#else
  tempra::Tensor<batch> y = tempra::sum<in>(ctx, x);
#endif
  (void)y;
}
