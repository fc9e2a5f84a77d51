// ONNX's GroupNormalization (opset 18: scale and bias per group; opset 21: per channel), imported
// as a LayerNorm of the grouped view and the affine Mul and Add, evaluated by the executor against
// the operator's definition computed here. libonnx-testdata has no GroupNormalization tests yet.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "executor_test_support.h"
#include "unity/core/onnx/onnx_import.h"
#include "unity/executor/communicator.h"
#include "unity/executor/device_backend.h"
#include "unity/executor/program.h"
#include "unity/executor/training.h"

namespace unity::executor {
namespace {

namespace fs = std::filesystem;

constexpr int kN = 2, kC = 4, kH = 2, kW = 3, kGroups = 2;
constexpr double kEpsilon = 1e-3;

void add_input(onnx::GraphProto& g, const std::string& name,
               const std::vector<std::int64_t>& dims) {
  auto* in = g.add_input();
  in->set_name(name);
  auto* type = in->mutable_type()->mutable_tensor_type();
  type->set_elem_type(onnx::TensorProto::FLOAT);
  for (std::int64_t d : dims) type->mutable_shape()->add_dim()->set_dim_value(d);
}

// y = GroupNormalization(x, scale, bias) with every operand a graph input, so the test feeds them.
fs::path group_norm_model(int opset) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(opset);
  auto* g = m.mutable_graph();
  g->set_name("group_norm");
  const std::int64_t affine = opset < 21 ? kGroups : kC;
  add_input(*g, "x", {kN, kC, kH, kW});
  add_input(*g, "scale", {affine});
  add_input(*g, "bias", {affine});
  auto* n = g->add_node();
  n->set_op_type("GroupNormalization");
  n->set_name("norm");
  for (const char* i : {"x", "scale", "bias"}) n->add_input(i);
  n->add_output("y");
  auto* groups = n->add_attribute();
  groups->set_name("num_groups");
  groups->set_type(onnx::AttributeProto::INT);
  groups->set_i(kGroups);
  auto* eps = n->add_attribute();
  eps->set_name("epsilon");
  eps->set_type(onnx::AttributeProto::FLOAT);
  eps->set_f(static_cast<float>(kEpsilon));
  g->add_output()->set_name("y");
  const fs::path path =
      fs::temp_directory_path() /
      ("unity-group-norm-" + std::to_string(getpid()) + "-" + std::to_string(opset) + ".onnx");
  std::ofstream out(path, std::ios::binary);
  m.SerializeToOstream(&out);
  return path;
}

HostTensor filled(std::vector<std::int64_t> shape, float start, float step) {
  HostTensor t;
  t.shape = std::move(shape);
  std::size_t n = 1;
  for (auto d : t.shape) n *= static_cast<std::size_t>(d);
  for (std::size_t i = 0; i < n; ++i)
    t.values.push_back(start + step * static_cast<float>((i * 7) % 11) +
                       0.25f * static_cast<float>(i));
  return t;
}

class OnnxGroupNorm : public ::testing::TestWithParam<int> {};

TEST_P(OnnxGroupNorm, EqualsTheOperatorsDefinition) {
  const int opset = GetParam();
  const fs::path file = group_norm_model(opset);
  const Graph g = import_onnx(file);
  fs::remove(file);
  const std::int64_t affine = opset < 21 ? kGroups : kC;
  const HostTensor x = filled({kN, kC, kH, kW}, -1.0f, 0.3f);
  const HostTensor scale = filled({affine}, 0.5f, 0.7f);
  const HostTensor bias = filled({affine}, -0.2f, 0.4f);
  std::map<NodeId, HostTensor> given;
  for (const auto& [id, n] : g.nodes()) {
    if (n.op.type != OpType::Input) continue;
    if (n.op.name == "x") given[id] = x;
    if (n.op.name == "scale") given[id] = scale;
    if (n.op.name == "bias") given[id] = bias;
  }
  ASSERT_EQ(given.size(), 3u);
  const auto out = testing::evaluate_on_one_device(g, given);
  ASSERT_EQ(out.size(), 1u);
  const HostTensor& y = out.begin()->second;
  ASSERT_EQ(y.shape, (std::vector<std::int64_t>{kN, kC, kH, kW}));

  // Each (sample, group) normalised over its channels and positions, then scaled and shifted by
  // its group's (opset 18) or its channel's (opset 21) scale and bias.
  const int per_group = kC / kGroups * kH * kW;
  for (int n = 0; n < kN; ++n)
    for (int gr = 0; gr < kGroups; ++gr) {
      const int base = (n * kC + gr * (kC / kGroups)) * kH * kW;
      double mean = 0, var = 0;
      for (int i = 0; i < per_group; ++i) mean += x.values[base + i];
      mean /= per_group;
      for (int i = 0; i < per_group; ++i) var += std::pow(x.values[base + i] - mean, 2);
      var /= per_group;
      for (int i = 0; i < per_group; ++i) {
        const int channel = gr * (kC / kGroups) + i / (kH * kW);
        const int a = opset < 21 ? gr : channel;
        const double expected =
            (x.values[base + i] - mean) / std::sqrt(var + kEpsilon) * scale.values[a] +
            bias.values[a];
        EXPECT_NEAR(y.values[base + i], expected, 1e-4)
            << "n " << n << " group " << gr << " i " << i;
      }
    }
}

std::string opset_name(const ::testing::TestParamInfo<int>& p) {
  return "opset" + std::to_string(p.param);
}

INSTANTIATE_TEST_SUITE_P(Opsets, OnnxGroupNorm, ::testing::Values(18, 21), opset_name);

}  // namespace
}  // namespace unity::executor
