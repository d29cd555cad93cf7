// The one place the project includes xsimd.
//
// GCC 12 warns "'__Y' is used uninitialized" inside its own AVX-512 headers when they are
// inlined (GCC bug 105593, fixed in GCC 13). The warning is located in those headers, so it is
// silenced for their lines only; our code keeps -Wuninitialized.
#pragma once

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <xsimd/xsimd.hpp>
#pragma GCC diagnostic pop
