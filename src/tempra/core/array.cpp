// tempra/core/array.cpp: allocation and zero-copy views of the untyped tensor.
#include "tempra/core/array.h"

#include <algorithm>

#include "tempra/core/grad_node.h"

namespace tempra {

Array::Array(std::shared_ptr<Storage> storage, DType dtype, const Dims& shape, const Dims& strides, int64_t offset)
    : storage_(std::move(storage)), dtype_(dtype), shape_(shape), strides_(strides), offset_(offset) {
  check(shape.size() == strides.size(), "array", "shape ", shape, " and strides ", strides, " differ in rank");
  for (int64_t extent : shape) check(extent >= 0, "array", "negative extent in shape ", shape);
}

Array Array::empty(ExecContext& ctx, const Dims& shape, DType dtype) {
  for (int64_t extent : shape) check(extent >= 0, "empty", "negative extent in shape ", shape);
  return Array(Storage::allocate(dtype.bytes_for(shape.product()), ctx.pool()), dtype, shape,
               contiguous_strides(shape), 0);
}

Array Array::zeros(ExecContext& ctx, const Dims& shape, DType dtype) {
  for (int64_t extent : shape) check(extent >= 0, "zeros", "negative extent in shape ", shape);
  return Array(Storage::allocate(dtype.bytes_for(shape.product()), ctx.pool(), /*zero=*/true), dtype, shape,
               contiguous_strides(shape), 0);
}

bool Array::is_contiguous() const {
  int64_t expected = 1;
  for (int i = rank() - 1; i >= 0; --i) {
    if (shape_[i] == 1) continue;  // a unit axis's stride never matters
    if (strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

void* Array::raw_data() const {
  check(defined(), "data", "the array is empty (default-constructed)");
  auto* base = static_cast<char*>(storage_->data());
  if (dtype_.is_block_quantized()) return base + dtype_.bytes_for(offset_);
  return base + offset_ * static_cast<int64_t>(dtype_.element_size());
}

double Array::at(std::initializer_list<int64_t> index) const {
  check(static_cast<int>(index.size()) == rank(), "at", "index has ", index.size(), " entries for shape ", shape_);
  int64_t off = 0;
  int d = 0;
  for (int64_t i : index) {
    check(i >= 0 && i < shape_[d], "at", "index ", i, " out of range for axis ", d, " of shape ", shape_);
    off += i * strides_[d++];
  }
  return visit_dtype(dtype_, "at", [&](auto tag) -> double {
    using T = decltype(tag);
    const T value = data<T>()[off];
    if constexpr (std::is_same_v<T, f16_t> || std::is_same_v<T, bf16_t>) return to_f32(value);
    else return static_cast<double>(value);
  });
}

void Array::require_plain(const char* op) const {
  check(defined(), op, "the array is empty (default-constructed)");
  check(!dtype_.is_block_quantized(), op, "views of block-quantized ", dtype_.name(), " arrays are not supported");
}

Array Array::slice(int axis, int64_t start, int64_t stop, int64_t step) const {
  require_plain("slice");
  const int a = normalize_axis(axis, rank(), "slice");
  check(step >= 1, "slice", "step must be >= 1, got ", step);
  const int64_t n = shape_[a];
  check(start >= 0 && start <= stop && stop <= n, "slice", "range [", start, ", ", stop, ") is invalid for axis ", a,
        " of shape ", shape_);
  Array out = *this;
  out.offset_ += start * strides_[a];
  out.shape_[a] = (stop - start + step - 1) / step;
  out.strides_[a] = strides_[a] * step;
  return finish_view(std::move(out), "slice");
}

Array Array::select(int axis, int64_t index) const {
  // A block-quantized array may lose its outermost axis when it is contiguous: each index is
  // then a run of whole blocks (one expert's matrix of a stacked MoE tensor).
  const bool whole_blocks = defined() && dtype_.is_block_quantized() && rank() >= 2 && is_contiguous() &&
                            normalize_axis(axis, rank(), "select") == 0 &&
                            strides_[0] % int64_t(dtype_.info().block_elems) == 0;
  if (!whole_blocks) require_plain("select");
  const int a = normalize_axis(axis, rank(), "select");
  check(index >= 0 && index < shape_[a], "select", "index ", index, " out of range for axis ", a, " of shape ",
        shape_);
  Array out = *this;
  out.offset_ += index * strides_[a];
  out.shape_.erase(a);
  out.strides_.erase(a);
  return finish_view(std::move(out), "select");
}

Array Array::permute(const Dims& order) const {
  require_plain("permute");
  check(order.size() == rank(), "permute", "order ", order, " does not match rank of shape ", shape_);
  Array out = *this;
  bool seen[kMaxRank] = {};
  for (int i = 0; i < rank(); ++i) {
    const int src = normalize_axis(static_cast<int>(order[i]), rank(), "permute");
    check(!seen[src], "permute", "order ", order, " repeats axis ", src);
    seen[src] = true;
    out.shape_[i] = shape_[src];
    out.strides_[i] = strides_[src];
  }
  return finish_view(std::move(out), "permute");
}

Array Array::transpose(int a, int b) const {
  Dims order = Dims::filled(rank(), 0);
  for (int i = 0; i < rank(); ++i) order[i] = i;
  std::swap(order[normalize_axis(a, rank(), "transpose")], order[normalize_axis(b, rank(), "transpose")]);
  return permute(order);
}

Array Array::reshape(const Dims& shape) const {
  check(defined(), "reshape", "the array is empty (default-constructed)");
  Dims target = shape;
  int inferred = -1;
  int64_t known = 1;
  for (int i = 0; i < target.size(); ++i) {
    if (target[i] == -1) {
      check(inferred < 0, "reshape", "more than one -1 in ", shape);
      inferred = i;
    } else {
      check(target[i] >= 0, "reshape", "negative extent in ", shape);
      known *= target[i];
    }
  }
  if (inferred >= 0) {
    check(known > 0 && numel() % known == 0, "reshape", "cannot infer -1 in ", shape, " for ", numel(),
          " elements of shape ", shape_);
    target[inferred] = numel() / known;
  }
  check(target.product() == numel(), "reshape", "shape ", shape_, " (", numel(), " elements) cannot become ",
        shape);
  check(is_contiguous(), "reshape", "a view of shape ", shape_, " with strides ", strides_,
        " is not contiguous; call tempra::contiguous first");
  Array out = *this;
  out.shape_ = target;
  out.strides_ = contiguous_strides(target);
  return finish_view(std::move(out), "reshape");
}

Array Array::broadcast_to(const Dims& shape) const {
  require_plain("broadcast_to");
  check(shape.size() >= rank(), "broadcast_to", "cannot broadcast shape ", shape_, " to lower rank ", shape);
  for (int64_t extent : shape) check(extent >= 0, "broadcast_to", "negative extent in target shape ", shape);
  Array out = *this;
  out.shape_ = shape;
  out.strides_ = Dims::filled(shape.size(), 0);
  const int lead = shape.size() - rank();
  for (int i = 0; i < rank(); ++i) {
    if (shape_[i] == shape[lead + i]) {
      out.strides_[lead + i] = strides_[i];
    } else {
      check(shape_[i] == 1, "broadcast_to", "cannot broadcast shape ", shape_, " to ", shape);
    }
  }
  return finish_view(std::move(out), "broadcast_to");
}

Array Array::squeeze(int axis) const {
  require_plain("squeeze");
  const int a = normalize_axis(axis, rank(), "squeeze");
  check(shape_[a] == 1, "squeeze", "axis ", a, " of shape ", shape_, " has extent ", shape_[a], ", not 1");
  return select(a, 0);
}

Array Array::unsqueeze(int axis) const {
  require_plain("unsqueeze");
  const int a = normalize_axis(axis, rank() + 1, "unsqueeze");
  Array out = *this;
  out.shape_.insert(a, 1);
  out.strides_.insert(a, a < rank() ? strides_[a] * shape_[a] : 1);
  return finish_view(std::move(out), "unsqueeze");
}

Dims broadcast_shapes(const Dims& a, const Dims& b, const char* op) {
  const int rank = std::max(a.size(), b.size());
  Dims out = Dims::filled(rank, 1);
  for (int i = 0; i < rank; ++i) {
    const int ia = i - (rank - a.size()), ib = i - (rank - b.size());
    const int64_t ea = ia >= 0 ? a[ia] : 1, eb = ib >= 0 ? b[ib] : 1;
    check(ea == eb || ea == 1 || eb == 1, op, "shapes ", a, " and ", b, " do not broadcast (axis ", i,
          ": ", ea, " vs ", eb, ")");
    out[i] = ea == 1 ? eb : ea;
  }
  return out;
}

}  // namespace tempra
