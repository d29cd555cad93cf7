// Registers every fast kernel of this folder with the core (autograd/dispatch.hpp) when the
// program starts. nn/CMakeLists.txt links this library whole, so this file's static
// initializer runs in every program that links anatomy::kernels, though nothing calls into it.
namespace anatomy {

void register_attention_kernels();
void register_clip_grad_kernels();
void register_data_parallel_kernels();
void register_elementwise_kernels();
void register_functional_kernels();
void register_linalg_kernels();
void register_optimizer_kernels();
void register_reduction_kernels();
void register_tensor_kernels();

namespace {

const bool registered = [] {
  register_attention_kernels();
  register_clip_grad_kernels();
  register_data_parallel_kernels();
  register_elementwise_kernels();
  register_functional_kernels();
  register_linalg_kernels();
  register_optimizer_kernels();
  register_reduction_kernels();
  register_tensor_kernels();
  return true;
}();

}  // namespace

}  // namespace anatomy
