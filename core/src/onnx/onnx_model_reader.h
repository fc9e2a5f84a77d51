#pragma once
// Loads an ONNX file and indexes it for the importer: who produces and who consumes each value,
// which values are initializers, which graph inputs are real inputs (older exporters also list the
// initializers as inputs), plus readers for tensors and node attributes.
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "onnx/const_tensor.h"
#include "unity/core/pcg/data_type.h"

namespace unity::onnxio {

struct ValueUse {
  int node;  // index into graph().node()
  int slot;  // which of its inputs
};

class OnnxModel {
 public:
  // Throws InputError naming the file when it cannot be read or is not an ONNX model.
  explicit OnnxModel(const std::filesystem::path& path);
  // The indexes point into the parsed protobuf, so the model stays where it was built.
  OnnxModel(const OnnxModel&) = delete;
  OnnxModel& operator=(const OnnxModel&) = delete;

  const ::onnx::GraphProto& graph() const { return model_.graph(); }
  const ::onnx::NodeProto& node(int index) const { return model_.graph().node(index); }
  int node_count() const { return model_.graph().node_size(); }
  std::int64_t opset() const { return opset_; }  // of the default (ai.onnx) domain

  const ::onnx::TensorProto* initializer(const std::string& name) const;
  int producer(const std::string& value) const;  // node index, -1 for inputs and initializers
  const std::vector<ValueUse>& consumers(const std::string& value) const;
  bool is_graph_output(const std::string& value) const { return outputs_.count(value) != 0; }
  // Graph inputs that are not initializers, in file order.
  std::vector<const ::onnx::ValueInfoProto*> real_inputs() const;

  // A value known without running anything: an initializer, a Constant node's tensor, or either
  // of those behind Identity nodes. Patterns use it to check epsilons and biases.
  std::optional<ConstTensor> static_value(const std::string& value) const;
  std::optional<std::vector<std::int64_t>> static_dims(const std::string& value) const;
  // The initializer or Constant tensor behind a static value; null for other values (and for
  // Constant nodes holding value_float/value_int).
  const ::onnx::TensorProto* static_tensor(const std::string& value) const;
  bool is_static(const std::string& value) const { return static_dims(value).has_value(); }
  // Single consumer that reads `value`, or -1 when there are none, several, or it is a graph
  // output.
  int sole_consumer(const std::string& value) const;

 private:
  ::onnx::ModelProto model_;
  std::int64_t opset_ = 1;
  std::map<std::string, const ::onnx::TensorProto*> initializers_;
  std::map<std::string, int> producers_;
  std::map<std::string, std::vector<ValueUse>> consumers_;
  std::set<std::string> outputs_;
};

// Reads the values of a tensor (raw_data or the typed fields). Throws InputError for external data
// and element types we cannot represent.
ConstTensor read_tensor(const ::onnx::TensorProto& tensor);
std::vector<std::int64_t> tensor_dims(const ::onnx::TensorProto& tensor);
// Our element type for an ONNX one; nullopt when we have none (strings, complex, ...).
std::optional<DataType> to_data_type(int onnx_elem_type);
std::string elem_type_name(int onnx_elem_type);

// Node attributes, with the ONNX defaults passed by the caller.
const ::onnx::AttributeProto* find_attribute(const ::onnx::NodeProto& node,
                                             const std::string& name);
std::int64_t attr_int(const ::onnx::NodeProto& node, const std::string& name,
                      std::int64_t fallback);
double attr_float(const ::onnx::NodeProto& node, const std::string& name, double fallback);
std::string attr_string(const ::onnx::NodeProto& node, const std::string& name,
                        const std::string& fallback);
std::optional<std::vector<std::int64_t>> attr_ints(const ::onnx::NodeProto& node,
                                                   const std::string& name);

// "Conv (node 'conv1')" for messages; nodes without a name are named by their first output.
std::string node_name(const ::onnx::NodeProto& node);
std::string describe_node(const ::onnx::NodeProto& node);
bool is_default_domain(const ::onnx::NodeProto& node);
// Input `slot` of the node, or "" when it is absent (ONNX marks skipped optional inputs with "").
const std::string& input_name(const ::onnx::NodeProto& node, int slot);

}  // namespace unity::onnxio
