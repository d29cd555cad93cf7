# Cross compiling for 64-bit ARM with Debian's g++-aarch64-linux-gnu, the programs run by qemu-user
# (cmake/install-deps.sh aarch64 installs both, and the arm64 libraries that are linked).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# ctest, doctest_discover_tests and the tests that start a program run it through qemu. The ARM
# dynamic loader and libraries are the multiarch ones of libc6:arm64 (/lib/aarch64-linux-gnu, which
# the arm64 packages of fmt and ICU pull in), not the cross compiler's copy in
# /usr/aarch64-linux-gnu: qemu's -L pointing there would mix that loader with the multiarch
# libc.so.6 of another Debian revision, which hangs a program's first pthread_create.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)

# Libraries and their CMake files from the arm64 packages (multiarch: /usr/lib/aarch64-linux-gnu,
# which CMake searches for this compiler); programs such as Python from the build machine.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
# xtensor and xsimd are headers only, but Debian keeps their CMake files in the build machine's
# architecture folder, and libxtensor-dev:arm64 cannot be installed (its xtl-dev dependency is
# not multiarch): those two come from the build machine's packages.
foreach(package xtensor xsimd)
  set(${package}_DIR /usr/lib/${CMAKE_HOST_SYSTEM_PROCESSOR}-linux-gnu/cmake/${package}
      CACHE PATH "${package}'s CMake files (header-only: the build machine's serve)")
endforeach()
