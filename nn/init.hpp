// Initializers, as torch.nn.init: each fills a tensor in place from the global generator
// (reproducible after manual_seed) and records no history.
#pragma once

#include <string>

#include "autograd/tensor.hpp"

namespace anatomy::nn::init {

Tensor& uniform_(Tensor& t, float a = 0.0f, float b = 1.0f);
Tensor& normal_(Tensor& t, float mean = 0.0f, float std = 1.0f);
// Normal, redrawn until inside [a, b] (BERT's std 0.02 init uses this).
Tensor& trunc_normal_(Tensor& t, float mean = 0.0f, float std = 1.0f, float a = -2.0f,
                      float b = 2.0f);
Tensor& constant_(Tensor& t, float value);
Tensor& zeros_(Tensor& t);
Tensor& ones_(Tensor& t);
Tensor& xavier_uniform_(Tensor& t, float gain = 1.0f);
Tensor& xavier_normal_(Tensor& t, float gain = 1.0f);
// mode "fan_in" or "fan_out"; nonlinearity "leaky_relu" (with a), "relu", "linear", "tanh".
Tensor& kaiming_uniform_(Tensor& t, float a = 0.0f, const std::string& mode = "fan_in",
                         const std::string& nonlinearity = "leaky_relu");
Tensor& kaiming_normal_(Tensor& t, float a = 0.0f, const std::string& mode = "fan_in",
                        const std::string& nonlinearity = "leaky_relu");

// While a SkipInitGuard lives on this thread, the random initializers above (uniform_, normal_,
// trunc_normal_, and the xavier and kaiming ones, which call them) fill zeros instead of
// drawing, and the global generator is left as it was: a model built only to load its weights
// then costs no draws (Hugging Face's from_pretrained skips initialization the same way; PyTorch
// has torch.nn.utils.skip_init); drawing is most of the time of building a model. Constants
// (zeros_, ones_, constant_) are still written. Load strictly afterwards: a parameter the file
// lacks stays 0.
class SkipInitGuard {
 public:
  SkipInitGuard();
  ~SkipInitGuard();
  SkipInitGuard(const SkipInitGuard&) = delete;
  SkipInitGuard& operator=(const SkipInitGuard&) = delete;
};
bool init_skipped();  // whether a SkipInitGuard lives on this thread

// (fan_in, fan_out) of a weight: [out, in, *receptive field].
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t);
// param: leaky_relu's negative slope (PyTorch's default when none is given: 0.01).
float calculate_gain(const std::string& nonlinearity, float param = 0.01f);

}  // namespace anatomy::nn::init
