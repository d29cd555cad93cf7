// The `anatomy` program with this project's parts: my_anatomy train --task reverse --set
// norm_type=scale_norm --out runs/scale trains with ScaleNorm.
#include <cli/cli.hpp>

#include "learned_bias.hpp"
#include "scale_norm.hpp"

int main(int argc, char** argv) { return anatomy::cli::main(argc, argv); }
