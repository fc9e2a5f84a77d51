// unity::import_onnx: reads the file, rejects it up front when it uses operators we do not know
// (listing all of them at once, with the reason for those out of Unity's scope), creates the inputs
// with static sizes, then walks the nodes in file order (ONNX requires topological order):
// recognised patterns are emitted fused, constant nodes are folded, everything else is mapped to
// our operators, and Graph::add infers every shape. Afterwards, slices of one tensor merge into one
// Split and attention written out in pieces becomes one MultiHeadAttention (attention_fusion.cpp).
#include "unity/core/onnx/onnx_import.h"

#include <fnmatch.h>

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "onnx/constant_folding.h"
#include "onnx/import_context.h"
#include "onnx/onnx_model_reader.h"
#include "onnx/onnx_op_mapping.h"
#include "onnx/pattern_recognition.h"
#include "unity/core/errors.h"
#include "unity/core/onnx/onnx_operator_scope.h"

namespace unity {
namespace {

using namespace onnxio;

void reject_unsupported_ops(const OnnxModel& model, const std::filesystem::path& path) {
  struct Unsupported {
    std::string type;  // as the message names it: domain.Op outside the default domain
    std::string domain, op_type;
    std::string first_node;
    int count = 0;
  };
  std::vector<Unsupported> found;  // in order of first appearance
  for (int i = 0; i < model.node_count(); ++i) {
    const auto& node = model.node(i);
    if (is_supported_op(node)) continue;
    const std::string type =
        is_default_domain(node) ? node.op_type() : node.domain() + "." + node.op_type();
    auto it = std::find_if(found.begin(), found.end(),
                           [&](const Unsupported& u) { return u.type == type; });
    if (it == found.end())
      found.push_back({type, node.domain(), node.op_type(), node_name(node), 1});
    else
      ++it->count;
  }
  if (found.empty()) return;
  std::string list, out_of_scope;
  for (const auto& u : found) {
    if (!list.empty()) list += ", ";
    list += fmt::format("{} (node '{}'", u.type, u.first_node);
    if (u.count > 1) list += fmt::format(", and {} more", u.count - 1);
    list += ")";
    if (const OnnxOutOfScope* scope = onnx_out_of_scope(u.domain, u.op_type)) {
      out_of_scope += out_of_scope.empty() ? ". Out of Unity's scope: " : "; ";
      out_of_scope += fmt::format("{} ({}): {}", u.type, scope->category, scope->reason);
    }
  }
  throw InputError(
      fmt::format("'{}': unsupported ONNX operators: {}{}", path.string(), list, out_of_scope));
}

// Creates an Input node for every graph input that is not an initializer; returns the batch size.
std::int64_t add_inputs(ImportContext& ctx, const OnnxImportOptions& options,
                        const std::filesystem::path& path) {
  std::int64_t batch = 0;
  for (const auto* input : ctx.model().real_inputs()) {
    const std::string& name = input->name();
    if (!input->type().has_tensor_type() || !input->type().tensor_type().has_shape()) {
      throw InputError(
          fmt::format("'{}': input '{}' has no tensor shape; export the model with shapes",
                      path.string(), name));
    }
    const auto& type = input->type().tensor_type();
    const auto dtype = to_data_type(type.elem_type());
    if (!dtype) {
      throw InputError(
          fmt::format("'{}': input '{}' has element type {}, which Unity does not support",
                      path.string(), name, elem_type_name(type.elem_type())));
    }
    std::vector<std::int64_t> sizes;
    int batch_dim = -1;  // the symbolic dim, which is the batch
    for (int d = 0; d < type.shape().dim_size(); ++d) {
      const auto& dim = type.shape().dim(d);
      if (dim.has_dim_value() && dim.dim_value() > 0) {
        sizes.push_back(dim.dim_value());
        continue;
      }
      if (dim.has_dim_value() && dim.dim_value() == 0)
        throw InputError(fmt::format(
            "'{}': dimension {} of input '{}' has size 0: Unity's tensors hold at least one "
            "element in each dimension",
            path.string(), d, name));
      const std::string label =
          dim.has_dim_param() ? fmt::format("'{}'", dim.dim_param()) : "unknown";
      if (batch_dim >= 0) {
        throw InputError(
            fmt::format("'{}': dimensions {} and {} of input '{}' are both symbolic ({}); Unity "
                        "needs static sizes apart from the batch: export the model with a fixed "
                        "size",
                        path.string(), batch_dim, d, name, label));
      }
      if (options.batch_size <= 0) {
        throw InputError(
            fmt::format("'{}': input '{}' has a symbolic batch dimension ({}); give a batch "
                        "size (--batch N)",
                        path.string(), name, label));
      }
      batch_dim = d;
      sizes.push_back(options.batch_size);
    }
    if (batch_dim <= 0) {
      if (batch == 0 && !sizes.empty()) batch = sizes.front();
      ctx.bind_tensor(name, ctx.graph().add_input(name, sizes, *dtype));
      continue;
    }
    // A batch that is not the leading dim (a sequence-first RNN's [seq, batch]): Unity's inputs
    // hold the batch first, as data parallelism and the executor's data expect, and a Transpose
    // gives the model the layout it was exported with.
    std::vector<std::int64_t> leading{sizes[batch_dim]}, perm;
    for (int d = 0; d < static_cast<int>(sizes.size()); ++d)
      if (d != batch_dim) leading.push_back(sizes[d]);
    for (int d = 0; d < static_cast<int>(sizes.size()); ++d)
      perm.push_back(d == batch_dim ? 0 : (d < batch_dim ? d + 1 : d));
    if (batch == 0) batch = leading.front();
    const TensorRef batch_first = ctx.graph().add_input(name, leading, *dtype);
    ctx.bind_tensor(name,
                    ctx.add(OpType::Transpose, {{"perm", perm}}, {batch_first}, name + ".layout"));
  }
  return batch;
}

// The initializers, each a parameter (a floating one) unless options.constant_initializers names
// it.
void bind_initializers(ImportContext& ctx, const OnnxModel& model, const OnnxImportOptions& options,
                       const std::filesystem::path& path) {
  std::vector<bool> used(options.constant_initializers.size(), false);
  for (const auto& init : model.graph().initializer()) {
    bool constant = false;
    for (std::size_t p = 0; p < used.size(); ++p)
      if (fnmatch(options.constant_initializers[p].c_str(), init.name().c_str(), 0) == 0)
        constant = used[p] = true;
    ctx.bind_initializer(init.name(), &init, !constant);
  }
  for (std::size_t p = 0; p < used.size(); ++p) {
    if (used[p]) continue;
    std::vector<std::string> names;
    for (const auto& init : model.graph().initializer()) names.push_back(init.name());
    if (names.size() > 12) {
      names.resize(12);
      names.push_back("...");
    }
    throw InputError(
        fmt::format("'{}': constant initializer '{}' matches no initializer of the "
                    "model ({})",
                    path.string(), options.constant_initializers[p],
                    names.empty() ? "it has none" : fmt::format("{}", fmt::join(names, ", "))));
  }
}

// An output that no operator computes (a model input passed through, a shape or mask folded to a
// constant) is read through an Identity named after it (a Cast to its own type for integers and
// masks, which Identity does not take), so that it is a result of the graph like the others;
// dropped, the model would lose an output. A parameter stays a Weight and is no result.
void give_outputs_an_operator(ImportContext& ctx, const OnnxModel& model) {
  Graph& g = ctx.graph();
  for (const auto& output : model.graph().output()) {
    const std::string& name = output.name();
    if (!ctx.known(name) || ctx.is_sequence(name) || ctx.is_parameter(name)) continue;
    if (ctx.is_tensor(name)) {
      const OpType producer = g.node(ctx.tensor(name).node).op.type;
      if (producer != OpType::Input && producer != OpType::Constant) continue;
    } else if (!to_data_type(ctx.elem_type(name))) {
      continue;  // a type no tensor holds (a string)
    }
    const TensorRef t = ctx.tensor(name);
    const DataType type = g.shape(t).dtype;
    ctx.bind_tensor(name,
                    is_floating(type)
                        ? ctx.add(OpType::Identity, {}, {t}, name)
                        : ctx.add(OpType::Cast, {{"to", std::string(to_string(type))}}, {t}, name));
  }
}

// Operators whose results nothing reads and that are no output of the model: what only a shape was
// taken from (an EyeLike's or a Shape's input computed for nothing else), a piece of a recurrent
// layer its first step never reads. Left in, each would be a sink of the graph, taken for one of
// the model's outputs (and given a loss). The model's inputs stay: they are its interface.
void remove_dead_operators(ImportContext& ctx, const OnnxModel& model) {
  std::set<NodeId> outputs;
  for (const auto& output : model.graph().output())
    if (ctx.known(output.name()) && ctx.is_tensor(output.name()))
      outputs.insert(ctx.tensor(output.name()).node);
  Graph& g = ctx.graph();
  for (bool removed = true; removed;) {
    removed = false;
    std::vector<NodeId> dead;
    for (const auto& [id, n] : g.nodes())
      if (n.op.type != OpType::Input && !outputs.count(id) && g.uses(id).empty())
        dead.push_back(id);
    for (const NodeId id : dead) g.remove(id);
    removed = !dead.empty();
  }
}

std::string with_context(const std::filesystem::path& path, const ::onnx::NodeProto& node,
                         const char* what) {
  const std::string where = describe_node(node);
  std::string message = what;
  if (message.find(where) == std::string::npos) message = where + ": " + message;
  return fmt::format("'{}': {}", path.string(), message);
}

}  // namespace

namespace onnxio {

void import_node(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t opset) {
  const std::string& op = node.op_type();
  if (op == "Identity" && is_default_domain(node)) {
    ctx.alias(node.output(0), node.input(0));
    return;
  }
  if (is_shape_query_op(op)) {
    ctx.bind_constant(node.output(0), fold_shape_query(node, ctx.dims(node.input(0)),
                                                       ctx.elem_type(node.input(0))));
    return;
  }
  // Expanding a parameter (ViT's class token, one per image) must not fold: the copies would become
  // separate parameters, each trained on its own image, where the model has one.
  const bool expands_parameter = op == "Expand" && ctx.is_parameter(node.input(0));
  if (is_foldable_op(op) && !expands_parameter) {
    bool all_constant = true;
    std::int64_t elements = 0;
    for (const auto& input : node.input()) {
      if (input.empty()) continue;
      all_constant = all_constant && ctx.is_constant(input);
      if (all_constant) elements += product(ctx.dims(input));
    }
    if (all_constant && elements <= kMaxFoldElements) {
      std::vector<const ConstTensor*> inputs;
      bool from_parameter = false;
      for (const auto& input : node.input()) {
        inputs.push_back(input.empty() ? nullptr : &ctx.constant(input));
        from_parameter = from_parameter || (!input.empty() && ctx.is_parameter(input));
      }
      if (auto outputs = fold_node(node, inputs, opset)) {
        for (std::size_t i = 0; i < outputs->size() && static_cast<int>(i) < node.output_size();
             ++i) {
          ctx.bind_constant(node.output(static_cast<int>(i)), std::move((*outputs)[i]),
                            from_parameter);
        }
        return;
      }
    }
  }
  map_node(ctx, node, opset);
}

}  // namespace onnxio

Graph import_onnx(const std::filesystem::path& path, const OnnxImportOptions& options) {
  const OnnxModel model(path);
  reject_unsupported_ops(model, path);

  Graph graph;
  graph.name = path.stem().string();
  ImportContext ctx(model, graph);
  bind_initializers(ctx, model, options, path);
  const std::int64_t batch = add_inputs(ctx, options, path);

  const auto patterns = find_patterns(model);
  for (int i = 0; i < model.node_count(); ++i) {
    if (ctx.covered(i)) continue;
    const auto& node = model.node(i);
    try {
      if (auto it = patterns.find(i); it != patterns.end() && emit_pattern(ctx, it->second))
        continue;
      import_node(ctx, node, model.opset());
    } catch (const ShapeError& e) {
      throw ShapeError(with_context(path, node, e.what()));
    } catch (const GraphError& e) {
      throw GraphError(with_context(path, node, e.what()));
    } catch (const InputError& e) {
      throw InputError(with_context(path, node, e.what()));
    }
  }
  // Before the rewrites below, while every output's name still leads to its operator.
  give_outputs_an_operator(ctx, model);
  remove_dead_operators(ctx, model);
  merge_slices(ctx);
  fuse_attention(ctx);
  fold_row_reshapes(ctx);

  for (const auto& output : model.graph().output()) {
    if (!ctx.known(output.name())) {
      throw InputError(fmt::format("'{}': graph output '{}' is produced by no node", path.string(),
                                   output.name()));
    }
  }
  graph.batch_size = batch;
  graph.validate();
  return graph;
}

}  // namespace unity
