// Slices with a step (Swin's patch merging takes x[:, 0::2, 1::2, :]): imported as a window seen
// as [count, step] and one column of it, the values equal numpy-style strided indexing.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

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

void add_ints(onnx::GraphProto& g, const std::string& name, const std::vector<std::int64_t>& v) {
  auto* t = g.add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(static_cast<std::int64_t>(v.size()));
  for (auto x : v) t->add_int64_data(x);
}

// y = x[:, starts[0]:ends[0]:steps[0], starts[1]:ends[1]:steps[1]] of x [2, 7, 6] (opset 13).
fs::path strided_slice_model(const std::vector<std::int64_t>& starts,
                             const std::vector<std::int64_t>& ends,
                             const std::vector<std::int64_t>& steps) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("strided");
  auto* in = g->add_input();
  in->set_name("x");
  auto* type = in->mutable_type()->mutable_tensor_type();
  type->set_elem_type(onnx::TensorProto::FLOAT);
  for (std::int64_t d : {2, 7, 6}) type->mutable_shape()->add_dim()->set_dim_value(d);
  add_ints(*g, "starts", starts);
  add_ints(*g, "ends", ends);
  add_ints(*g, "axes", {1, 2});
  add_ints(*g, "steps", steps);
  auto* n = g->add_node();
  n->set_op_type("Slice");
  n->set_name("slice");
  for (const char* i : {"x", "starts", "ends", "axes", "steps"}) n->add_input(i);
  n->add_output("y");
  g->add_output()->set_name("y");
  const fs::path path =
      fs::temp_directory_path() / ("unity-strided-" + std::to_string(getpid()) + "-" +
                                   std::to_string(starts[0]) + std::to_string(starts[1]) + ".onnx");
  std::ofstream out(path, std::ios::binary);
  m.SerializeToOstream(&out);
  return path;
}

TEST(OnnxStridedSlice, EveryStepthElementAsNumpyTakesIt) {
  struct Case {
    std::vector<std::int64_t> starts, ends, steps;
  };
  for (const Case& c : {Case{{0, 1}, {7, 6}, {2, 2}}, Case{{1, 0}, {100, 6}, {2, 3}},
                        Case{{2, 1}, {6, 5}, {3, 1}}}) {
    const fs::path file = strided_slice_model(c.starts, c.ends, c.steps);
    const Graph g = import_onnx(file);
    fs::remove(file);
    HostTensor x;
    x.shape = {2, 7, 6};
    for (int i = 0; i < 2 * 7 * 6; ++i) x.values.push_back(static_cast<float>(i));
    std::map<NodeId, HostTensor> given;
    for (const auto& [id, n] : g.nodes())
      if (n.op.type == OpType::Input) given[id] = x;
    const auto out = testing::evaluate_on_one_device(g, given);
    std::vector<float> expected;
    for (int b = 0; b < 2; ++b)
      for (std::int64_t i = c.starts[0]; i < std::min<std::int64_t>(c.ends[0], 7); i += c.steps[0])
        for (std::int64_t j = c.starts[1]; j < std::min<std::int64_t>(c.ends[1], 6);
             j += c.steps[1])
          expected.push_back(static_cast<float>(b * 42 + i * 6 + j));
    // The output is the slice's piece of the last Split (its other pieces are sinks too).
    const HostTensor* y = nullptr;
    for (const auto& [ref, t] : out)
      if (t.values.size() == expected.size() && t.values.front() == expected.front()) y = &t;
    ASSERT_NE(y, nullptr);
    EXPECT_EQ(y->values, expected);
  }
}

}  // namespace
}  // namespace unity::executor
