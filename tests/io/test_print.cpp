// Printing matches PyTorch character for character (expected strings from torch 2.13's str()).
#include <fstream>

#include "helpers.hpp"

using namespace anatomy;

TEST_CASE("print: ids as the book shows them") {
  CHECK(to_string(tensor({{2051, 10029, 2066, 2019, 8612}})) ==
        "tensor([[ 2051, 10029,  2066,  2019,  8612]])");
}

TEST_CASE("print: grad_fn and requires_grad suffixes") {
  Tensor x = tensor({{1.0f, 2.0f, 0.5f}, {0.1f, -0.3f, 2.2f}}).requires_grad_();
  CHECK(to_string(softmax(x, -1)) ==
        "tensor([[0.2312, 0.6285, 0.1402],\n        [0.1017, 0.0681, 0.8302]], "
        "grad_fn=<SoftmaxBackward0>)");
  CHECK(to_string(tensor({1.5f, -2.25f, 3.0f}).requires_grad_()) ==
        "tensor([ 1.5000, -2.2500,  3.0000], requires_grad=True)");
}

TEST_CASE("print: integer-valued floats, scientific notation, scalars, infinities, empty") {
  CHECK(to_string(tril(ones({3, 3}))) ==
        "tensor([[1., 0., 0.],\n        [1., 1., 0.],\n        [1., 1., 1.]])");
  CHECK(to_string(tensor({1e-5f, 1.0f, 123456.0f})) ==
        "tensor([1.0000e-05, 1.0000e+00, 1.2346e+05])");
  CHECK(to_string(full({}, 0.5f)) == "tensor(0.5000)");
  CHECK(to_string(tensor({{0.5f, -INFINITY}, {1.25f, 2.0f}})) ==
        "tensor([[0.5000,   -inf],\n        [1.2500, 2.0000]])");
  CHECK(to_string(zeros({0, 3})) == "tensor([], size=(0, 3))");
  CHECK(to_string(zeros({0})) == "tensor([])");  // one dimension: torch names no size
  CHECK(to_string(Shape{1, 5, 768}) == "torch.Size([1, 5, 768])");
  CHECK(fmt::format("{}", Shape{1, 5, 5}) == "torch.Size([1, 5, 5])");
}

TEST_CASE("print: line wrapping at 80 columns") {
  CHECK(to_string(arange(30, kFloat32) / 3.0f) ==
        "tensor([0.0000, 0.3333, 0.6667, 1.0000, 1.3333, 1.6667, 2.0000, 2.3333, 2.6667,\n"
        "        3.0000, 3.3333, 3.6667, 4.0000, 4.3333, 4.6667, 5.0000, 5.3333, 5.6667,\n"
        "        6.0000, 6.3333, 6.6667, 7.0000, 7.3333, 7.6667, 8.0000, 8.3333, 8.6667,\n"
        "        9.0000, 9.3333, 9.6667])");
}

TEST_CASE("print: summarization of large tensors") {
  CHECK(to_string(arange(2000, kFloat32).reshape({2, 1000}) / 7.0f) ==
        "tensor([[0.0000e+00, 1.4286e-01, 2.8571e-01,  ..., 1.4243e+02, 1.4257e+02,\n"
        "         1.4271e+02],\n"
        "        [1.4286e+02, 1.4300e+02, 1.4314e+02,  ..., 2.8529e+02, 2.8543e+02,\n"
        "         2.8557e+02]])");
  std::vector<float> v(4 * 5 * 768);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 97) / 13.0f - 3.0f;
  const std::string s = to_string(from_vector(v, {4, 5, 768}));
  CHECK(s.substr(0, 73) ==
        "tensor([[[-3.0000, -2.9231, -2.8462,  ...,  3.6154,  3.6923,  3.7692],\n  ");
  CHECK(s.find("]],\n\n        [[ 1.3846,  1.4615,  1.5385,  ...,  0.5385,  0.6154,  0.6923],") !=
        std::string::npos);
  CHECK(s.ends_with("[ 0.2308,  0.3077,  0.3846,  ..., -0.6154, -0.5385, -0.4615]]])"));
}

TEST_CASE("graph: DOT export names ops and shapes") {
  Tensor x = randn({2, 3}).requires_grad_();
  x.set_name("x");
  Tensor y = softmax(x, -1).sum();
  const std::string dot = to_dot(y);
  CHECK(dot.starts_with("digraph"));
  CHECK(dot.find("SumBackward0\\n[]") != std::string::npos);  // x.sum(): PyTorch's name
  CHECK(dot.find("SoftmaxBackward0\\n[2, 3]") != std::string::npos);
  CHECK(dot.find("x\\n[2, 3]") != std::string::npos);
  y.backward();
  CHECK(to_dot(y).find("SoftmaxBackward0") != std::string::npos);  // kept after backward
  // save_dot writes the same text to a file (atomically: no .tmp is left behind).
  const std::string path = (anatomy::testing::temp_root() / "anatomy_graph_test.dot").string();
  save_dot(y, path);
  std::ifstream f(path);
  CHECK(std::string(std::istreambuf_iterator<char>(f), {}) == to_dot(y));
  CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
  std::filesystem::remove(path);
}

TEST_CASE("print: a suffix that would pass 80 columns goes on its own line, as in PyTorch") {
  Tensor x = tensor({100.0f, 101.1f, 102.2f, 103.3f, 104.4f}).requires_grad_();
  CHECK(to_string(x) ==
        "tensor([100.0000, 101.1000, 102.2000, 103.3000, 104.4000], requires_grad=True)");
  CHECK(to_string(x * 2.0f) ==
        "tensor([200.0000, 202.2000, 204.4000, 206.6000, 208.8000],\n"
        "       grad_fn=<MulBackward0>)");
}

TEST_CASE("print: a summarized tensor's width comes from every shown value, the edges' ends too") {
  // The widest value sits last among the first edge items, then first among the last ones.
  Tensor t = arange(2000, kFloat32) / 7.0f;
  t.data_ptr<float>()[2] = -12345.5f;
  CHECK(to_string(t) ==
        "tensor([ 0.0000e+00,  1.4286e-01, -1.2346e+04,  ...,  2.8529e+02,\n"
        "         2.8543e+02,  2.8557e+02])");
  CHECK(to_string(t.reshape({2, 1000})) ==
        "tensor([[ 0.0000e+00,  1.4286e-01, -1.2346e+04,  ...,  1.4243e+02,\n"
        "          1.4257e+02,  1.4271e+02],\n"
        "        [ 1.4286e+02,  1.4300e+02,  1.4314e+02,  ...,  2.8529e+02,\n"
        "          2.8543e+02,  2.8557e+02]])");
  Tensor u = arange(2000, kFloat32) / 7.0f;
  u.data_ptr<float>()[1997] = -12345.5f;
  CHECK(to_string(u) ==
        "tensor([ 0.0000e+00,  1.4286e-01,  2.8571e-01,  ..., -1.2346e+04,\n"
        "         2.8543e+02,  2.8557e+02])");
}

// Where summarizing starts: a dimension is cut only when it has more than 2 x edgeitems (6)
// entries, rows and columns alike (torch 2.13: 6 is shown whole, 8 is cut).
TEST_CASE("print: summarization cuts a dimension only past 2 x edgeitems, rows and columns alike") {
  CHECK(to_string(arange(1200, kFloat32).reshape({300, 4}) / 7.0f) ==
        "tensor([[0.0000e+00, 1.4286e-01, 2.8571e-01, 4.2857e-01],\n"
        "        [5.7143e-01, 7.1429e-01, 8.5714e-01, 1.0000e+00],\n"
        "        [1.1429e+00, 1.2857e+00, 1.4286e+00, 1.5714e+00],\n"
        "        ...,\n"
        "        [1.6971e+02, 1.6986e+02, 1.7000e+02, 1.7014e+02],\n"
        "        [1.7029e+02, 1.7043e+02, 1.7057e+02, 1.7071e+02],\n"
        "        [1.7086e+02, 1.7100e+02, 1.7114e+02, 1.7129e+02]])");
  CHECK(to_string(arange(1200, kFloat32).reshape({200, 6}) / 7.0f) ==
        "tensor([[0.0000e+00, 1.4286e-01, 2.8571e-01, 4.2857e-01, 5.7143e-01, 7.1429e-01],\n"
        "        [8.5714e-01, 1.0000e+00, 1.1429e+00, 1.2857e+00, 1.4286e+00, 1.5714e+00],\n"
        "        [1.7143e+00, 1.8571e+00, 2.0000e+00, 2.1429e+00, 2.2857e+00, 2.4286e+00],\n"
        "        ...,\n"
        "        [1.6886e+02, 1.6900e+02, 1.6914e+02, 1.6929e+02, 1.6943e+02, 1.6957e+02],\n"
        "        [1.6971e+02, 1.6986e+02, 1.7000e+02, 1.7014e+02, 1.7029e+02, 1.7043e+02],\n"
        "        [1.7057e+02, 1.7071e+02, 1.7086e+02, 1.7100e+02, 1.7114e+02, 1.7129e+02]])");
  CHECK(to_string(arange(1200, kFloat32).reshape({6, 200}) / 7.0f) ==
        "tensor([[0.0000e+00, 1.4286e-01, 2.8571e-01,  ..., 2.8143e+01, 2.8286e+01,\n"
        "         2.8429e+01],\n"
        "        [2.8571e+01, 2.8714e+01, 2.8857e+01,  ..., 5.6714e+01, 5.6857e+01,\n"
        "         5.7000e+01],\n"
        "        [5.7143e+01, 5.7286e+01, 5.7429e+01,  ..., 8.5286e+01, 8.5429e+01,\n"
        "         8.5571e+01],\n"
        "        [8.5714e+01, 8.5857e+01, 8.6000e+01,  ..., 1.1386e+02, 1.1400e+02,\n"
        "         1.1414e+02],\n"
        "        [1.1429e+02, 1.1443e+02, 1.1457e+02,  ..., 1.4243e+02, 1.4257e+02,\n"
        "         1.4271e+02],\n"
        "        [1.4286e+02, 1.4300e+02, 1.4314e+02,  ..., 1.7100e+02, 1.7114e+02,\n"
        "         1.7129e+02]])");
  CHECK(to_string(arange(1600, kFloat32).reshape({8, 200}) / 7.0f) ==
        "tensor([[0.0000e+00, 1.4286e-01, 2.8571e-01,  ..., 2.8143e+01, 2.8286e+01,\n"
        "         2.8429e+01],\n"
        "        [2.8571e+01, 2.8714e+01, 2.8857e+01,  ..., 5.6714e+01, 5.6857e+01,\n"
        "         5.7000e+01],\n"
        "        [5.7143e+01, 5.7286e+01, 5.7429e+01,  ..., 8.5286e+01, 8.5429e+01,\n"
        "         8.5571e+01],\n"
        "        ...,\n"
        "        [1.4286e+02, 1.4300e+02, 1.4314e+02,  ..., 1.7100e+02, 1.7114e+02,\n"
        "         1.7129e+02],\n"
        "        [1.7143e+02, 1.7157e+02, 1.7171e+02,  ..., 1.9957e+02, 1.9971e+02,\n"
        "         1.9986e+02],\n"
        "        [2.0000e+02, 2.0014e+02, 2.0029e+02,  ..., 2.2814e+02, 2.2829e+02,\n"
        "         2.2843e+02]])");
}

// Two suffixes that each pass a narrow line (torch.set_printoptions(linewidth=32)): after the
// first wraps, the second is measured from the new line's indent plus the first suffix, so it
// wraps too; measured from the indent alone it would stay on the line.
TEST_CASE("print: after a wrapped suffix the next one counts from the new line, as in PyTorch") {
  struct Restore {
    int64_t linewidth = print_options().linewidth;
    ~Restore() { print_options().linewidth = linewidth; }
  } restore;
  print_options().linewidth = 32;
  Tensor x = zeros({0, 300000, 20000}).requires_grad_();
  CHECK(to_string(x * 2.0f) ==
        "tensor([],\n"
        "       size=(0, 300000, 20000),\n"
        "       grad_fn=<MulBackward0>)");
  CHECK(to_string(x) ==
        "tensor([],\n"
        "       size=(0, 300000, 20000),\n"
        "       requires_grad=True)");
  print_options().linewidth = 80;
  CHECK(to_string(x * 2.0f) == "tensor([], size=(0, 300000, 20000), grad_fn=<MulBackward0>)");
}
