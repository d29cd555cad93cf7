// Everything of the nn layer in one include.
#pragma once

#include "autograd/autograd.hpp"
#include "nn/activation.hpp"
#include "nn/checkpoint.hpp"
#include "nn/clip_grad.hpp"
#include "nn/container.hpp"
#include "nn/data_parallel.hpp"
#include "nn/dropout.hpp"
#include "nn/embedding.hpp"
#include "nn/init.hpp"
#include "nn/layer_norm.hpp"
#include "nn/linear.hpp"
#include "nn/loss.hpp"
#include "nn/lr_scheduler.hpp"
#include "nn/module.hpp"
#include "nn/optimizer.hpp"
#include "nn/rms_norm.hpp"
