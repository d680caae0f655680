// Contracting an axis the right operand lacks.
#include "common.h"

void case_body(tempra::ExecContext& ctx, const tempra::Tensor<batch, in>& x, const tempra::Tensor<h1, cls>& w) {
#ifdef TEMPRA_EXPECT_FAIL
  auto y = x.dot<in>(ctx, w);  // w has no `in`
#else
  auto y = x.dot<batch>(ctx, tempra::Tensor<batch, h1>{});
#endif
  (void)y;
  (void)w;
}
