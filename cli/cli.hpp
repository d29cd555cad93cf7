// The `anatomy` program as a function, so that a project of your own can build its own
// program with the parts it registers (models/registry.hpp) and train them with every command.
#pragma once

namespace anatomy::cli {

int main(int argc, char** argv);

}  // namespace anatomy::cli
