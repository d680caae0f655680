// tempra/core/tensor_ref.h: the unchecked view a kernel works on, and the strided walk.
//
// A TensorRef is a typed pointer plus shape and element strides: no ownership, no checks. An op
// builds it after validating its inputs; a kernel loops over it. for_each_row() walks every
// index of all but the innermost axis, handing the kernel the offsets of that row in each
// operand, so elementwise kernels stay plain loops over one contiguous-or-strided row.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "tempra/core/dims.h"

namespace tempra {

template <class T>
struct TensorRef {
  T* data = nullptr;
  Dims shape;
  Dims strides;

  int rank() const { return shape.size(); }
  int64_t numel() const { return shape.product(); }
};

// Number of rows (product of all extents but the last; 1 for rank 0 and 1).
inline int64_t row_count(const Dims& shape) {
  int64_t rows = 1;
  for (int i = 0; i + 1 < shape.size(); ++i) rows *= shape[i];
  return rows;
}

// The innermost extent (1 for rank 0) and an operand's innermost stride (0 for rank 0): what a
// row kernel loops over.
inline int64_t inner_extent(const Dims& shape) { return shape.size() ? shape.back() : 1; }
inline int64_t inner_stride(const Dims& strides) { return strides.size() ? strides.back() : 0; }

// For rows [first, last) of `shape` (in row-major order), calls fn(row, offsets) where
// offsets[k] is the element offset of that row's first element in operand k, whose strides
// are strides[k]. The innermost axis is left to fn.
template <size_t N, class Fn>
void for_each_row(const Dims& shape, const std::array<const Dims*, N>& strides, int64_t first, int64_t last,
                  Fn&& fn) {
  if (first >= last) return;  // nothing to visit; also keeps an empty outer axis out of the % below
  const int outer = shape.size() - 1;
  if (outer <= 0) {
    if (first < last && first == 0) fn(int64_t{0}, std::array<int64_t, N>{});
    return;
  }
  // Decompose `first` into an index over the outer axes, then step like an odometer.
  Dims index = Dims::filled(outer, 0);
  int64_t rest = first;
  for (int d = outer - 1; d >= 0; --d) {
    index[d] = rest % shape[d];
    rest /= shape[d];
  }
  std::array<int64_t, N> offsets{};
  for (size_t k = 0; k < N; ++k)
    for (int d = 0; d < outer; ++d) offsets[k] += index[d] * (*strides[k])[d];
  for (int64_t row = first; row < last; ++row) {
    fn(row, offsets);
    for (int d = outer - 1; d >= 0; --d) {
      ++index[d];
      for (size_t k = 0; k < N; ++k) offsets[k] += (*strides[k])[d];
      if (index[d] < shape[d]) break;
      for (size_t k = 0; k < N; ++k) offsets[k] -= index[d] * (*strides[k])[d];
      index[d] = 0;
    }
  }
}

}  // namespace tempra
