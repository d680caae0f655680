// tempra/core/array.h: the untyped tensor.
//
// An Array is a dtype, a shape, element strides and an offset into a refcounted Storage. Its
// rank is data, not type: file loaders and generic code use it directly, and the named-axis
// Tensor<Axes...> (tempra/typed) is a zero-cost wrapper around one.
//
// Views share storage and keep it alive: slice/narrow, select, permute/transpose, reshape (of a
// contiguous array), broadcast_to (zero strides), squeeze/unsqueeze cost no copy. Copies are ops
// (tempra::contiguous, tempra::copy in tempra/ops) because they run a kernel. Every view checks
// its arguments and throws tempra::Error naming the view and the shape.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "tempra/core/dims.h"
#include "tempra/core/dtype.h"
#include "tempra/core/exec_context.h"
#include "tempra/core/storage.h"
#include "tempra/core/tensor_ref.h"

namespace tempra {

class GradNode;  // tempra/core/grad_node.h

class Array {
 public:
  Array() = default;  // an empty handle: defined() is false

  // A fresh contiguous array from the context's buffer pool; contents unspecified.
  static Array empty(ExecContext& ctx, const Dims& shape, DType dtype);
  // A fresh contiguous array filled with zeros.
  static Array zeros(ExecContext& ctx, const Dims& shape, DType dtype);
  // A contiguous array holding a copy of `values` (numel must equal values.size()).
  template <class T>
  static Array from_values(ExecContext& ctx, const Dims& shape, std::span<const T> values);
  template <class T>
  static Array from_values(ExecContext& ctx, const Dims& shape, std::initializer_list<T> values) {
    return from_values<T>(ctx, shape, std::span<const T>(values.begin(), values.size()));
  }
  // Wraps existing storage (file loaders): the caller vouches that shape/strides fit in it.
  Array(std::shared_ptr<Storage> storage, DType dtype, const Dims& shape, const Dims& strides, int64_t offset);

  bool defined() const { return storage_ != nullptr; }
  DType dtype() const { return dtype_; }
  const Dims& shape() const { return shape_; }
  const Dims& strides() const { return strides_; }
  int64_t offset() const { return offset_; }
  int rank() const { return shape_.size(); }
  int64_t dim(int axis) const { return shape_[normalize_axis(axis, rank(), "dim")]; }
  int64_t numel() const { return shape_.product(); }
  size_t nbytes() const { return dtype_.bytes_for(numel()); }
  bool is_contiguous() const;
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  bool shares_storage_with(const Array& other) const { return storage_ == other.storage_; }

  // Typed pointer to element [0, ..., 0]; throws if T is not this array's dtype.
  template <class T>
  T* data() const;
  // Raw pointer to element [0, ..., 0] (block-quantized arrays: to the first block).
  void* raw_data() const;
  // The unchecked view kernels take; checks T against the dtype once, here.
  template <class T>
  TensorRef<T> ref() const {
    return TensorRef<T>{data<T>(), shape_, strides_};
  }
  template <class T>
  TensorRef<const T> cref() const {
    return TensorRef<const T>{data<T>(), shape_, strides_};
  }

  // Element at a full index, converted to double (tests and debugging; not for loops).
  double at(std::initializer_list<int64_t> index) const;

  // ---- zero-copy views ----
  Array slice(int axis, int64_t start, int64_t stop, int64_t step = 1) const;
  Array narrow(int axis, int64_t start, int64_t length) const { return slice(axis, start, start + length); }
  // Drops the axis. Block-quantized arrays allow axis 0 of a contiguous array only (whole blocks).
  Array select(int axis, int64_t index) const;
  Array permute(const Dims& order) const;
  Array transpose(int a, int b) const;
  Array reshape(const Dims& shape) const;  // one extent may be -1; needs a contiguous array
  Array broadcast_to(const Dims& shape) const;
  Array squeeze(int axis) const;
  Array unsqueeze(int axis) const;

  // ---- autograd (tempra/core/grad_node.h, tempra/ag/backward.h) ----
  // Views of an array that requires a gradient record a node too, so gradients flow through them.
  bool requires_grad() const { return node_ != nullptr; }
  // Makes this array a leaf parameter that accumulates a gradient (true), or forgets its graph
  // (false). Only float arrays can require a gradient.
  Array& set_requires_grad(bool enabled = true);
  // True for an array no recorded op produced (a parameter or a plain value).
  bool is_leaf() const;
  // A leaf's accumulated gradient, the same shape and dtype; empty if none (or not a leaf).
  Array grad() const;
  // Replaces a leaf's gradient (shape and dtype must match; an empty array clears it).
  void set_grad(const Array& g);
  void zero_grad() { set_grad(Array{}); }
  // The same values without the graph: a constant from here on.
  Array detach() const;
  const std::shared_ptr<GradNode>& grad_node() const { return node_; }
  void set_grad_node(std::shared_ptr<GradNode> node) { node_ = std::move(node); }

 private:
  void require_plain(const char* op) const;
  // `out` (a view of this array) without this array's node, plus a view node if it needs one.
  Array finish_view(Array out, const char* op) const;

  std::shared_ptr<Storage> storage_;
  DType dtype_ = DType::f32;
  Dims shape_;
  Dims strides_;
  int64_t offset_ = 0;  // in elements
  std::shared_ptr<GradNode> node_;  // null unless this array requires a gradient
};

// The broadcast shape of a and b (numpy rules: align trailing axes; 1 stretches), or throws
// naming `op` and both shapes.
Dims broadcast_shapes(const Dims& a, const Dims& b, const char* op);

template <class T>
T* Array::data() const {
  check(defined(), "data", "the array is empty (default-constructed)");
  check(dtype_of<T>::value == dtype_, "data", "array has dtype ", dtype_.name(), ", asked for ",
        dtype_of<T>::value.name());
  return static_cast<T*>(raw_data());
}

template <class T>
Array Array::from_values(ExecContext& ctx, const Dims& shape, std::span<const T> values) {
  check(shape.product() == static_cast<int64_t>(values.size()), "from_values", "shape ", shape, " holds ",
        shape.product(), " elements, got ", values.size(), " values");
  Array a = empty(ctx, shape, dtype_of<T>::value);
  T* out = a.data<T>();
  for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return a;
}

}  // namespace tempra
