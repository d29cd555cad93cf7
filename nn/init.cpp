#include "nn/init.hpp"

#include <fmt/format.h>

#include <cmath>

#include "autograd/autograd.hpp"

namespace anatomy::nn::init {

namespace {

thread_local int skip_depth = 0;

template <typename Draw>
Tensor& fill_with(Tensor& t, Draw draw) {
  NoGradGuard no_grad;
  if (skip_depth > 0) {
    t.fill_(0.0f);
    return t;
  }
  Tensor values = empty(t.shape());
  float* p = values.data();
  for (int64_t i = 0; i < values.numel(); ++i) p[i] = draw();
  t.copy_(values);
  return t;
}

}  // namespace

SkipInitGuard::SkipInitGuard() { ++skip_depth; }
SkipInitGuard::~SkipInitGuard() { --skip_depth; }
bool init_skipped() { return skip_depth > 0; }

Tensor& uniform_(Tensor& t, float a, float b) {
  auto& g = default_generator();
  return fill_with(t, [&] { return a + (b - a) * g.uniform(); });
}

Tensor& normal_(Tensor& t, float mean, float std) {
  auto& g = default_generator();
  return fill_with(t, [&] { return mean + std * g.normal(); });
}

Tensor& trunc_normal_(Tensor& t, float mean, float std, float a, float b) {
  auto& g = default_generator();
  return fill_with(t, [&] {
    for (;;) {
      const float v = mean + std * g.normal();
      if (v >= a && v <= b) return v;
    }
  });
}

Tensor& constant_(Tensor& t, float value) {
  NoGradGuard no_grad;
  t.fill_(value);
  return t;
}
Tensor& zeros_(Tensor& t) { return constant_(t, 0.0f); }
Tensor& ones_(Tensor& t) { return constant_(t, 1.0f); }

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t) {
  if (t.dim() < 2)
    throw Error(
        fmt::format("init: Fan in and fan out can not be computed for tensor with fewer "
                    "than 2 dimensions (shape {})",
                    t.shape().str()));
  // The product of the sizes after the first two (a convolution's kernel), as torch: not
  // numel / (out * in), which divides by zero for an empty weight such as Linear(0, n)'s.
  int64_t receptive = 1;
  for (int64_t d = 2; d < t.dim(); ++d) receptive *= t.size(d);
  return {t.size(1) * receptive, t.size(0) * receptive};
}

float calculate_gain(const std::string& nonlinearity, float param) {
  if (nonlinearity == "linear" || nonlinearity == "sigmoid") return 1.0f;
  if (nonlinearity == "tanh") return 5.0f / 3.0f;
  if (nonlinearity == "relu") return std::sqrt(2.0f);
  if (nonlinearity == "leaky_relu") return std::sqrt(2.0f / (1.0f + param * param));
  throw Error(fmt::format("init: Unsupported nonlinearity {}", nonlinearity));
}

Tensor& xavier_uniform_(Tensor& t, float gain) {
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  const float std = gain * std::sqrt(2.0f / static_cast<float>(fan_in + fan_out));
  const float a = std::sqrt(3.0f) * std;
  return uniform_(t, -a, a);
}

Tensor& xavier_normal_(Tensor& t, float gain) {
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  return normal_(t, 0.0f, gain * std::sqrt(2.0f / static_cast<float>(fan_in + fan_out)));
}

static float kaiming_std(const Tensor& t, float a, const std::string& mode,
                         const std::string& nonlinearity) {
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  if (mode != "fan_in" && mode != "fan_out")
    throw Error(
        fmt::format("init: Mode {} not supported, please use one of fan_in, fan_out", mode));
  const auto fan = static_cast<float>(mode == "fan_in" ? fan_in : fan_out);
  return calculate_gain(nonlinearity, a) / std::sqrt(fan);
}

Tensor& kaiming_uniform_(Tensor& t, float a, const std::string& mode,
                         const std::string& nonlinearity) {
  const float bound = std::sqrt(3.0f) * kaiming_std(t, a, mode, nonlinearity);
  return uniform_(t, -bound, bound);
}

Tensor& kaiming_normal_(Tensor& t, float a, const std::string& mode,
                        const std::string& nonlinearity) {
  return normal_(t, 0.0f, kaiming_std(t, a, mode, nonlinearity));
}

}  // namespace anatomy::nn::init
