// The 2-layer MLP of the paper's Figure 1 with its MNIST sizes (b=64, ci=784, h=512, co=10).
// Neither Linear has a bias so that the weights are exactly the paper's c_i*h and h*c_o elements:
// data parallelism then all-reduces 2*(c_i*h + h*c_o) = 813,056 elements per iteration, the paper's
// number. MatMul and Relu stay separate nodes: whether to fuse them is the joint search's decision
// (Fig. 2).
#include "zoo/zoo_models.h"

namespace unity::zoo::detail {

void build_mnist_mlp(GraphBuilder& b, std::int64_t batch, double scale) {
  constexpr std::int64_t kIn = 28 * 28, kClasses = 10;
  const std::int64_t hidden = scaled_size(512, scale, 8);
  TensorRef x = b.input("image", {batch, kIn});
  TensorRef labels = b.input("label", {batch}, DataType::Int64);
  x = b.linear(x, hidden, "fc1", /*bias=*/false);
  x = b.relu(x, "relu1");
  x = b.linear(x, kClasses, "fc2", /*bias=*/false);
  b.softmax_cross_entropy(x, labels, "loss");
}

}  // namespace unity::zoo::detail
