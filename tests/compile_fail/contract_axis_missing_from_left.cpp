// Contracting an axis the left operand lacks.
#include "common.h"

void case_body(tempra::ExecContext& ctx, const tempra::Tensor<batch, in>& x, const tempra::Tensor<h1, cls>& w) {
#ifdef TEMPRA_EXPECT_FAIL
  auto y = x.dot<cls>(ctx, w);  // x has no `cls`
#else
  auto y = x.dot<in>(ctx, tempra::Tensor<h1, in>{});
#endif
  (void)y;
  (void)w;
}
