// Facts about how this binary was built, for `tempra version` and bug reports.
//
// Everything here is decided at compile time: the ISA list says which
// instruction-set extensions the compiler was allowed to use (from predefined
// macros such as __AVX2__), not what the running CPU supports. A binary built
// with -march=native on one machine and copied to an older one will still
// report the build machine's features; that is the point, since those are the
// instructions it may execute.
#pragma once

#include <string>
#include <vector>

namespace tempra::build_info {

std::string version();      // the CMake project version, e.g. "0.1.0"
std::string build_flags();  // build type, arch flags and backends, e.g. "Release -march=native backends=all"
std::string compiler();     // e.g. "g++ 12.2.0"

// Architecture first, then extensions in a fixed order:
// {"x86-64", "avx2", "fma", ...} or {"aarch64", "neon", "dotprod", ...}.
std::vector<std::string> isa_features();

}  // namespace tempra::build_info
