// Inception-v3 as torchvision's inception_v3 with aux_logits off (paper section 6.1: batch 64 per
// device, 299x299 images). Every convolution is a BasicConv2d: Conv2D without bias, BatchNorm
// (epsilon 0.001, as torchvision) and a separate Relu node. Blocks: Mixed_5b-5d (InceptionA),
// 6a (B), 6b-6e (C), 7a (D), 7b-7c (E, whose 3x3 branches split into 1x3 and 3x1 convolutions that
// are concatenated inside the branch). 94 convolutions, 15 Concats (11 blocks + 4 inside the E
// blocks), 23,834,568 parameters. The dropout before the classifier is left out: it changes no
// shape or parameter, and a deterministic graph lets a run be checked against a one-rank reference.
#include "zoo/zoo_models.h"

namespace unity::zoo::detail {
namespace {

using Ints = std::vector<std::int64_t>;

// torchvision's BasicConv2d; `name` is its module path ("Mixed_5b.branch1x1").
TensorRef basic_conv(GraphBuilder& b, TensorRef x, std::int64_t out, Ints kernel,
                     const std::string& name, Ints stride = {1, 1}, Ints padding = {0, 0}) {
  x = b.conv2d(x, out, std::move(kernel), std::move(stride), std::move(padding), name + ".conv");
  x = b.batch_norm(x, name + ".bn", /*relu=*/false);
  b.graph().mutable_node(x.node).op.attrs.set("epsilon", 0.001);
  return b.relu(x, name + ".relu");
}

// The 3x3 stride-1 average pool in front of the pool branches (count_include_pad, as torchvision).
TensorRef same_avg_pool(GraphBuilder& b, TensorRef x, const std::string& name) {
  return b.avg_pool(x, {3, 3}, {1, 1}, {1, 1}, name);
}

TensorRef inception_a(GraphBuilder& b, TensorRef x, std::int64_t pool_features,
                      const std::string& n) {
  TensorRef b1 = basic_conv(b, x, 64, {1, 1}, n + ".branch1x1");
  TensorRef b5 = basic_conv(b, x, 48, {1, 1}, n + ".branch5x5_1");
  b5 = basic_conv(b, b5, 64, {5, 5}, n + ".branch5x5_2", {1, 1}, {2, 2});
  TensorRef b3 = basic_conv(b, x, 64, {1, 1}, n + ".branch3x3dbl_1");
  b3 = basic_conv(b, b3, 96, {3, 3}, n + ".branch3x3dbl_2", {1, 1}, {1, 1});
  b3 = basic_conv(b, b3, 96, {3, 3}, n + ".branch3x3dbl_3", {1, 1}, {1, 1});
  TensorRef bp = same_avg_pool(b, x, n + ".branch_pool.avg_pool");
  bp = basic_conv(b, bp, pool_features, {1, 1}, n + ".branch_pool");
  return b.concat({b1, b5, b3, bp}, 1, n + ".concat");
}

TensorRef inception_b(GraphBuilder& b, TensorRef x, const std::string& n) {
  TensorRef b3 = basic_conv(b, x, 384, {3, 3}, n + ".branch3x3", {2, 2});
  TensorRef bd = basic_conv(b, x, 64, {1, 1}, n + ".branch3x3dbl_1");
  bd = basic_conv(b, bd, 96, {3, 3}, n + ".branch3x3dbl_2", {1, 1}, {1, 1});
  bd = basic_conv(b, bd, 96, {3, 3}, n + ".branch3x3dbl_3", {2, 2});
  TensorRef bp = b.max_pool(x, {3, 3}, {2, 2}, {0, 0}, n + ".branch_pool");
  return b.concat({b3, bd, bp}, 1, n + ".concat");
}

TensorRef inception_c(GraphBuilder& b, TensorRef x, std::int64_t c7, const std::string& n) {
  const Ints k1x7 = {1, 7}, p1x7 = {0, 3}, k7x1 = {7, 1}, p7x1 = {3, 0};
  TensorRef b1 = basic_conv(b, x, 192, {1, 1}, n + ".branch1x1");
  TensorRef b7 = basic_conv(b, x, c7, {1, 1}, n + ".branch7x7_1");
  b7 = basic_conv(b, b7, c7, k1x7, n + ".branch7x7_2", {1, 1}, p1x7);
  b7 = basic_conv(b, b7, 192, k7x1, n + ".branch7x7_3", {1, 1}, p7x1);
  TensorRef bd = basic_conv(b, x, c7, {1, 1}, n + ".branch7x7dbl_1");
  bd = basic_conv(b, bd, c7, k7x1, n + ".branch7x7dbl_2", {1, 1}, p7x1);
  bd = basic_conv(b, bd, c7, k1x7, n + ".branch7x7dbl_3", {1, 1}, p1x7);
  bd = basic_conv(b, bd, c7, k7x1, n + ".branch7x7dbl_4", {1, 1}, p7x1);
  bd = basic_conv(b, bd, 192, k1x7, n + ".branch7x7dbl_5", {1, 1}, p1x7);
  TensorRef bp = same_avg_pool(b, x, n + ".branch_pool.avg_pool");
  bp = basic_conv(b, bp, 192, {1, 1}, n + ".branch_pool");
  return b.concat({b1, b7, bd, bp}, 1, n + ".concat");
}

TensorRef inception_d(GraphBuilder& b, TensorRef x, const std::string& n) {
  TensorRef b3 = basic_conv(b, x, 192, {1, 1}, n + ".branch3x3_1");
  b3 = basic_conv(b, b3, 320, {3, 3}, n + ".branch3x3_2", {2, 2});
  TensorRef b7 = basic_conv(b, x, 192, {1, 1}, n + ".branch7x7x3_1");
  b7 = basic_conv(b, b7, 192, {1, 7}, n + ".branch7x7x3_2", {1, 1}, {0, 3});
  b7 = basic_conv(b, b7, 192, {7, 1}, n + ".branch7x7x3_3", {1, 1}, {3, 0});
  b7 = basic_conv(b, b7, 192, {3, 3}, n + ".branch7x7x3_4", {2, 2});
  TensorRef bp = b.max_pool(x, {3, 3}, {2, 2}, {0, 0}, n + ".branch_pool");
  return b.concat({b3, b7, bp}, 1, n + ".concat");
}

// A 1x3 and a 3x1 convolution of the same input, concatenated (InceptionE's expanded 3x3).
TensorRef split_3x3(GraphBuilder& b, TensorRef x, const std::string& a, const std::string& c,
                    const std::string& concat_name) {
  TensorRef left = basic_conv(b, x, 384, {1, 3}, a, {1, 1}, {0, 1});
  TensorRef right = basic_conv(b, x, 384, {3, 1}, c, {1, 1}, {1, 0});
  return b.concat({left, right}, 1, concat_name);
}

TensorRef inception_e(GraphBuilder& b, TensorRef x, const std::string& n) {
  TensorRef b1 = basic_conv(b, x, 320, {1, 1}, n + ".branch1x1");
  TensorRef b3 = basic_conv(b, x, 384, {1, 1}, n + ".branch3x3_1");
  b3 = split_3x3(b, b3, n + ".branch3x3_2a", n + ".branch3x3_2b", n + ".branch3x3.concat");
  TensorRef bd = basic_conv(b, x, 448, {1, 1}, n + ".branch3x3dbl_1");
  bd = basic_conv(b, bd, 384, {3, 3}, n + ".branch3x3dbl_2", {1, 1}, {1, 1});
  bd = split_3x3(b, bd, n + ".branch3x3dbl_3a", n + ".branch3x3dbl_3b", n + ".branch3x3dbl.concat");
  TensorRef bp = same_avg_pool(b, x, n + ".branch_pool.avg_pool");
  bp = basic_conv(b, bp, 192, {1, 1}, n + ".branch_pool");
  return b.concat({b1, b3, bd, bp}, 1, n + ".concat");
}

}  // namespace

void build_inception_v3(GraphBuilder& b, std::int64_t batch) {
  TensorRef x = b.input("image", {batch, 3, 299, 299});
  TensorRef labels = b.input("label", {batch}, DataType::Int64);

  x = basic_conv(b, x, 32, {3, 3}, "Conv2d_1a_3x3", {2, 2});          // 149x149
  x = basic_conv(b, x, 32, {3, 3}, "Conv2d_2a_3x3");                  // 147x147
  x = basic_conv(b, x, 64, {3, 3}, "Conv2d_2b_3x3", {1, 1}, {1, 1});  // 147x147
  x = b.max_pool(x, {3, 3}, {2, 2}, {0, 0}, "maxpool1");              // 73x73
  x = basic_conv(b, x, 80, {1, 1}, "Conv2d_3b_1x1");                  // 73x73
  x = basic_conv(b, x, 192, {3, 3}, "Conv2d_4a_3x3");                 // 71x71
  x = b.max_pool(x, {3, 3}, {2, 2}, {0, 0}, "maxpool2");              // 35x35

  x = inception_a(b, x, 32, "Mixed_5b");  // 256 channels
  x = inception_a(b, x, 64, "Mixed_5c");  // 288
  x = inception_a(b, x, 64, "Mixed_5d");  // 288
  x = inception_b(b, x, "Mixed_6a");      // 768, 17x17
  x = inception_c(b, x, 128, "Mixed_6b");
  x = inception_c(b, x, 160, "Mixed_6c");
  x = inception_c(b, x, 160, "Mixed_6d");
  x = inception_c(b, x, 192, "Mixed_6e");
  x = inception_d(b, x, "Mixed_7a");  // 1280, 8x8
  x = inception_e(b, x, "Mixed_7b");  // 2048
  x = inception_e(b, x, "Mixed_7c");  // 2048

  x = b.global_avg_pool(x, "avgpool");
  x = b.flatten(x, "flatten");
  x = b.linear(x, 1000, "fc");
  b.softmax_cross_entropy(x, labels, "loss");
}

}  // namespace unity::zoo::detail
