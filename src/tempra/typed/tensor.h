// tempra/typed/tensor.h: Tensor<Axes...>, the named-axis tensor.
//
// A Tensor<batch, in> is an Array whose axis 0 is `batch` and axis 1 is `in`, with the names
// in the type: Tensor<batch, in> and Tensor<in, batch> are different types, and converting
// one into the other is a compile error (reorder with permute<in, batch>()). The wrapper holds
// nothing but the Array (static_assert below), so naming costs nothing at run time.
//
// Ops on typed tensors (tempra/typed/ops.h) align operands by axis name and compute their
// result's axes at compile time. Going from untyped to typed (Tensor<...>::from) checks the
// rank at run time, because a file's tensor rank is data.
//
// Autograd keeps the names: t.grad() of a Tensor<h1, in> parameter is a Tensor<h1, in> (the
// type says so at compile time; the engine guarantees the shape), and backward(ctx, loss) takes
// only a scalar Tensor<>, so a loss that still has axes is a compile error at the call.
#pragma once

#include <string>
#include <utility>

#include "tempra/ag/backward.h"
#include "tempra/core/array.h"
#include "tempra/core/grad_node.h"
#include "tempra/ops/creation.h"
#include "tempra/typed/axes.h"

namespace tempra {

namespace detail {
template <class... T>
inline constexpr bool always_false = false;
}  // namespace detail

template <class... Axes>
class Tensor {
  static_assert((AxisTag<Axes> && ...),
                "tempra: every axis of Tensor<...> must be an axis tag declared with TEMPRA_AXES(...)");
  static_assert(axes::unique<Axes...>, "tempra: Tensor<...> lists the same axis twice; each axis may appear once");

 public:
  using AxisList = axes::List<Axes...>;
  static constexpr int rank = static_cast<int>(sizeof...(Axes));

  Tensor() = default;

  // Adopts an untyped array, checking its rank: the seam to loaders whose rank is data.
  static Tensor from(Array array) {
    check(array.defined() && array.rank() == rank, "Tensor", describe(), " needs rank ", rank, ", got ",
          array.defined() ? "an array of shape " + to_string(array.shape()) : std::string("an empty array"));
    Tensor t;
    t.array_ = std::move(array);
    return t;
  }

  // A tensor with different axes does not convert, even with the same rank.
  template <class... Other>
    requires(!std::is_same_v<axes::List<Other...>, axes::List<Axes...>>)
  Tensor(const Tensor<Other...>&) {  // NOLINT(google-explicit-constructor): exists to reject
    static_assert(detail::always_false<Other...>,
                  "tempra: cannot convert between tensors with different axes; reorder explicitly with "
                  "permute<...>()");
  }

  // Fresh tensors; extents are given in axis order.
  static Tensor zeros(ExecContext& ctx, const Dims& extents, DType dtype = DType::f32) {
    return from(Array::zeros(ctx, checked_extents(extents), dtype));
  }
  static Tensor full(ExecContext& ctx, const Dims& extents, double value, DType dtype = DType::f32) {
    return from(tempra::full(ctx, checked_extents(extents), value, dtype));
  }
  static Tensor normal(ExecContext& ctx, const Dims& extents, double mean = 0.0, double stddev = 1.0) {
    return from(tempra::normal(ctx, checked_extents(extents), mean, stddev));
  }
  static Tensor uniform(ExecContext& ctx, const Dims& extents, double low = 0.0, double high = 1.0) {
    return from(tempra::uniform(ctx, checked_extents(extents), low, high));
  }

  const Array& array() const { return array_; }
  bool defined() const { return array_.defined(); }
  DType dtype() const { return array_.dtype(); }
  const Dims& shape() const { return array_.shape(); }

  template <class A>
  static constexpr int index_of() {
    static_assert(axes::contains<A, Axes...>, "tempra: this tensor does not have the axis asked for");
    return axes::index_of<A, Axes...>();
  }
  template <class A>
  int64_t size() const {
    return array_.shape()[index_of<A>()];
  }

  // The same elements with the axes in another order (a view).
  template <class... New>
  Tensor<New...> permute() const {
    static_assert(axes::SameSet<axes::List<New...>, axes::List<Axes...>>::value,
                  "tempra: permute<...>() must list exactly the tensor's axes, in the new order");
    return Tensor<New...>::from(array_.permute(Dims{index_of<New>()...}));
  }

  Tensor contiguous(ExecContext& ctx) const { return from(tempra::contiguous(ctx, array_)); }

  // ---- autograd (tempra/core/grad_node.h) ----
  bool requires_grad() const { return array_.requires_grad(); }
  // Makes this tensor a leaf parameter whose gradient backward accumulates (or forgets it).
  Tensor& set_requires_grad(bool enabled = true) {
    array_.set_requires_grad(enabled);
    return *this;
  }
  // The accumulated gradient, with this tensor's axes; undefined before a backward pass.
  Tensor grad() const {
    Array g = array_.grad();
    return g.defined() ? from(std::move(g)) : Tensor{};
  }
  void zero_grad() { array_.zero_grad(); }
  // The same values as a constant: no graph.
  Tensor detach() const { return from(array_.detach()); }

  // Contracts axis A with `other` (defined in tempra/typed/ops.h).
  template <class A, class... Other>
  auto dot(ExecContext& ctx, const Tensor<Other...>& other) const;

  // "Tensor<batch, in>": how errors and printing name this type.
  static std::string describe() {
    std::string s = "Tensor<";
    bool first = true;
    ((s += (first ? "" : ", "), s += std::string(Axes::name), first = false), ...);
    return s + ">";
  }

 private:
  static Dims checked_extents(const Dims& extents) {
    check(extents.size() == rank, "Tensor", describe(), " needs ", rank, " extents, got ", extents);
    return extents;
  }

  Array array_;
};

static_assert(sizeof(Tensor<>) == sizeof(Array), "Tensor<...> must be a zero-cost wrapper of Array");

// Adds d(loss)/d(parameter) to the grad() of every parameter the scalar loss depends on.
template <class... Axes>
void backward(ExecContext& ctx, const Tensor<Axes...>& loss) {
  static_assert(sizeof...(Axes) == 0,
                "tempra: backward(ctx, loss) needs a scalar Tensor<>; reduce the loss over its axes first "
                "(sum<axis>, mean<axis>)");
  ag::backward(ctx, loss.array());
}

}  // namespace tempra
