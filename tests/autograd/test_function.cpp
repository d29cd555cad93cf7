// A user-defined op outside the library: forward and backward in one struct, gradchecked.
#include "helpers.hpp"

using namespace anatomy;

namespace {

// y = x³ (the example of docs/library.md).
struct Cube : Function<Cube> {
  static constexpr const char* name = "CubeBackward";
  static Tensor forward(Context& ctx, const Tensor& x) {
    ctx.save_for_backward({x});
    return x * x * x;
  }
  static std::vector<Tensor> backward(Context& ctx, const Tensor& grad) {
    const Tensor& x = ctx.saved()[0];
    return {grad * 3.0f * x * x};  // d(x³)/dx = 3x²
  }
};

// z = a·x + b with a scalar option, two tensor inputs and a non-tensor argument.
struct ScaledAdd : Function<ScaledAdd> {
  static Tensor forward(Context& ctx, const Tensor& x, const Tensor& b, float a) {
    ctx.data["a"] = a;
    return x * a + b;
  }
  static std::vector<Tensor> backward(Context& ctx, const Tensor& grad) {
    const float a = std::any_cast<float>(ctx.data["a"]);
    return {grad * a, sum_to(grad, {grad.size(-1)})};
  }
};

}  // namespace

TEST_CASE("custom Function: forward, backward, name and gradcheck") {
  manual_seed(0);
  Tensor x = randn({3, 4}).requires_grad_();
  Tensor y = Cube::apply(x);
  CHECK(y.grad_fn()->name == "CubeBackward");
  CHECK_CLOSE(y, x * x * x, 1e-6, 1e-6);
  auto result = gradcheck([](const std::vector<Tensor>& in) { return Cube::apply(in[0]); }, {x});
  CHECK_MESSAGE(result.ok, result.message);

  Tensor b = randn({4}).requires_grad_();
  auto r2 = gradcheck(
      [](const std::vector<Tensor>& in) { return ScaledAdd::apply(in[0], in[1], 2.5f); }, {x, b});
  CHECK_MESSAGE(r2.ok, r2.message);
  CHECK(ScaledAdd::apply(x, b, 1.0f).grad_fn()->name == "CustomFunctionBackward");
}
