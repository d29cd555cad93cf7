// Tensors in and out of a program: printed as PyTorch prints them (and the graph behind one as
// Graphviz DOT), and saved to and loaded from safetensors files; and the files a user names,
// opened with a reason when they cannot be.
#pragma once

#include "io/graph.hpp"
#include "io/input_file.hpp"
#include "io/print.hpp"
#include "io/safetensors.hpp"
