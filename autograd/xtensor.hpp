// The one place the project includes xtensor. Debian ships xtensor 0.24.3 with flat include
// paths; an upgrade that moves them touches only this file.
#pragma once

#include <xtensor/xadapt.hpp>
#include <xtensor/xarray.hpp>
#include <xtensor/xtensor.hpp>
