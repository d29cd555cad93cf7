// Everything of the autograd layer in one include.
#pragma once

#include "autograd/anomaly.hpp"
#include "autograd/dispatch.hpp"
#include "autograd/engine.hpp"
#include "autograd/function.hpp"
#include "autograd/gradcheck.hpp"
#include "autograd/ops.hpp"
#include "autograd/random.hpp"
#include "autograd/tensor.hpp"
