#include "nn/activation.hpp"

namespace anatomy::nn {

GELU::GELU(std::string approx) : approximate(std::move(approx)) {
  if (approximate != "none" && approximate != "tanh")
    throw Error(fmt::format("GELU: approximate must be 'none' or 'tanh' (got '{}')", approximate));
}

}  // namespace anatomy::nn
