// tempra/ops/ops.h: the eager op library on untyped arrays.
//
// Every op is a free function taking the ExecContext first. It validates shapes and dtypes
// once (throwing tempra::Error that names the op and the shapes), allocates its output from the
// context's pool, and calls one unchecked kernel of the context's backend. Nothing is deferred:
// when the call returns, the result is computed.
#pragma once

#include "tempra/ops/creation.h"
#include "tempra/ops/elementwise.h"
#include "tempra/ops/linalg.h"
#include "tempra/ops/neural.h"
#include "tempra/ops/quantize.h"
#include "tempra/ops/reduce.h"
#include "tempra/ops/structure.h"
