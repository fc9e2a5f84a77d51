// The executor's kernels against ONNX's own backend test data (Debian's libonnx-testdata): every
// node test that Unity imports into at least one compute operator is evaluated with the test's
// inputs and compared with its expected outputs. Where a test feeds as inputs what Unity's
// operators take as attributes (Reshape's shape, Slice's bounds, ...) or reads outputs Unity's
// operators do not have (LayerNormalization's mean, ...), a copy of the model with those inputs
// made constant and only the first output is compared (adapt_model). Tests whose semantics Unity
// does not model (inference-mode BatchNormalization with given running statistics) are listed as
// known differences; every other op type that imports must pass all of its tests.
//
// The same walk makes the operator coverage report of docs/onnx.md (onnx_coverage_report.h): per
// op type, the tests, how many import, how many evaluate equal, and why the others do not. The test
// fails when the docs hold another report; UNITY_UPDATE_ONNX_COVERAGE=1 rewrites them.
#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>

#include "executor_test_support.h"
#include "onnx_coverage_report.h"
#include "unity/core/onnx/onnx_import.h"
#include "unity/core/onnx/onnx_operator_scope.h"
#include "unity/core/ops/operator_definition.h"
#include "unity/core/pcg/compute_dtype.h"
#include "unity/core/pcg/half_precision.h"
#include "unity/executor/communicator.h"
#include "unity/executor/device_backend.h"
#include "unity/executor/program.h"
#include "unity/executor/training.h"

using namespace unity;
using namespace unity::executor;
namespace fs = std::filesystem;

namespace {

fs::path data_root() {
  for (const char* p :
       {"/usr/share/libonnx-testdata/data/node", "/usr/share/onnx/backend/test/data/node",
        "/usr/include/onnx/backend/test/data/node"})
    if (fs::is_directory(p)) return p;
  return {};
}

// An integer tensor of element type T, widened to int64 as Unity holds it: raw_data, or ONNX's
// int32_data (types of 32 bits or fewer) or uint64_data (UINT32, UINT64).
template <typename T>
bool read_integers(const onnx::TensorProto& t, std::size_t n, HostTensor& out) {
  std::vector<T> values(n);
  const std::string& raw = t.raw_data();
  if (!raw.empty())
    std::memcpy(values.data(), raw.data(), std::min(raw.size(), n * sizeof(T)));
  else if (t.data_type() == onnx::TensorProto::UINT32 || t.data_type() == onnx::TensorProto::UINT64)
    for (std::size_t i = 0; i < n; ++i)
      values[i] = static_cast<T>(t.uint64_data(static_cast<int>(i)));
  else
    for (std::size_t i = 0; i < n; ++i)
      values[i] = static_cast<T>(t.int32_data(static_cast<int>(i)));
  out.integer = true;
  out.integers.assign(values.begin(), values.end());
  return true;
}

// Reads a tensor of the test data. Doubles are read as float32, as Unity imports them, integers
// of every width as int64 and bools as int64 0 and 1; other types leave `unread` their name.
bool read_tensor(const fs::path& file, HostTensor& out, std::string* unread = nullptr) {
  onnx::TensorProto t;
  std::ifstream in(file, std::ios::binary);
  if (!in || !t.ParseFromIstream(&in)) return false;
  out.shape.assign(t.dims().begin(), t.dims().end());
  std::size_t n = 1;
  for (auto d : out.shape) n *= static_cast<std::size_t>(d);
  const std::string& raw = t.raw_data();
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
      out.integer = false;
      out.values.resize(n);
      if (!raw.empty())
        std::memcpy(out.values.data(), raw.data(), std::min(raw.size(), n * 4));
      else
        for (std::size_t i = 0; i < n; ++i) out.values[i] = t.float_data(static_cast<int>(i));
      return true;
    case onnx::TensorProto::DOUBLE: {
      std::vector<double> values(n);
      if (!raw.empty())
        std::memcpy(values.data(), raw.data(), std::min(raw.size(), n * 8));
      else
        for (std::size_t i = 0; i < n; ++i) values[i] = t.double_data(static_cast<int>(i));
      out.integer = false;
      out.values.assign(values.begin(), values.end());
      return true;
    }
    case onnx::TensorProto::INT64:
      out.integer = true;
      out.integers.resize(n);
      if (!raw.empty())
        std::memcpy(out.integers.data(), raw.data(), std::min(raw.size(), n * 8));
      else
        for (std::size_t i = 0; i < n; ++i) out.integers[i] = t.int64_data(static_cast<int>(i));
      return true;
    case onnx::TensorProto::BOOL: {
      // One byte an element; Unity holds masks as integers 0 and 1.
      std::vector<std::uint8_t> values(n);
      if (!raw.empty())
        std::memcpy(values.data(), raw.data(), std::min(raw.size(), n));
      else
        for (std::size_t i = 0; i < n; ++i) values[i] = t.int32_data(static_cast<int>(i)) != 0;
      out.integer = true;
      out.integers.assign(values.begin(), values.end());
      return true;
    }
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16: {
      // 16-bit patterns, in raw_data or one per int32_data entry; Unity computes them in float32.
      const bool half = t.data_type() == onnx::TensorProto::FLOAT16;
      out.integer = false;
      out.values.resize(n);
      for (std::size_t i = 0; i < n; ++i) {
        std::uint16_t bits = 0;
        if (!raw.empty())
          std::memcpy(&bits, raw.data() + 2 * i, 2);
        else
          bits = static_cast<std::uint16_t>(t.int32_data(static_cast<int>(i)));
        out.values[i] = half ? unity::half_to_float(bits) : unity::bfloat16_to_float(bits);
      }
      return true;
    }
    case onnx::TensorProto::INT32:
      return read_integers<std::int32_t>(t, n, out);
    case onnx::TensorProto::INT8:
      return read_integers<std::int8_t>(t, n, out);
    case onnx::TensorProto::UINT8:
      return read_integers<std::uint8_t>(t, n, out);
    case onnx::TensorProto::INT16:
      return read_integers<std::int16_t>(t, n, out);
    case onnx::TensorProto::UINT16:
      return read_integers<std::uint16_t>(t, n, out);
    case onnx::TensorProto::UINT32:
      return read_integers<std::uint32_t>(t, n, out);
    case onnx::TensorProto::UINT64:
      return read_integers<std::uint64_t>(t, n, out);
    default:
      if (unread) *unread = onnx::TensorProto::DataType_Name(t.data_type());
      return false;
  }
}

using onnx_coverage::TestResult;

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string t = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) t += (i ? ", " : "") + std::to_string(shape[i]);
  return t + "]";
}

struct Outcome {
  TestResult result;    // for the coverage report
  std::string failure;  // values that differ from the expected ones (empty: none)
};

// The ONNX op type a test is about: its first node that is not a Constant; for the "expanded"
// tests (an op written as a subgraph of simpler ones), the op of the test it expands, as
// "Op (expanded)".
std::string op_type_of(const fs::path& dir) {
  std::string name = dir.filename().string();
  if (const auto at = name.find("_expanded"); at != std::string::npos) {
    name.erase(at, std::strlen("_expanded"));
    if (fs::is_directory(dir.parent_path() / name))
      return op_type_of(dir.parent_path() / name) + " (expanded)";
  }
  onnx::ModelProto m;
  std::ifstream in(dir / "model.onnx", std::ios::binary);
  if (!in || !m.ParseFromIstream(&in)) return "";
  for (const auto& n : m.graph().node())
    if (n.op_type() != "Constant") return n.op_type();
  return m.graph().node_size() ? m.graph().node(0).op_type() : "";
}

// Semantics Unity's operators deliberately do not have, as the report names them.
std::string known_difference(const std::string& test) {
  // Unity's BatchNorm trains with batch statistics (the _training_mode tests compare it).
  if (test.find("batchnorm") != std::string::npos &&
      test.find("_training_mode") == std::string::npos)
    return "inference-mode BatchNormalization";
  // Dropout in training mode draws its own random mask (numpy's in the expected outputs).
  if (test.find("training_dropout") != std::string::npos) return "Dropout's random mask";
  // A cast to a 16-bit float: Unity sets precision per plan, the import drops the cast and the
  // executor keeps float32 values (the expected ones are rounded to the 16-bit type).
  if (test.find("cast") != std::string::npos && (test.find("to_FLOAT16") != std::string::npos ||
                                                 test.find("to_BFLOAT16") != std::string::npos))
    return "precision casts keep float32 values";
  // Bernoulli draws from Unity's generator (the same on any number of devices), not numpy's.
  if (test.find("bernoulli") != std::string::npos) return "Unity's random draws";
  return "";
}

// Makes the graph inputs `chosen` picks (by name and index among the inputs that are not
// initializers, which is their test data file's number) initializers holding the test's values;
// false when nothing was chosen or a data file cannot be read.
bool inputs_to_constants(onnx::GraphProto& graph, const fs::path& dir,
                         const std::function<bool(const std::string&, int)>& chosen) {
  std::set<std::string> initializers;
  for (const auto& t : graph.initializer()) initializers.insert(t.name());
  std::vector<int> moved;
  for (int k = 0, index = 0; k < graph.input_size(); ++k) {
    if (initializers.count(graph.input(k).name())) continue;
    const int data = index++;
    if (!chosen(graph.input(k).name(), data)) continue;
    onnx::TensorProto t;
    std::ifstream in(dir / "test_data_set_0" / ("input_" + std::to_string(data) + ".pb"),
                     std::ios::binary);
    if (!in || !t.ParseFromIstream(&in)) return false;
    t.set_name(graph.input(k).name());
    *graph.add_initializer() = t;
    moved.push_back(k);
  }
  for (auto it = moved.rbegin(); it != moved.rend(); ++it)
    graph.mutable_input()->DeleteSubrange(*it, 1);
  return !moved.empty();
}

// Adapts a model the importer refused, for what Unity models differently from ONNX (never for an
// operator it lacks); returns false when `why` is no such case.
//  - An operator whose extra outputs Unity's lacks (LayerNormalization's mean and inverse
//    deviation, BatchNormalization's running statistics in training mode, Dropout's and MaxPool's
//    second output): only the first output, which is what the kernel computes, stays.
//  - Parameters that the test feeds as inputs (Reshape's shape, Slice's starts, ReduceSum's axes,
//    Clip's bounds, Pow's exponent, Gather's indices, Tile's repeats, ...) where Unity's operators
//    take attributes, as exporters write them: every input but the first becomes a constant with
//    the test's values.
bool adapt_model(onnx::ModelProto& m, const fs::path& dir, const std::string& why) {
  onnx::GraphProto& graph = *m.mutable_graph();
  if (why.find("has only the first output") != std::string::npos) {
    if (graph.node_size() != 1 || graph.output_size() < 2) return false;
    onnx::NodeProto& node = *graph.mutable_node(0);
    if (graph.output(0).name() != node.output(0)) return false;
    graph.mutable_output()->DeleteSubrange(1, graph.output_size() - 1);
    node.mutable_output()->DeleteSubrange(1, node.output_size() - 1);
    return true;
  }
  // Control flow whose trip count and condition the test feeds as inputs: Unity unrolls loops and
  // inlines branches whose structure is known at import, so those inputs become constants.
  const bool control_flow = graph.node_size() > 0 &&
                            (graph.node(0).op_type() == "Loop" || graph.node(0).op_type() == "If");
  if (control_flow && why.find("element type BOOL") != std::string::npos) {
    const onnx::NodeProto& node = graph.node(0);
    std::set<std::string> structural{node.input(0)};
    if (node.op_type() == "Loop" && node.input_size() > 1) structural.insert(node.input(1));
    return inputs_to_constants(
        graph, dir, [&](const std::string& name, int) { return structural.count(name) != 0; });
  }
  // A recurrent node's sequence lengths fed as an input: Unity unrolls the sequence, so they
  // become a constant (the weights stay inputs: a constant weight would be initialised anew);
  // ReverseSequence's too (its reversal order is a constant index tensor).
  if (why.find("sequence_lens computed") != std::string::npos) {
    const int slot = graph.node(0).op_type() == "ReverseSequence" ? 1 : 4;
    const std::string lengths = graph.node(0).input_size() > slot ? graph.node(0).input(slot) : "";
    return inputs_to_constants(graph, dir,
                               [&](const std::string& name, int) { return name == lengths; });
  }
  const bool parameter_input = why.find("must be a constant") != std::string::npos ||
                               why.find("constant exponent") != std::string::npos ||
                               why.find("computed indices") != std::string::npos ||
                               why.find("sets the output's shape") != std::string::npos ||
                               why.find("symbolic batch dimension") != std::string::npos ||
                               // An empty parameter (ReduceSum's axes []), which no tensor holds.
                               why.find("has size 0") != std::string::npos;
  if (!parameter_input || graph.input_size() < 2) return false;
  // Every input but the first (the data input).
  return inputs_to_constants(graph, dir, [](const std::string&, int index) { return index > 0; });
}

// Imports the test's model, adapted (in a copy under `scratch`) as adapt_model says when the
// importer refuses it; `model_file` is the file imported.
Graph import_test_model(const fs::path& dir, const fs::path& scratch, fs::path& model_file) {
  model_file = dir / "model.onnx";
  onnx::ModelProto m;
  for (int attempt = 0;; ++attempt) {
    try {
      return import_onnx(model_file);
    } catch (const InputError& e) {
      if (attempt == 2) throw;
      if (attempt == 0) {
        std::ifstream in(model_file, std::ios::binary);
        if (!in || !m.ParseFromIstream(&in)) throw;
      }
      if (!adapt_model(m, dir, e.what())) throw;
      model_file = scratch / (dir.filename().string() + ".onnx");
      std::ofstream out(model_file, std::ios::binary | std::ios::trunc);
      if (!m.SerializeToOstream(&out)) throw;
    }
  }
}

// A message of the importer, shortened for the report: without the file, the node and what
// follows the first colon or semicolon, and cut at a word within 60 characters. Without
// `shorten`, only without the file.
std::string short_message(std::string message, bool shorten = true) {
  if (message.rfind('\'', 0) == 0) {
    if (const auto end = message.find("': "); end != std::string::npos) message.erase(0, end + 3);
  }
  if (!shorten) return message;
  if (const auto node = message.find(" (node '");
      node != std::string::npos && message.find(' ') == node) {
    if (const auto end = message.find("'): ", node); end != std::string::npos)
      message.erase(0, end + 4);
  }
  if (const auto end = message.find_first_of(";:"); end != std::string::npos) message.resize(end);
  if (message.size() > 60) {
    const auto cut = message.rfind(' ', 60);
    message.resize(cut == std::string::npos ? 60 : cut);
    message += " ...";
  }
  return message;
}

// Why the importer refused a test's model, as the report groups it (onnx_coverage_report.h).
std::string refusal_reason(const std::string& message, const fs::path& dir, const std::string& op) {
  onnx::ModelProto m;
  {
    std::ifstream in(dir / "model.onnx", std::ios::binary);
    m.ParseFromIstream(&in);
  }
  if (message.find("unsupported ONNX operators: ") != std::string::npos) {
    // The op under test when the importer lacks it, else the first operator it lacks.
    const std::string tested = op.substr(0, op.find(" ("));
    const onnx::NodeProto* lacking = nullptr;
    for (const auto& n : m.graph().node()) {
      if (onnx_operator_status(n.domain(), n.op_type()) == OnnxOperatorStatus::Imported) continue;
      if (!lacking || (n.op_type() == tested && lacking->op_type() != tested)) lacking = &n;
    }
    if (lacking) {
      if (const OnnxOutOfScope* scope = onnx_out_of_scope(lacking->domain(), lacking->op_type()))
        return "out of scope: " + std::string(scope->category);
      const bool default_domain = lacking->domain().empty() || lacking->domain() == "ai.onnx";
      return "missing operator: " + (default_domain ? "" : lacking->domain() + ".") +
             lacking->op_type();
    }
  }
  if (message.find("a data-dependent output shape") != std::string::npos)
    return "out of scope: data-dependent output shape";
  // An operator the importer folds on constants, applied to an activation.
  if (message.find("supported only on constants") != std::string::npos) {
    const std::string folded = short_message(message, false);
    return "missing operator: " + folded.substr(0, folded.find(' ')) + " (constants only)";
  }
  if (const auto at = message.find("has element type "); at != std::string::npos) {
    std::string type = message.substr(at + std::strlen("has element type "));
    type = type.substr(0, type.find_first_of(" ,"));
    for (char& c : type) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return "type not held: " + type;
  }
  for (const auto& input : m.graph().input())
    if (input.type().has_sequence_type() || input.type().has_optional_type())
      return "out of scope: sequence/optional types";
  return "missing feature: " + short_message(message);
}

Outcome run_test(const fs::path& dir, const fs::path& scratch) {
  Outcome o;
  TestResult& r = o.result;
  r.test = dir.filename().string();
  r.op = op_type_of(dir);
  fs::path model_file;
  Graph g;
  try {
    g = import_test_model(dir, scratch, model_file);
  } catch (const InputError& e) {
    r.why = refusal_reason(e.what(), dir, r.op);
    r.detail = r.why + " (" + short_message(e.what(), false) + ")";
    return o;
  }
  r.imported = true;
  if (const std::string what = known_difference(dir.filename().string()); !what.empty()) {
    r.why = "known difference: " + what;
    return o;
  }
  bool compute = false;
  for (const auto& [id, n] : g.nodes()) compute = compute || is_compute_op(n.op.type);
  if (!compute) {
    r.why = "not compared: no operator runs";
    return o;
  }
  const fs::path data = dir / "test_data_set_0";
  // Inputs in the order of the model's graph inputs, which add_input kept as Input node names.
  onnx::ModelProto m;
  {
    std::ifstream in(model_file, std::ios::binary);
    m.ParseFromIstream(&in);
  }
  std::set<std::string> initializers;
  for (const auto& i : m.graph().initializer()) initializers.insert(i.name());
  // The test's data files follow the original model's inputs (adapt_model may have made some of
  // them constants).
  std::map<std::string, int> data_index;
  {
    onnx::ModelProto original;
    std::ifstream in(dir / "model.onnx", std::ios::binary);
    original.ParseFromIstream(&in);
    std::set<std::string> original_initializers;
    for (const auto& i : original.graph().initializer()) original_initializers.insert(i.name());
    int index = 0;
    for (const auto& input : original.graph().input())
      if (!original_initializers.count(input.name())) data_index[input.name()] = index++;
  }
  std::map<NodeId, HostTensor> sources;
  for (const auto& input : m.graph().input()) {
    if (initializers.count(input.name())) continue;
    HostTensor t;
    std::string type;
    if (!read_tensor(data / ("input_" + std::to_string(data_index[input.name()]) + ".pb"), t,
                     &type)) {
      r.why = "not compared: " + type + " input";
      return o;
    }
    // ONNX keeps the data of a bfloat16 input as its 16-bit patterns in a UINT16 tensor.
    const int declared = input.type().tensor_type().elem_type();
    if (t.integer &&
        (declared == onnx::TensorProto::BFLOAT16 || declared == onnx::TensorProto::FLOAT16)) {
      t.values.clear();
      for (std::int64_t bits : t.integers) {
        const auto b = static_cast<std::uint16_t>(bits);
        t.values.push_back(declared == onnx::TensorProto::FLOAT16 ? unity::half_to_float(b)
                                                                  : unity::bfloat16_to_float(b));
      }
      t.integers.clear();
      t.integer = false;
    }
    for (const auto& [id, n] : g.nodes())
      if (n.op.type == OpType::Input && n.op.name == input.name()) sources[id] = t;
  }
  std::vector<TensorRef> produced;
  // Not the unread pieces of an operator whose other outputs are read (the gates a Split cuts that
  // a first step from a zero state never reads).
  for (const auto& s : g.sinks())
    if (is_compute_op(g.node(s.node).op.type) && g.uses(s.node).empty()) produced.push_back(s);
  // A Slice is the piece of a Split that the model reads, the other pieces are left unread: with
  // one output, the sink of the expected shape (when exactly one has it).
  if (produced.size() > 1 && m.graph().output_size() == 1) {
    HostTensor expected;
    if (read_tensor(data / "output_0.pb", expected)) {
      std::vector<TensorRef> matching;
      for (const TensorRef& t : produced)
        if (g.shape(t).sizes() == expected.shape) matching.push_back(t);
      if (matching.size() == 1) produced = matching;
    }
  }
  if (static_cast<int>(produced.size()) != m.graph().output_size()) {
    r.why = "not compared: outputs do not map one to one";
    return o;
  }
  // A model of 16-bit floats runs as a plan runs it on the CPU: in float32 (precision is a
  // plan's, set_compute_dtype; the executor trains in float32).
  set_compute_dtype(g, DataType::Float32);
  const auto values = unity::executor::testing::evaluate_on_one_device(g, sources);
  for (int k = 0; k < m.graph().output_size(); ++k) {
    HostTensor expected;
    std::string type;
    if (!read_tensor(data / ("output_" + std::to_string(k) + ".pb"), expected, &type)) {
      r.why = "not compared: " + type + " output";
      return o;
    }
    const HostTensor& got = values.at(produced[k]);
    const std::size_t n = expected.integer ? expected.integers.size() : expected.values.size();
    const std::size_t have = got.integer ? got.integers.size() : got.values.size();
    if (n != have) {
      o.failure = "output " + std::to_string(k) + " has " + std::to_string(have) +
                  " values, expected " + std::to_string(n);
      r.why = "wrong values";
      return o;
    }
    // The shape too, where ONNX gives a tensor (a scalar may come back as [1]).
    if (!expected.shape.empty() && got.shape != expected.shape) {
      o.failure = "output " + std::to_string(k) + " has shape " + shape_text(got.shape) +
                  ", expected " + shape_text(expected.shape);
      r.why = "wrong shape";
      return o;
    }
    // Some of ONNX's expected outputs were typed in to 4 decimals (GridSample's bicubic test):
    // where every expected value is a multiple of 1e-4, half of that unit is the tolerance.
    bool four_decimals = !expected.integer;
    for (std::size_t i = 0; i < n && four_decimals; ++i) {
      const double scaled = expected.values[i] * 1e4;
      four_decimals = std::abs(scaled - std::round(scaled)) < 1e-2;
    }
    const double absolute = four_decimals ? 5e-5 : 1e-5;
    for (std::size_t i = 0; i < n; ++i) {
      const double e =
          expected.integer ? static_cast<double>(expected.integers[i]) : expected.values[i];
      const double v = got.integer ? static_cast<double>(got.integers[i]) : got.values[i];
      if (std::abs(v - e) > absolute + 1e-4 * std::abs(e)) {
        o.failure = "output " + std::to_string(k) + "[" + std::to_string(i) +
                    "] = " + std::to_string(v) + ", expected " + std::to_string(e);
        r.why = "wrong values";
        return o;
      }
    }
  }
  r.equal = true;
  return o;
}

// Writes the report into the build directory and compares it with the one in docs/onnx.md; with
// UNITY_UPDATE_ONNX_COVERAGE=1 it rewrites the docs' instead.
void check_coverage_report(const std::vector<TestResult>& results) {
  const std::string report = onnx_coverage::markdown(results);
  const fs::path written = fs::path(UNITY_BINARY_DIR) / "onnx-coverage.md";
  std::ofstream(written, std::ios::binary | std::ios::trunc) << report;
  const fs::path listed = fs::path(UNITY_BINARY_DIR) / "onnx-coverage-tests.txt";
  {
    std::ofstream list(listed, std::ios::binary | std::ios::trunc);
    for (const TestResult& r : results)
      list << r.test << " (" << r.op << "): "
           << (r.equal            ? "equal"
               : r.detail.empty() ? r.why
                                  : r.detail)
           << "\n";
  }
  std::printf("ONNX operator coverage report: %s (each test: %s)\n", written.c_str(),
              listed.c_str());
  const fs::path docs = fs::path(UNITY_SOURCE_DIR) / "docs" / "onnx.md";
  const char* update = std::getenv("UNITY_UPDATE_ONNX_COVERAGE");
  if (update && std::string(update) == "1") {
    EXPECT_TRUE(onnx_coverage::replace_docs_section(docs, report))
        << docs << " has no section between " << onnx_coverage::kBeginMarker << " and "
        << onnx_coverage::kEndMarker;
    std::printf("rewrote the coverage section of %s\n", docs.c_str());
    return;
  }
  const auto text = onnx_coverage::read_file(docs);
  const auto section = text ? onnx_coverage::docs_section(*text) : std::nullopt;
  EXPECT_TRUE(section && *section == report)
      << "the coverage report in " << docs << " is not the one the suite computes (" << written
      << "): run this test with UNITY_UPDATE_ONNX_COVERAGE=1 to rewrite it, and commit the docs";
}

}  // namespace

// Unity's own node tests (tests/data/onnx/node, written by make_small_models.py with numpy's
// outputs): operators ONNX's suite feeds only as inputs or constants, here on activations and
// folded into a computation, each output compared as ONNX's are.
TEST(OnnxBackendData, UnitysOwnNodeTestsMatchNumpy) {
  const fs::path root = fs::path(UNITY_SOURCE_DIR) / "tests" / "data" / "onnx" / "node";
  const fs::path scratch =
      fs::temp_directory_path() / ("unity-own-node-test-" + std::to_string(getpid()));
  fs::create_directories(scratch);
  int tests = 0;
  for (const auto& entry : fs::directory_iterator(root)) {
    const Outcome o = run_test(entry.path(), scratch);
    ++tests;
    EXPECT_TRUE(o.result.equal) << o.result.test << ": " << o.result.why << " " << o.failure << " "
                                << o.result.detail;
  }
  EXPECT_GE(tests, 1);
  fs::remove_all(scratch);
}

TEST(OnnxBackendData, EveryImplementedOpTypeMatchesOnnxReferenceOutputs) {
  const fs::path root = data_root();
  if (root.empty())
    GTEST_SKIP() << "ONNX backend test data not installed (Debian package libonnx-testdata)";
  const auto start = std::chrono::steady_clock::now();
  std::map<std::string, int> passed, failed;
  std::vector<std::string> not_compared;
  std::vector<TestResult> results;
  std::vector<fs::path> dirs;
  for (const auto& entry : fs::directory_iterator(root))
    if (entry.is_directory() && fs::exists(entry.path() / "model.onnx"))
      dirs.push_back(entry.path());
  std::sort(dirs.begin(), dirs.end());
  const fs::path scratch =
      fs::temp_directory_path() / ("unity-onnx-test-" + std::to_string(getpid()));
  fs::create_directories(scratch);
  for (const auto& dir : dirs) {
    const Outcome o = run_test(dir, scratch);
    const std::string test = dir.filename().string();
    results.push_back(o.result);
    const TestResult& r = o.result;
    if (r.equal) {
      ++passed[r.op];
    } else if (!o.failure.empty()) {
      ++failed[r.op];
      ADD_FAILURE() << test << " (" << r.op << "): " << o.failure;
    } else if (r.imported) {
      // What the importer refuses is in the report; what imports but is not compared is listed.
      not_compared.push_back(test + ": " + r.why);
    }
  }
  std::string summary;
  for (const auto& [op, n] : passed) summary += op + " " + std::to_string(n) + ", ";
  std::printf("ONNX node tests passed per op type: %s\n", summary.c_str());
  for (const auto& s : not_compared) std::printf("  imported, not compared: %s\n", s.c_str());
  // The op types the executor implements through the importer: each must have run and passed.
  for (const char* op : {"Add",
                         "Sub",
                         "Mul",
                         "Div",
                         "MatMul",
                         "Gemm",
                         "Conv",
                         "ConvTranspose",
                         "MaxPool",
                         "AveragePool",
                         "GlobalAveragePool",
                         "GlobalMaxPool",
                         "Relu",
                         "Sigmoid",
                         "Tanh",
                         "Exp",
                         "Sqrt",
                         "Erf",
                         "Neg",
                         "Reciprocal",
                         "Softmax",
                         "Concat",
                         "Slice",
                         "Reshape",
                         "Squeeze",
                         "Unsqueeze",
                         "ReduceSum",
                         "Clip",
                         "Pow",
                         "BatchNormalization",
                         "LayerNormalization",
                         "Split",
                         "Flatten",
                         "Transpose",
                         "ReduceMean",
                         "Dropout",
                         "Expand",
                         "LSTM",
                         "GRU",
                         "InstanceNormalization",
                         "LeakyRelu",
                         "Elu",
                         "Selu",
                         "Softplus",
                         "HardSigmoid",
                         "HardSwish",
                         "Abs",
                         "Log",
                         "Sin",
                         "Cos",
                         "Tan",
                         "Asin",
                         "Acos",
                         "Atan",
                         "Sinh",
                         "Cosh",
                         "Asinh",
                         "Acosh",
                         "Atanh",
                         "Celu",
                         "ThresholdedRelu",
                         "Shrink",
                         "Sign",
                         "Floor",
                         "Ceil",
                         "Round",
                         "Softsign",
                         "LogSoftmax",
                         "CumSum",
                         "Resize",
                         "Upsample",
                         "TopK",
                         "GatherElements",
                         "ScatterElements",
                         "OneHot",
                         "ArgMax",
                         "ArgMin",
                         "Gather",
                         "Pad",
                         "GatherND",
                         "ScatterND",
                         "Where",
                         "Equal",
                         "Less",
                         "Greater",
                         "LessOrEqual",
                         "GreaterOrEqual",
                         "LessOrEqual (expanded)",
                         "GreaterOrEqual (expanded)",
                         "Not",
                         "And",
                         "Or",
                         "Xor",
                         "ReduceMax",
                         "Max",
                         "Min",
                         "Sum",
                         "Mean",
                         "PRelu",
                         "Mod",
                         "ReduceMin",
                         "ReduceProd",
                         "ReduceL1",
                         "ReduceL2",
                         "ReduceSumSquare",
                         "ReduceLogSum",
                         "ReduceLogSumExp",
                         "LayerNormalization (expanded)",
                         "MeanVarianceNormalization (expanded)",
                         "DepthToSpace",
                         "SpaceToDepth",
                         "Tile",
                         "Trilu",
                         "LRN",
                         "Hardmax",
                         "MeanVarianceNormalization",
                         "NegativeLogLikelihoodLoss",
                         "SoftmaxCrossEntropyLoss",
                         "RNN",
                         "IsNaN",
                         "IsInf",
                         "GridSample"})
    EXPECT_GT(passed[op], 0) << op << " has no passing ONNX node test";
  // And every ONNX type an operator's definition imports one node for one node (Det), where ONNX
  // has node tests of it: a new operator is held to its tests without a line here.
  std::set<std::string> tested;
  for (const TestResult& r : results) tested.insert(r.op);
  for (const OperatorDefinition* d : operator_definitions()) {
    for (std::string_view t : d->onnx_types) {
      if (tested.count(std::string(t))) {
        EXPECT_GT(passed[std::string(t)], 0) << t << " has no passing ONNX node test";
      }
    }
  }
  EXPECT_TRUE(failed.empty());
  check_coverage_report(results);
  std::error_code ec;
  fs::remove_all(scratch, ec);
  std::printf("%zu node tests in %.1f s\n", dirs.size(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}
