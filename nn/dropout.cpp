#include "nn/dropout.hpp"

namespace anatomy::nn {

Dropout::Dropout(float p_) : p(p_) {
  if (p < 0.0f || p > 1.0f)
    throw Error(
        fmt::format("Dropout: dropout probability has to be between 0 and 1, but got {}", p));
}

}  // namespace anatomy::nn
