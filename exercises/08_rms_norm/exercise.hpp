// Exercise 08: RMSNorm, the norm of LLaMA (a variant of the chapter's layer norm).
#pragma once

#include "autograd/autograd.hpp"

// x [..., N], weight [N] -> x / sqrt(mean(x², last dimension) + eps) * weight
anatomy::Tensor rms_norm(const anatomy::Tensor& x, const anatomy::Tensor& weight, float eps);
