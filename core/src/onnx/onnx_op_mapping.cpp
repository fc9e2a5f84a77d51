#include "onnx/onnx_op_mapping.h"

#include <cstdio>
#include <cstdlib>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "onnx/constant_folding.h"
#include "unity/core/errors.h"

namespace unity::onnxio {

namespace {

std::vector<void (*)(OnnxImports&)>& registered_imports() {
  static std::vector<void (*)(OnnxImports&)> files;
  return files;
}

const OnnxImports& handlers() {
  static const OnnxImports table = [] {
    OnnxImports all;
    for (auto add : registered_imports()) {
      OnnxImports mine;
      add(mine);
      for (auto& [type, handler] : mine) {
        if (!all.emplace(type, handler).second) {
          // Two import files claim one ONNX type: which one runs would depend on link order.
          std::fprintf(stderr, "unity: two ONNX imports registered for %s\n", type.c_str());
          std::abort();
        }
      }
    }
    return all;
  }();
  return table;
}

}  // namespace

OnnxImportRegistration::OnnxImportRegistration(void (*add)(OnnxImports& table)) {
  registered_imports().push_back(add);
}

bool is_supported_op(const ::onnx::NodeProto& node) {
  return is_default_domain(node) && is_supported_op_type(node.op_type());
}

bool is_supported_op_type(std::string_view op) {
  return op == "Identity" || handlers().count(std::string(op)) != 0 || is_foldable_op(op);
}

void map_node(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t opset) {
  auto it = handlers().find(node.op_type());
  if (it == handlers().end()) {
    // Only constant-computing ops get here: one of their inputs depends on the model's inputs.
    std::string computed;
    for (const auto& input : node.input()) {
      if (!input.empty() && ctx.is_tensor(input)) {
        computed = input;
        break;
      }
    }
    // Where the input's values are the output's shape (ConstantOfShape's shape, Range's bounds,
    // Tile's repeats), computing them makes the output's size depend on the model's data.
    const std::string& op = node.op_type();
    for (int slot = 0; slot < node.input_size(); ++slot) {
      const std::string& input = node.input(slot);
      const bool sets_shape =
          op == "ConstantOfShape" || op == "Range" || (op == "Tile" && slot == 1);
      if (sets_shape && !input.empty() && ctx.is_tensor(input)) {
        unsupported_use(node, fmt::format("input '{}' sets the output's shape and is computed from "
                                          "the model's inputs: a data-dependent output shape, "
                                          "which a static plan cannot lay out",
                                          input));
      }
    }
    unsupported_use(node,
                    fmt::format("supported only on constants, but input '{}' is computed from the "
                                "model's inputs",
                                computed));
  }
  it->second(ctx, node, opset);
}

void require_only_first_output(const ImportContext& ctx, const ::onnx::NodeProto& node) {
  for (int i = 1; i < node.output_size(); ++i) {
    const std::string& out = node.output(i);
    if (out.empty()) continue;
    if (!ctx.model().consumers(out).empty() || ctx.model().is_graph_output(out)) {
      unsupported_use(node,
                      fmt::format("its output #{} ('{}') is used, and Unity's operator has only "
                                  "the first output",
                                  i, out));
    }
  }
}

void unsupported_use(const ::onnx::NodeProto& node, const std::string& why) {
  throw InputError(fmt::format("{}: {}", describe_node(node), why));
}

// A constant input that sets the output's size.
std::int64_t size_constant(ImportContext& ctx, const ::onnx::NodeProto& node, int slot,
                           const char* what) {
  const std::string& value = input_name(node, slot);
  if (value.empty()) unsupported_use(node, fmt::format("the {} input is missing", what));
  if (!ctx.is_constant(value))
    unsupported_use(node, fmt::format("input '{}' ({}) sets the output's shape and is computed "
                                      "from the model's inputs: a data-dependent output shape, "
                                      "which a static plan cannot lay out",
                                      value, what));
  const ConstTensor& c = ctx.constant(value);
  if (c.numel() != 1)
    unsupported_use(
        node, fmt::format("input '{}' ({}) holds {} values, not one", value, what, c.numel()));
  return static_cast<std::int64_t>(c.as_double(0));
}

void require_constant_size(const ::onnx::NodeProto& node, const char* what,
                           const std::vector<std::int64_t>& dims) {
  std::int64_t n = 1;
  for (std::int64_t d : dims)
    if (d < 0 || __builtin_mul_overflow(n, d, &n) || n > kMaxFoldElements)
      unsupported_use(node, fmt::format("its {} of {} would hold more than {} values", what,
                                        fmt::join(dims, " x "), kMaxFoldElements));
}

}  // namespace unity::onnxio
