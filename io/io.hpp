// Tensors in and out of a program: printed as PyTorch prints them, and saved to and loaded from
// safetensors files.
#pragma once

#include "io/print.hpp"
#include "io/safetensors.hpp"
