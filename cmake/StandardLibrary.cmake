# Which C++ standard library the compiler uses, and what follows from it. ANATOMY_LIBCXX is true
# under libc++ (clang's library and macOS's), false under libstdc++ (GCC's).
include(CheckCXXSourceCompiles)
check_cxx_source_compiles("#include <version>
#ifndef _LIBCPP_VERSION
#error not libc++
#endif
int main() {}" ANATOMY_LIBCXX)

# A C++ library compiled against one standard library cannot be linked into a program built on the
# other: its std::string, for one, is another type. Debian's libfmt is compiled against libstdc++,
# so under libc++ fmt is used header-only (its functions compiled into each target that calls
# them). ICU is used through its C API and inline C++ templates only, so its library links under
# either.
if(ANATOMY_LIBCXX)
  set(ANATOMY_FMT fmt::fmt-header-only)
else()
  set(ANATOMY_FMT fmt::fmt)
endif()
