// tempra/typed/ops.h: the op library on named-axis tensors.
//
// Result types are computed from axis names:
//   x.dot<in>(ctx, w)          Tensor<batch, in> . Tensor<h1, in> -> Tensor<batch, h1>: contracts `in`;
//                              axes both operands share besides it are batch axes (kept once).
//   einsum<batch, h1>(ctx, x, w)  the output axis list is the equation: shared axes it names are
//                              batch axes, shared axes it omits are contracted.
//   add(ctx, a, b) etc.        broadcast by name: the result has a's axes, then b's new ones.
//   sum<h1>(ctx, t) etc.       removes the axis; softmax<cls>(ctx, t) keeps it.
// Misuse (an axis an operand lacks, an einsum output axis neither operand has, reducing an
// absent axis) is a compile error whose static_assert text says what is wrong; the compiler's
// "with A = ..." note names the axis. Runtime extents are still checked by the untyped ops.
#pragma once

#include <string>

#include "tempra/ops/ops.h"
#include "tempra/typed/tensor.h"

namespace tempra {
namespace detail {

// Einsum labels: axis k of the union of both operands' axes is the letter 'a' + k.
template <class Universe, class Of>
struct Labels;
template <class... Us, class... As>
struct Labels<axes::List<Us...>, axes::List<As...>> {
  static std::string get() { return std::string{static_cast<char>('a' + axes::index_of<As, Us...>())...}; }
};

// `x` viewed with the axes of Target (a superset, any order): present axes keep their extent
// and stride, absent ones get extent 1, so numpy broadcasting lines operands up by name. Built
// from Array's views (unsqueeze, permute), so a tensor that requires a gradient keeps its graph.
template <class... Target, class... Have>
Array align_to(axes::List<Target...>, const Tensor<Have...>& x) {
  if constexpr (std::is_same_v<axes::List<Target...>, axes::List<Have...>>) {
    return x.array();
  } else {
    // Absent axes are appended as unit axes after x's own, then all move to Target's order.
    int next_absent = static_cast<int>(sizeof...(Have));
    Dims order;
    (
        [&] {
          if constexpr (axes::contains<Target, Have...>) order.push_back(axes::index_of<Target, Have...>());
          else order.push_back(next_absent++);
        }(),
        ...);
    Array a = x.array();
    while (a.rank() < next_absent) a = a.unsqueeze(a.rank());
    return a.permute(order);
  }
}

template <class L>
using TensorOf = typename axes::Apply<Tensor, L>::type;

// Checks, by name, that every axis a and b share has one extent (or, when broadcasting, that one
// side is 1), so a mismatch reads "[add] axis h1 has extent 16 in Tensor<batch, h1> but 8 in
// Tensor<h1>" rather than as two anonymous shapes.
template <class... A, class... B>
void check_shared_extents(const char* op, const Tensor<A...>& a, const Tensor<B...>& b, bool broadcast) {
  (
      [&] {
        if constexpr (axes::contains<B, A...>) {
          const int64_t ea = a.template size<B>(), eb = b.template size<B>();
          check(ea == eb || (broadcast && (ea == 1 || eb == 1)), op, "axis ", B::name, " has extent ", ea, " in ",
                Tensor<A...>::describe(), " but ", eb, " in ", Tensor<B...>::describe());
        }
      }(),
      ...);
}

}  // namespace detail

// ---- contraction ----

// einsum<Out...>(ctx, a, b): the single contraction lowering (one batched GEMM, tempra::einsum).
template <class... Out, class... A, class... B>
Tensor<Out...> einsum(ExecContext& ctx, const Tensor<A...>& a, const Tensor<B...>& b) {
  static_assert(((axes::contains<Out, A...> || axes::contains<Out, B...>) && ...),
                "tempra: einsum<Out...>: an output axis is in neither operand");
  static_assert(((axes::contains<A, Out...> || axes::contains<A, B...>) && ...) &&
                    ((axes::contains<B, Out...> || axes::contains<B, A...>) && ...),
                "tempra: einsum<Out...>: an axis that only one operand has is missing from the output; reduce "
                "it first");
  detail::check_shared_extents("einsum", a, b, /*broadcast=*/false);
  using Universe = typename axes::Union<axes::List<A...>, axes::List<B...>>::type;
  return Tensor<Out...>::from(tempra::einsum(ctx, a.array(), detail::Labels<Universe, axes::List<A...>>::get(),
                                             b.array(), detail::Labels<Universe, axes::List<B...>>::get(),
                                             detail::Labels<Universe, axes::List<Out...>>::get()));
}

namespace detail {
template <class Contracted, class... Have>
constexpr bool require_in_left() {
  static_assert(axes::contains<Contracted, Have...>,
                "tempra: dot<Axis>: the contraction axis is not an axis of the left operand");
  return axes::contains<Contracted, Have...>;
}
template <class Contracted, class... Have>
constexpr bool require_in_right() {
  static_assert(axes::contains<Contracted, Have...>,
                "tempra: dot<Axis>: the contraction axis is not an axis of the right operand");
  return axes::contains<Contracted, Have...>;
}
}  // namespace detail

template <class... Axes>
template <class A, class... Other>
auto Tensor<Axes...>::dot(ExecContext& ctx, const Tensor<Other...>& other) const {
  constexpr bool valid = detail::require_in_left<A, Axes...>() && detail::require_in_right<A, Other...>();
  if constexpr (!valid) {
    return Tensor<>{};  // unreachable: the assertion above already failed; stops a cascade of errors
  } else {
    using Kept = typename axes::Minus<axes::List<Axes...>, axes::List<A>>::type;
    using Added = typename axes::Minus<axes::List<Other...>, axes::List<Axes..., A>>::type;
    using Out = typename axes::Concat<Kept, Added>::type;
    return [&]<class... O>(axes::List<O...>) { return einsum<O...>(ctx, *this, other); }(Out{});
  }
}

// ---- elementwise ----

#define TEMPRA_TYPED_UNARY(fn)                                                  \
  template <class... Axes>                                                      \
  Tensor<Axes...> fn(ExecContext& ctx, const Tensor<Axes...>& x) {              \
    return Tensor<Axes...>::from(tempra::fn(ctx, x.array()));                   \
  }
TEMPRA_TYPED_UNARY(neg)
TEMPRA_TYPED_UNARY(abs)
TEMPRA_TYPED_UNARY(exp)
TEMPRA_TYPED_UNARY(log)
TEMPRA_TYPED_UNARY(sqrt)
TEMPRA_TYPED_UNARY(rsqrt)
TEMPRA_TYPED_UNARY(square)
TEMPRA_TYPED_UNARY(tanh)
TEMPRA_TYPED_UNARY(sigmoid)
TEMPRA_TYPED_UNARY(relu)
TEMPRA_TYPED_UNARY(gelu_tanh)
TEMPRA_TYPED_UNARY(gelu_erf)
TEMPRA_TYPED_UNARY(silu)
TEMPRA_TYPED_UNARY(softplus)
TEMPRA_TYPED_UNARY(sin)
TEMPRA_TYPED_UNARY(cos)
#undef TEMPRA_TYPED_UNARY

// Binary ops broadcast by name; the result lists a's axes, then b's axes that a lacks.
template <class... A, class... B>
auto binary(ExecContext& ctx, BinaryOp op, const Tensor<A...>& a, const Tensor<B...>& b) {
  using Out = typename axes::Union<axes::List<A...>, axes::List<B...>>::type;
  detail::check_shared_extents(op_name(op), a, b, /*broadcast=*/true);
  return detail::TensorOf<Out>::from(
      tempra::binary(ctx, op, detail::align_to(Out{}, a), detail::align_to(Out{}, b)));
}

#define TEMPRA_TYPED_BINARY(fn, op)                                                          \
  template <class... A, class... B>                                                          \
  auto fn(ExecContext& ctx, const Tensor<A...>& a, const Tensor<B...>& b) {                  \
    return binary(ctx, BinaryOp::op, a, b);                                                  \
  }                                                                                          \
  template <class... A>                                                                      \
  Tensor<A...> fn(ExecContext& ctx, const Tensor<A...>& a, double s) {                       \
    return Tensor<A...>::from(tempra::binary(ctx, BinaryOp::op, a.array(), s));              \
  }
TEMPRA_TYPED_BINARY(add, add)
TEMPRA_TYPED_BINARY(sub, sub)
TEMPRA_TYPED_BINARY(mul, mul)
TEMPRA_TYPED_BINARY(div, div)
TEMPRA_TYPED_BINARY(pow, pow)
TEMPRA_TYPED_BINARY(maximum, maximum)
TEMPRA_TYPED_BINARY(minimum, minimum)
#undef TEMPRA_TYPED_BINARY

// ---- reductions and softmax ----

namespace detail {
template <class Reduced, class... Have>
constexpr int reduced_axis() {
  static_assert(axes::contains<Reduced, Have...>, "tempra: reducing an axis the tensor does not have");
  return axes::index_of<Reduced, Have...>();
}
template <class Reduced, class... Have>
using Without = TensorOf<typename axes::Minus<axes::List<Have...>, axes::List<Reduced>>::type>;
}  // namespace detail

#define TEMPRA_TYPED_REDUCE(fn)                                                                       \
  template <class R, class... Axes>                                                                   \
  detail::Without<R, Axes...> fn(ExecContext& ctx, const Tensor<Axes...>& x) {                        \
    return detail::Without<R, Axes...>::from(tempra::fn(ctx, x.array(), detail::reduced_axis<R, Axes...>())); \
  }
TEMPRA_TYPED_REDUCE(sum)
TEMPRA_TYPED_REDUCE(mean)
TEMPRA_TYPED_REDUCE(max)
TEMPRA_TYPED_REDUCE(min)
TEMPRA_TYPED_REDUCE(logsumexp)
TEMPRA_TYPED_REDUCE(argmax)
#undef TEMPRA_TYPED_REDUCE

template <class R, class... Axes>
detail::Without<R, Axes...> variance(ExecContext& ctx, const Tensor<Axes...>& x, int64_t correction = 0) {
  return detail::Without<R, Axes...>::from(
      tempra::variance(ctx, x.array(), detail::reduced_axis<R, Axes...>(), correction));
}

template <class R, class... Axes>
Tensor<Axes...> softmax(ExecContext& ctx, const Tensor<Axes...>& x, const SoftmaxOptions& options = {}) {
  return Tensor<Axes...>::from(tempra::softmax(ctx, x.array(), detail::reduced_axis<R, Axes...>(), options));
}
template <class R, class... Axes>
Tensor<Axes...> log_softmax(ExecContext& ctx, const Tensor<Axes...>& x, const SoftmaxOptions& options = {}) {
  return Tensor<Axes...>::from(tempra::log_softmax(ctx, x.array(), detail::reduced_axis<R, Axes...>(), options));
}

// ---- structure ----

template <class R, class... Axes>
Tensor<Axes...> concat(ExecContext& ctx, const std::vector<Tensor<Axes...>>& parts) {
  std::vector<Array> arrays;
  arrays.reserve(parts.size());
  for (const auto& p : parts) arrays.push_back(p.array());
  return Tensor<Axes...>::from(tempra::concat(ctx, arrays, Tensor<Axes...>::template index_of<R>()));
}

}  // namespace tempra
