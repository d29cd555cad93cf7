// anatomy: the command-line program. `anatomy --help` lists the subcommands.
#include "cli/cli.hpp"

int main(int argc, char** argv) { return anatomy::cli::main(argc, argv); }
