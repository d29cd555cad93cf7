// Everything of the autograd layer in one include.
#pragma once

#include "autograd/allocator.hpp"
#include "autograd/anomaly.hpp"
#include "autograd/engine.hpp"
#include "autograd/frozen_weights.hpp"
#include "autograd/function.hpp"
#include "autograd/gemm.hpp"
#include "autograd/gradcheck.hpp"
#include "autograd/graph.hpp"
#include "autograd/ops.hpp"
#include "autograd/print.hpp"
#include "autograd/random.hpp"
#include "autograd/safetensors.hpp"
#include "autograd/tensor.hpp"
