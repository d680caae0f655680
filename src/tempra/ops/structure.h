// tempra/ops/structure.h: ops that rearrange, select or assemble elements.
//
// Contract: these work on every plain dtype (not only floats). split returns views; the others
// return new contiguous arrays. Index arrays are i32 or i64; an index out of range is an error
// naming the op, the index value and the shape it indexes.
//
// Gradients (structure.cpp): float inputs get them through every op here; index arrays never
// do. gather/index_select/embedding scatter-add into zeros of the input's shape, summing
// repeated indices in index order (the same bits for any thread count).
#pragma once

#include <utility>
#include <vector>

#include "tempra/core/array.h"

namespace tempra {

Array concat(ExecContext& ctx, const std::vector<Array>& parts, int axis);
Array stack(ExecContext& ctx, const std::vector<Array>& parts, int axis);
std::vector<Array> split(const Array& x, int axis, const std::vector<int64_t>& sizes);

// torch.gather: out[i][j][k] = x[i][index[i][j][k]][k] for axis 1; index has x's rank and,
// off the axis, extents no larger than x's.
Array gather(ExecContext& ctx, const Array& x, int axis, const Array& index);
// Rows of x along `axis` picked by a 1-D index.
Array index_select(ExecContext& ctx, const Array& x, int axis, const Array& index);
// table [vocab, dim] looked up by ids of any shape: [ids..., dim]. A block-quantized table
// (Q8_0, Q4_K, ... as model files store token embeddings) gives f32 rows: only the selected
// rows are decoded, with the format's reference decoder.
Array embedding(ExecContext& ctx, const Array& table, const Array& ids);

// Pads every axis by (before, after) elements of `value`; one pair per axis, outermost first.
Array pad(ExecContext& ctx, const Array& x, const std::vector<std::pair<int64_t, int64_t>>& pads, double value = 0.0);
// Lower / upper triangle of the last two axes; diagonal 0 is the main diagonal, > 0 above it.
Array tril(ExecContext& ctx, const Array& x, int64_t diagonal = 0);
Array triu(ExecContext& ctx, const Array& x, int64_t diagonal = 0);

}  // namespace tempra
