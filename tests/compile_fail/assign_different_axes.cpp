// Assigning a Tensor<batch, in> to a Tensor<in, batch>: same rank, different axes.
#include "common.h"

void case_body(const tempra::Tensor<batch, in>& x) {
#ifdef TEMPRA_EXPECT_FAIL
  tempra::Tensor<in, batch> y = x;
#else
  tempra::Tensor<in, batch> y = x.permute<in, batch>();
#endif
  (void)y;
}
