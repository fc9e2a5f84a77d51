// ResNeXt-50 (32x4d) exactly as torchvision's resnext50_32x4d (paper section 6.1: batch 64 per
// device, ImageNet 224x224): a 7x7/2 stem with BatchNorm, Relu and a 3x3/2 max pool; four stages of
// 3, 4, 6 and 3 bottleneck blocks; global average pool and a 2048->1000 Linear with bias. Every
// Relu is its own node and BatchNorm never carries a fused activation, so that the operator counts
// match an ONNX export of the torchvision model (53 Conv, 49 Relu, 16 Add, 1 MaxPool, 1
// GlobalAveragePool, 1 Gemm). Parameters: 25,028,904, counting BatchNorm scale and bias as
// torchvision does (running statistics are buffers, not parameters).
//
// Scaled (scaled_zoo.h): planes, blocks, image size and classes shrink; cardinality 32 is kept
// while the grouped width allows it (every group keeps at least one channel).
#include <algorithm>

#include "zoo/zoo_models.h"

namespace unity::zoo::detail {
namespace {

constexpr std::int64_t kGroups = 32;
constexpr std::int64_t kWidthPerGroup = 4;
constexpr std::int64_t kExpansion = 4;

TensorRef conv_bn(GraphBuilder& b, TensorRef x, std::int64_t out, std::int64_t kernel,
                  std::int64_t stride, std::int64_t groups, const std::string& conv_name,
                  const std::string& bn_name) {
  const std::int64_t pad = kernel / 2;
  x = b.conv2d(x, out, {kernel, kernel}, {stride, stride}, {pad, pad}, conv_name, groups);
  return b.batch_norm(x, bn_name, /*relu=*/false);
}

// torchvision's Bottleneck (v1.5: the stride sits on the grouped 3x3 conv). `name` is "layerS.B".
TensorRef bottleneck(GraphBuilder& b, TensorRef x, std::int64_t planes, std::int64_t stride,
                     bool project, const std::string& name) {
  // width = planes * (base_width / 64) * groups, as torchvision computes it (multiplied first, so
  // that a scaled model's few planes keep a width).
  const std::int64_t width = planes * kWidthPerGroup * kGroups / 64;
  const std::int64_t groups = std::min(kGroups, width);
  const std::int64_t out = planes * kExpansion;
  TensorRef y = conv_bn(b, x, width, 1, 1, 1, name + ".conv1", name + ".bn1");
  y = b.relu(y, name + ".relu1");
  y = conv_bn(b, y, width, 3, stride, groups, name + ".conv2", name + ".bn2");
  y = b.relu(y, name + ".relu2");
  y = conv_bn(b, y, out, 1, 1, 1, name + ".conv3", name + ".bn3");
  TensorRef shortcut = x;
  if (project) {
    shortcut = conv_bn(b, x, out, 1, stride, 1, name + ".downsample.0", name + ".downsample.1");
  }
  y = b.add(y, shortcut, name + ".add");
  return b.relu(y, name + ".relu3");
}

}  // namespace

void build_resnext50(GraphBuilder& b, std::int64_t batch, double scale) {
  const std::int64_t image = std::max<std::int64_t>(32, scaled_size(224, scale, 32) / 32 * 32);
  TensorRef x = b.input("image", {batch, 3, image, image});
  TensorRef labels = b.input("label", {batch}, DataType::Int64);

  x = b.conv2d(x, scaled_size(64, scale, 8), {7, 7}, {2, 2}, {3, 3}, "conv1");
  x = b.batch_norm(x, "bn1", /*relu=*/false);
  x = b.relu(x, "relu");
  x = b.max_pool(x, {3, 3}, {2, 2}, {1, 1}, "maxpool");

  struct Stage {
    std::int64_t planes, blocks, stride;
  };
  constexpr Stage kStages[] = {{64, 3, 1}, {128, 4, 2}, {256, 6, 2}, {512, 3, 2}};
  int stage_index = 1;
  for (const Stage& stage : kStages) {
    const std::int64_t planes = scaled_size(stage.planes, scale, 8);
    for (std::int64_t i = 0; i < scaled_size(stage.blocks, scale, 1); ++i) {
      const std::string name = "layer" + std::to_string(stage_index) + "." + std::to_string(i);
      // Only a stage's first block changes the channel count (and, after stage 1, the resolution),
      // so only it needs the 1x1 projection shortcut.
      x = bottleneck(b, x, planes, i == 0 ? stage.stride : 1, /*project=*/i == 0, name);
    }
    ++stage_index;
  }

  x = b.global_avg_pool(x, "avgpool");
  x = b.flatten(x, "flatten");
  x = b.linear(x, scaled_size(1000, scale, 10), "fc");
  b.softmax_cross_entropy(x, labels, "loss");
}

}  // namespace unity::zoo::detail
