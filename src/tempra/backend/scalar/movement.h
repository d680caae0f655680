// tempra/backend/scalar/movement.h: dtype-generic kernels that move or convert elements.
//
// Header templates, instantiated by the ops for whichever element types they dispatch on. They
// do no arithmetic worth vectorizing per backend, so both backends share them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "tempra/core/half.h"
#include "tempra/core/tensor_ref.h"
#include "tempra/core/thread_pool.h"

namespace tempra::scalar {

// Converts one element, as torch's .to(dtype): floats to integers truncate toward zero (values
// out of the target's range are the caller's problem, as in C++ and torch); anything to bool is
// "!= 0"; f16/bf16 go through f32 with round-to-nearest-even.
template <class To, class From>
To convert_element(From x) {
  if constexpr (std::is_same_v<To, From>) {
    return x;
  } else if constexpr (std::is_same_v<From, f16_t> || std::is_same_v<From, bf16_t>) {
    return convert_element<To>(to_f32(x));
  } else if constexpr (std::is_same_v<To, f16_t>) {
    return to_f16(static_cast<float>(x));
  } else if constexpr (std::is_same_v<To, bf16_t>) {
    return to_bf16(static_cast<float>(x));
  } else if constexpr (std::is_same_v<To, bool>) {
    return x != From(0);
  } else {
    return static_cast<To>(x);
  }
}

// dst = convert(src), element by element; same shape, any strides.
template <class To, class From>
void convert(TensorRef<const From> src, TensorRef<To> dst, ThreadPool& pool) {
  const int64_t n = dst.shape.size() ? dst.shape.back() : 1;
  const int64_t ss = src.strides.size() ? src.strides.back() : 0;
  const int64_t sd = dst.strides.size() ? dst.strides.back() : 0;
  pool.parallel_for(row_count(dst.shape), n >= 16384 ? 1 : 16384 / (n ? n : 1), [&](int64_t first, int64_t last) {
    for_each_row<2>(dst.shape, {&src.strides, &dst.strides}, first, last, [&](int64_t, auto off) {
      for (int64_t j = 0; j < n; ++j) dst.data[off[1] + j * sd] = convert_element<To>(src.data[off[0] + j * ss]);
    });
  });
}

// Every element of dst = value.
template <class T>
void fill(TensorRef<T> dst, T value) {
  const int64_t n = dst.shape.size() ? dst.shape.back() : 1;
  const int64_t sd = dst.strides.size() ? dst.strides.back() : 0;
  for_each_row<1>(dst.shape, {&dst.strides}, 0, row_count(dst.shape), [&](int64_t, auto off) {
    for (int64_t j = 0; j < n; ++j) dst.data[off[0] + j * sd] = value;
  });
}

// out[o, m, i] = in[o, index[m], i] over contiguous [outer, n, inner] -> [outer, m, inner].
// Indices are already checked to lie in [0, n).
template <class T>
void index_select(const T* in, int64_t outer, int64_t n, int64_t inner, const int64_t* index, int64_t m, T* out,
                  ThreadPool& pool) {
  pool.parallel_for(outer * m, 16384 / (inner ? inner : 1) + 1, [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      const int64_t o = r / m, row = index[r % m];
      const T* src = in + (o * n + row) * inner;
      T* dst = out + r * inner;
      for (int64_t i = 0; i < inner; ++i) dst[i] = src[i];
    }
  });
}

// torch.gather: out[..., j, ...] = in[..., index[..., j, ...], ...] along `axis`. `in` is
// strided, index and out share out's shape; indices are already checked.
template <class T>
void gather(TensorRef<const T> in, TensorRef<const int64_t> index, int axis, TensorRef<T> out, ThreadPool& pool) {
  const int rank = out.rank();
  const int64_t total = out.numel();
  pool.parallel_for(total, 16384, [&](int64_t first, int64_t last) {
    for (int64_t flat = first; flat < last; ++flat) {
      int64_t rest = flat, src = 0, idx = 0;
      for (int d = rank - 1; d >= 0; --d) {
        const int64_t i = rest % out.shape[d];
        rest /= out.shape[d];
        idx += i * index.strides[d];
        if (d != axis) src += i * in.strides[d];
      }
      src += index.data[idx] * in.strides[axis];
      out.data[flat] = in.data[src];
    }
  });
}

// The VJP of index_select: out[o, index[m], i] += g[o, m, i] over contiguous [outer, m, inner]
// -> [outer, n, inner] (out already zeroed). Threads split the (o, i) columns; each column sums
// its m rows in index order, so the result is the same bits for any thread count.
template <class T>
void index_add(const T* g, int64_t outer, int64_t m, int64_t inner, const int64_t* index, int64_t n, T* out,
               ThreadPool& pool) {
  pool.parallel_for(outer * inner, 1 + 16384 / (m ? m : 1), [&](int64_t first, int64_t last) {
    for (int64_t column = first; column < last;) {
      const int64_t o = column / inner, i0 = column % inner, i1 = std::min(inner, i0 + (last - column));
      for (int64_t r = 0; r < m; ++r) {
        const T* src = g + (o * m + r) * inner;
        T* dst = out + (o * n + index[r]) * inner;
        for (int64_t i = i0; i < i1; ++i) dst[i] += src[i];
      }
      column += i1 - i0;
    }
  });
}

// The VJP of gather: out[..., index[..., j, ...], ...] += g[..., j, ...] along `axis`; g and
// index share a shape (any strides), out is contiguous in the input's shape and zeroed. Each
// line along `axis` (fixed coordinates elsewhere) writes one line of out and sums in j order:
// deterministic for any thread count.
template <class T>
void gather_add(TensorRef<const T> g, TensorRef<const int64_t> index, int axis, TensorRef<T> out, ThreadPool& pool) {
  const int rank = g.rank();
  const int64_t len = g.shape[axis], lines = len ? g.numel() / len : 0;
  pool.parallel_for(lines, 1 + 16384 / (len ? len : 1), [&](int64_t first, int64_t last) {
    for (int64_t line = first; line < last; ++line) {
      int64_t rest = line, off_g = 0, off_i = 0, off_out = 0;
      for (int d = rank - 1; d >= 0; --d) {
        if (d == axis) continue;
        const int64_t c = rest % g.shape[d];
        rest /= g.shape[d];
        off_g += c * g.strides[d];
        off_i += c * index.strides[d];
        off_out += c * out.strides[d];
      }
      for (int64_t j = 0; j < len; ++j)
        out.data[off_out + index.data[off_i + j * index.strides[axis]] * out.strides[axis]] +=
            g.data[off_g + j * g.strides[axis]];
    }
  });
}

// tril (upper = false) keeps in[..., i, j] where j - i <= diagonal; triu keeps j - i >= diagonal;
// the rest become zero. out contiguous, in strided, rank >= 2.
template <class T>
void triangle(TensorRef<const T> in, int64_t diagonal, bool upper, TensorRef<T> out, ThreadPool& pool) {
  const int64_t rows = out.shape[out.rank() - 2], n = out.shape.back();
  const int64_t s_in = in.strides.back(), s_out = out.strides.back();
  pool.parallel_for(row_count(out.shape), 16384 / (n ? n : 1) + 1, [&](int64_t first, int64_t last) {
    for_each_row<2>(out.shape, {&in.strides, &out.strides}, first, last, [&](int64_t row, auto off) {
      const int64_t i = row % rows;
      for (int64_t j = 0; j < n; ++j) {
        const bool keep = upper ? j - i >= diagonal : j - i <= diagonal;
        out.data[off[1] + j * s_out] = keep ? in.data[off[0] + j * s_in] : T{};
      }
    });
  });
}

}  // namespace tempra::scalar
