// The `anatomy` program with this project's parts: my_anatomy train --task reverse --set
// norm_type=rms_norm --out runs/rms trains with RMSNorm.
#include <cli/cli.hpp>

#include "alibi.hpp"
#include "rms_norm.hpp"

int main(int argc, char** argv) { return anatomy::cli::main(argc, argv); }
