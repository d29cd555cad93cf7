// The one place the project includes xsimd.
//
// GCC 12 warns "'__Y' is used uninitialized" inside its own AVX-512 headers when they are
// inlined (GCC bug 105593, fixed in GCC 13). The warning is located in those headers, so it is
// silenced for their lines only; our code keeps -Wuninitialized. Clang has no
// -Wmaybe-uninitialized (it would warn about the unknown option) and no such false positive.
#pragma once

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <xsimd/xsimd.hpp>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
