#pragma once
// State of one import: what every ONNX value has become so far. A value is either a tensor of our
// Graph (an activation, or a constant that an operator consumed as a tensor and that was therefore
// turned into a source node) or a constant the importer knows (an initializer not read yet, or
// folded values). Constants turn into source nodes only when an operator needs them as tensors, so
// epsilons, exponents and shape arithmetic never show up in the graph. A parameter (a floating
// initializer, or values folded from one) becomes a Weight, trained from fresh values; any other
// constant (a Constant node, an integer initializer, values folded from those and from shapes:
// positions, masks, grids, index lists) becomes a Constant holding its values.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "onnx/const_tensor.h"
#include "onnx/onnx_model_reader.h"
#include "unity/core/pcg/graph.h"

namespace unity::onnxio {

// A Slice (or a Gather of one index) of an activation, emitted as a Split whose piece
// `piece_output` is the slice. Slices of one tensor along one axis are merged into a single Split
// after the import (see merge_slices), which is how attention exports cut q, k and v apart.
struct SliceRecord {
  NodeId split = -1;
  TensorRef source;
  int axis = 0;
  std::int64_t start = 0;
  std::int64_t end = 0;
  int piece_output = 0;
  std::string name;
};

class ImportContext {
 public:
  ImportContext(const OnnxModel& model, Graph& graph) : model_(model), graph_(graph) {}

  const OnnxModel& model() const { return model_; }
  Graph& graph() { return graph_; }

  bool known(const std::string& value) const {
    return values_.count(value) != 0 || sequences_.count(value) != 0;
  }
  bool is_constant(const std::string& value) const;   // an initializer or folded values
  bool is_scalar_constant(const std::string& value);  // a constant of one element
  bool is_tensor(const std::string& value) const;     // already a Graph tensor
  // A parameter of the model: a floating-point initializer, or values folded from one.
  bool is_parameter(const std::string& value) const;
  // The constant's values (reads an initializer on first use). Throws InputError for activations.
  const ConstTensor& constant(const std::string& value);
  std::vector<std::int64_t> dims(const std::string& value) const;
  int elem_type(const std::string& value) const;  // ONNX element type
  std::int64_t rank(const std::string& value) const {
    return static_cast<std::int64_t>(dims(value).size());
  }

  // The value as a Graph tensor; a constant becomes a Weight or Constant node named after the value
  // (shared by all its tensor uses). `dims` reshapes it (same element count), e.g. a [1, out] Gemm
  // bias.
  TensorRef tensor(const std::string& value);
  TensorRef weight(const std::string& value, const std::vector<std::int64_t>& dims);
  // A [out, in] constant as the [in, out] weight of a Linear (Gemm transB=1): same parameters.
  TensorRef transposed_weight(const std::string& value);

  void bind_tensor(const std::string& value, TensorRef tensor);
  // `parameter`: the values were folded from a parameter (a transposed or reshaped weight).
  void bind_constant(const std::string& value, ConstTensor constant, bool parameter = false);
  // Binds values the importer computes (a DFT matrix, an index tensor) under a fresh name starting
  // with `base`; returns the name.
  std::string fresh_constant(const std::string& base, ConstTensor constant);
  // `initializer`: one of the graph's initializers (a floating one is a parameter), not the tensor
  // of a Constant node.
  void bind_initializer(const std::string& value, const ::onnx::TensorProto* tensor,
                        bool initializer = true);
  // `to` is another name of `from` (Identity). A constant alias becomes its own Weight when used as
  // a tensor: exporters deduplicate equal-valued parameters behind Identity nodes, and those are
  // separate parameters in the model that was exported.
  void alias(const std::string& to, const std::string& from);

  // An ONNX sequence: a list of values known at import time, each a tensor or a constant (see
  // onnx_ops_control_flow.cpp).
  void bind_sequence(const std::string& value, std::vector<std::string> elements);
  bool is_sequence(const std::string& value) const { return sequences_.count(value) != 0; }
  // Throws InputError when `value` is not a sequence.
  const std::vector<std::string>& sequence(const std::string& value) const;
  // A value name no ONNX value of the model has, starting with `base`: for the values of nodes the
  // importer writes itself (an unrolled loop's iterations).
  std::string fresh_name(const std::string& base);
  // Counts the nodes imported from subgraphs (unrolled loops, inlined branches); returns the total.
  std::int64_t count_inlined_nodes(std::int64_t n) { return inlined_nodes_ += n; }

  // Adds an operator, naming it; returns its first output.
  TensorRef add(OpType type, Attributes attrs, std::vector<TensorRef> inputs,
                const std::string& name);
  NodeId add_node(OpType type, Attributes attrs, std::vector<TensorRef> inputs,
                  const std::string& name);
  // A Reshape, or the tensor itself when it already has these sizes.
  TensorRef reshape(TensorRef x, const std::vector<std::int64_t>& sizes, const std::string& name);
  // A Transpose, or the tensor itself when `perm` keeps every dim in place.
  TensorRef transpose(TensorRef x, const std::vector<std::int64_t>& perm, const std::string& name);
  // Piece [start, end) of x along axis (the whole tensor when that is everything).
  TensorRef slice(TensorRef x, int axis, std::int64_t start, std::int64_t end,
                  const std::string& name);

  std::vector<std::int64_t> sizes(TensorRef t) const { return graph_.shape(t).sizes(); }

  // A zero Pad before a Conv or pooling is folded into the consumer's padding: the Pad's output is
  // bound to its input, and the consumer adds these [h, w] pads to its own.
  void set_extra_padding(const std::string& value, std::vector<std::int64_t> hw) {
    extra_padding_[value] = std::move(hw);
  }
  std::vector<std::int64_t> extra_padding(const std::string& value) const {
    auto it = extra_padding_.find(value);
    return it == extra_padding_.end() ? std::vector<std::int64_t>{0, 0} : it->second;
  }

  // Nodes consumed by a recognised pattern: the import loop skips them.
  void cover(int node_index) { covered_.insert(node_index); }
  bool covered(int node_index) const { return covered_.count(node_index) != 0; }

  const std::vector<SliceRecord>& slices() const { return slices_; }

  // Weight nodes holding an additive causal attention mask (see attention_masks.h).
  void note_causal_mask(NodeId weight) { causal_masks_.insert(weight); }
  bool is_causal_mask(NodeId weight) const { return causal_masks_.count(weight) != 0; }

 private:
  struct Value {
    std::optional<TensorRef> tensor;
    std::optional<ConstTensor> constant;
    const ::onnx::TensorProto* initializer = nullptr;
    std::vector<std::int64_t> dims;  // of a constant
    int elem_type = 1;
    bool parameter = false;  // see is_parameter
  };
  static std::shared_ptr<const TensorValues> values_of(const ConstTensor& c);
  const Value& value(const std::string& name) const;
  Value& value(const std::string& name);

  const OnnxModel& model_;
  Graph& graph_;
  std::map<std::string, Value> values_;
  std::map<std::pair<std::string, std::vector<std::int64_t>>, TensorRef> weights_;
  std::map<std::string, TensorRef> transposed_weights_;
  std::map<std::string, std::vector<std::int64_t>> extra_padding_;
  std::set<int> covered_;
  std::vector<SliceRecord> slices_;
  std::set<NodeId> causal_masks_;
  std::map<std::string, std::vector<std::string>> sequences_;
  std::int64_t fresh_count_ = 0;
  std::int64_t inlined_nodes_ = 0;
};

// Merges the Splits that cut one tensor along one axis into a single Split (see SliceRecord).
void merge_slices(ImportContext& ctx);
// Replaces each attention computed from its pieces (projections, head reshapes, scaled scores, an
// optional causal mask, softmax, output projection) by one MultiHeadAttention
// (attention_fusion.cpp).
void fuse_attention(ImportContext& ctx);
// Lets a Linear between a Reshape that flattens rows and one that restores them read the
// unflattened tensor, and drops the Reshape back (row_reshape_folding.cpp).
void fold_row_reshapes(ImportContext& ctx);

}  // namespace unity::onnxio
