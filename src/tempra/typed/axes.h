// tempra/typed/axes.h: axis tags and the compile-time list algebra over them.
//
// An axis is an empty struct deriving from tempra::Axis; TEMPRA_AXES(batch, in) declares
// several. Tags exist only in types: they compile away. The helpers here answer, at compile
// time, "is A in this list", "where", "this list minus A", "the union of two lists", which is
// all the named-axis ops need to compute their result types.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>
#include <type_traits>

namespace tempra {

struct Axis {};

template <class T>
concept AxisTag = std::is_base_of_v<Axis, T> && std::is_empty_v<T>;

// Declares one axis tag: struct name : tempra::Axis { name = "name" }.
#define TEMPRA_AXIS(axis_name)                             \
  struct axis_name : ::tempra::Axis {                      \
    static constexpr std::string_view name = #axis_name;   \
  }

// Declares up to 16 axis tags at once: TEMPRA_AXES(batch, in, h1, cls);
#define TEMPRA_AXES(...) TEMPRA_AXES_PICK(__VA_ARGS__, TEMPRA_AXES_16, TEMPRA_AXES_15, TEMPRA_AXES_14,    \
    TEMPRA_AXES_13, TEMPRA_AXES_12, TEMPRA_AXES_11, TEMPRA_AXES_10, TEMPRA_AXES_9, TEMPRA_AXES_8,         \
    TEMPRA_AXES_7, TEMPRA_AXES_6, TEMPRA_AXES_5, TEMPRA_AXES_4, TEMPRA_AXES_3, TEMPRA_AXES_2,              \
    TEMPRA_AXES_1, unused)(__VA_ARGS__)
#define TEMPRA_AXES_PICK(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, macro, ...) macro
#define TEMPRA_AXES_1(a) TEMPRA_AXIS(a)
#define TEMPRA_AXES_2(a, ...) TEMPRA_AXIS(a); TEMPRA_AXES_1(__VA_ARGS__)
#define TEMPRA_AXES_3(a, ...) TEMPRA_AXIS(a); TEMPRA_AXES_2(__VA_ARGS__)
#define TEMPRA_AXES_4(a, ...) TEMPRA_AXIS(a); TEMPRA_AXES_3(__VA_ARGS__)
#define TEMPRA_AXES_5(a, ...) TEMPRA_AXIS(a); TEMPRA_AXES_4(__VA_ARGS__)
#define TEMPRA_AXES_6(a, ...) TEMPRA_AXIS(a); TEMPRA_AXES_5(__VA_ARGS__)
#define TEMPRA_AXES_7(a, ...) TEMPRA_AXIS(a); TEMPRA_AXES_6(__VA_ARGS__)
#define TEMPRA_AXES_8(a, ...) TEMPRA_AXIS(a); TEMPRA_AXES_7(__VA_ARGS__)
#define TEMPRA_AXES_9(a, ...) TEMPRA_AXIS(a); TEMPRA_AXES_8(__VA_ARGS__)
#define TEMPRA_AXES_10(a, ...) TEMPRA_AXIS(a); TEMPRA_AXES_9(__VA_ARGS__)
#define TEMPRA_AXES_11(a, ...) TEMPRA_AXIS(a); TEMPRA_AXES_10(__VA_ARGS__)
#define TEMPRA_AXES_12(a, ...) TEMPRA_AXIS(a); TEMPRA_AXES_11(__VA_ARGS__)
#define TEMPRA_AXES_13(a, ...) TEMPRA_AXIS(a); TEMPRA_AXES_12(__VA_ARGS__)
#define TEMPRA_AXES_14(a, ...) TEMPRA_AXIS(a); TEMPRA_AXES_13(__VA_ARGS__)
#define TEMPRA_AXES_15(a, ...) TEMPRA_AXIS(a); TEMPRA_AXES_14(__VA_ARGS__)
#define TEMPRA_AXES_16(a, ...) TEMPRA_AXIS(a); TEMPRA_AXES_15(__VA_ARGS__)

namespace axes {

template <class... As>
struct List {
  static constexpr std::size_t size = sizeof...(As);
};

template <class A, class... As>
inline constexpr bool contains = (std::is_same_v<A, As> || ...);

template <class... As>
struct Unique;
template <>
struct Unique<> : std::true_type {};
template <class A, class... As>
struct Unique<A, As...> : std::bool_constant<!contains<A, As...> && Unique<As...>::value> {};
template <class... As>
inline constexpr bool unique = Unique<As...>::value;

// Position of A in As... (As must contain A).
template <class A, class... As>
constexpr int index_of() {
  constexpr bool matches[] = {std::is_same_v<A, As>..., false};
  for (int i = 0; i < static_cast<int>(sizeof...(As)); ++i)
    if (matches[i]) return i;
  return -1;
}

// Concatenation of lists.
template <class... Lists>
struct Concat;
template <>
struct Concat<> {
  using type = List<>;
};
template <class... As>
struct Concat<List<As...>> {
  using type = List<As...>;
};
template <class... As, class... Bs, class... Rest>
struct Concat<List<As...>, List<Bs...>, Rest...> {
  using type = typename Concat<List<As..., Bs...>, Rest...>::type;
};

// The axes of List<As...> that are not in List<Drop...>, in order.
template <class Keep, class Drop>
struct Minus;
template <class... As, class... Drop>
struct Minus<List<As...>, List<Drop...>> {
  using type = typename Concat<std::conditional_t<contains<As, Drop...>, List<>, List<As>>...>::type;
};

// A's axes, then B's axes not already in A: the result axes of a named broadcast.
template <class A, class B>
struct Union;
template <class... As, class... Bs>
struct Union<List<As...>, List<Bs...>> {
  using type = typename Concat<List<As...>, typename Minus<List<Bs...>, List<As...>>::type>::type;
};

// Same set of axes, any order.
template <class A, class B>
struct SameSet;
template <class... As, class... Bs>
struct SameSet<List<As...>, List<Bs...>>
    : std::bool_constant<sizeof...(As) == sizeof...(Bs) && (contains<As, Bs...> && ...)> {};

// Applies a template to a list's axes: Apply<Tensor, List<a, b>>::type is Tensor<a, b>.
template <template <class...> class T, class L>
struct Apply;
template <template <class...> class T, class... As>
struct Apply<T, List<As...>> {
  using type = T<As...>;
};

}  // namespace axes
}  // namespace tempra
