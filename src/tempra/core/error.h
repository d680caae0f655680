// tempra/core/error.h: the one exception type every layer throws.
//
// Contract: bad input (wrong shapes, dtypes, indices, corrupt files) never crashes; it throws
// tempra::Error whose message names the op and the offending shapes or fields, in the style
// "[matmul] inner dimensions differ: a is [2, 3], b is [4, 5]". Kernels never throw: they run
// only on data their op has already checked.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tempra {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {
inline void append(std::ostringstream&) {}
template <class First, class... Rest>
void append(std::ostringstream& out, const First& first, const Rest&... rest) {
  out << first;
  append(out, rest...);
}
}  // namespace detail

// Throws Error("[op] " + the streamed parts). Every op-boundary check goes through here.
template <class... Parts>
[[noreturn]] void fail(std::string_view op, const Parts&... parts) {
  std::ostringstream out;
  out << '[' << op << "] ";
  detail::append(out, parts...);
  throw Error(out.str());
}

// check(cond, "op", parts...) is fail() when cond is false.
template <class... Parts>
void check(bool condition, std::string_view op, const Parts&... parts) {
  if (!condition) fail(op, parts...);
}

}  // namespace tempra
