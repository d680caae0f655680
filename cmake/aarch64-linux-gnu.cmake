# cmake/aarch64-linux-gnu.cmake: cross-compiles tempra for aarch64 Linux with Debian's cross
# toolchain (g++-aarch64-linux-gnu) and runs the results under qemu-user (qemu-aarch64), so the
# native backend's NEON arm is built and tested on an x86-64 host. scripts/test-native-arms.sh
# uses it:
#
#   cmake -S . -B build/neon -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
#
# A cross build compiles the libraries and only the tests that need nothing but GoogleTest
# (tests/CMakeLists.txt, CMAKE_CROSSCOMPILING).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# ctest, gtest_discover_tests and try_run start target binaries through this. -L points the
# emulator at the cross toolchain's aarch64 sysroot (its dynamic loader and libstdc++).
set(CMAKE_CROSSCOMPILING_EMULATOR "qemu-aarch64;-L;/usr/aarch64-linux-gnu")

# Headers, libraries and packages come from the aarch64 sysroot only; programs (the build's
# tools) from the host.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
