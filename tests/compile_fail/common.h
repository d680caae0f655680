// tests/compile_fail/common.h: axes and a model shared by the compile-fail cases.
//
// Each case compiles twice: without TEMPRA_EXPECT_FAIL it must build (the control, proving the
// file is otherwise valid), and with it it must fail with the expected static_assert text and
// the offending axis named in the compiler's instantiation note (check_compile_fail.cmake).
#pragma once

#include "tempra/typed/ops.h"

TEMPRA_AXES(batch, in, h1, cls);
