// A tensor type that lists the same axis twice.
#include "common.h"

#ifdef TEMPRA_EXPECT_FAIL
tempra::Tensor<batch, h1, batch> bad;
#else
tempra::Tensor<batch, h1> good;
#endif
