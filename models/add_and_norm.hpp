// AddAndNorm: a layer's residual connection and the norm after it (the "Add & Norm" box of the
// paper's figure): sum = residual + dropout(sublayer output), normed = norm(sum). A pre-LN layer
// keeps sum as the next residual and feeds normed to its next sublayer; a post-LN layer goes on
// with normed.
#pragma once

#include "nn/nn.hpp"

namespace anatomy::models {

struct AddAndNorm {
  Tensor sum, normed;
};

// With the library's own nn::Dropout and nn::LayerNorm this is one fused op
// (dropout_add_layer_norm: the same numbers and gradients, two passes over memory instead of
// three); any other norm (RMSNorm, a student's) or module class goes through its forward as
// written.
AddAndNorm add_and_norm(const Tensor& residual, const Tensor& sublayer_output, nn::Dropout& dropout,
                        nn::Module& norm);

}  // namespace anatomy::models
