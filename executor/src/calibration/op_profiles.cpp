#include "unity/executor/op_profiles.h"

#include "unity/executor/compute_precision.h"

#include <fmt/format.h>

#include "unity/core/errors.h"
#include "unity/core/json_io.h"
#include "unity/core/machine_mapping.h"
#include "unity/core/sp_decomposition.h"
#include "unity/executor/communicator.h"
#include "unity/executor/device_backend.h"
#include "unity/executor/program.h"
#include "unity/executor/run_files.h"
#include "unity/executor/training.h"

namespace unity::executor {
namespace {

// Whether a tensor depends on a floating Weight (so the executor computes its gradient).
bool needs_gradient(const Graph& g, TensorRef t, std::map<NodeId, bool>& memo) {
  auto it = memo.find(t.node);
  if (it != memo.end()) return it->second;
  const Node& n = g.node(t.node);
  bool result = false;
  if (n.op.type == OpType::Weight) {
    result = is_floating(n.outputs.at(0).dtype);
  } else {
    for (const auto& in : n.inputs) result = result || needs_gradient(g, in, memo);
    result = result && is_floating(n.outputs.at(0).dtype);
  }
  memo[t.node] = result;
  return result;
}

std::string piece_text(const ParallelTensorShape& s) {
  std::string t;
  for (const auto& d : s.dims) t += fmt::format("{}{}", t.empty() ? "" : "x", d.size / d.degree);
  return t + ":" + std::string(to_string(s.dtype));
}

}  // namespace

std::string op_signature(const Graph& g, NodeId id) {
  const Node& n = g.node(id);
  std::string s(to_string(n.op.type));
  s += "{";
  for (const auto& [k, v] : n.op.attrs.items()) s += k + "=" + to_string(v) + ";";
  s += "}";
  std::map<NodeId, bool> memo;
  for (const auto& in : n.inputs)
    s += "(" + piece_text(g.shape(in)) + (needs_gradient(g, in, memo) ? ",grad" : "") + ")";
  for (const auto& o : n.outputs) s += "->" + piece_text(o);
  return s;
}

OpTimes measure_operator(const Graph& graph, NodeId id, double seconds) {
  const Node& n = graph.node(id);
  if (!is_compute_op(n.op.type)) throw InputError("only compute operators are profiled");
  // The operator alone: each input from a source (a Weight when the original input needs a
  // gradient) split and replicated like the original, so the one rank runs every task of it.
  Graph g;
  std::map<NodeId, bool> memo;
  std::vector<TensorRef> inputs;
  int k = 0;
  for (const auto& in : n.inputs) {
    const ParallelTensorShape& s = graph.shape(in);
    const bool weight = needs_gradient(graph, in, memo);
    const std::string name = fmt::format("in{}", k++);
    TensorRef t =
        weight ? g.add_weight(name, s.sizes(), s.dtype) : g.add_input(name, s.sizes(), s.dtype);
    for (int d = 0; d < s.rank(); ++d)
      if (s.dims[d].degree > 1)
        t = {g.add({OpType::Partition,
                    {{"dim", std::int64_t{d}}, {"degree", std::int64_t{s.dims[d].degree}}},
                    ""},
                   {t}),
             0};
    if (s.replica > 1)
      t = {g.add({OpType::Replicate, {{"degree", std::int64_t{s.replica}}}, ""}, {t}), 0};
    inputs.push_back(t);
  }
  Operator op = n.op;
  op.name = "measured";
  const NodeId node = g.add(op, inputs);
  // The executor computes in float32, fp16 and bf16 plans included: their operators are measured
  // so.
  g = executed_graph(g);
  const Program p =
      lower_plan(g, single_device_views(g), 1,
                 {.require_loss = false, .train_all_outputs = true, .inputs_with_gradients = {}});
  auto backend = make_cpu_backend(1);
  auto comm = make_local_communicator();
  TrainingOptions o;
  o.warmup = 2;
  o.iterations = 3;
  o.profile = true;
  o.learning_rate = 1e-6;
  TrainingResult first = train(p, o, *backend, *comm);
  // Enough repeats to fill `seconds`, at least 5.
  const double per = std::max(median(first.iteration_ms) * 1e-3, 1e-6);
  o.iterations = std::clamp(static_cast<int>(seconds / per), 5, 200);
  const TrainingResult r = train(p, o, *backend, *comm);
  const double tasks = static_cast<double>(g.node(node).outputs.at(0).num_pieces());
  for (const auto& e : r.profile)
    if (e.node == node) return {e.forward_ms * 1e-3 / tasks, e.backward_ms * 1e-3 / tasks};
  throw std::logic_error("the measured operator is missing from its profile");
}

std::shared_ptr<MeasuredProfiles> MeasuredProfiles::load(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::make_shared<MeasuredProfiles>();
  const auto j = read_json_file(path);
  try {
    if (j.at("format") != "unity-op-profiles")
      throw InputError(fmt::format("'{}' is not an operator profile file", path.string()));
    auto p = std::make_shared<MeasuredProfiles>(j.at("slowdown").get<double>());
    for (const auto& [sig, t] : j.at("operators").items())
      p->times_[sig] = {t.at(0).get<double>(), t.at(1).get<double>()};
    return p;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(
        fmt::format("operator profile file '{}' is malformed: {}", path.string(), e.what()));
  }
}

void MeasuredProfiles::save(const std::filesystem::path& path) const {
  std::lock_guard lock(mutex_);
  nlohmann::json ops = nlohmann::json::object();
  for (const auto& [sig, t] : times_) ops[sig] = {t.forward, t.backward};
  const nlohmann::json j = {
      {"format", "unity-op-profiles"},
      {"version", 1},
      {"slowdown", slowdown_},
      {"comment",
       "seconds per task (forward, backward) of one process alone; times slowdown "
       "when every rank computes at once"},
      {"operators", ops}};
  write_text_file_atomic(path, j.dump(1) + "\n");
}

std::size_t MeasuredProfiles::size() const {
  std::lock_guard lock(mutex_);
  return times_.size();
}

std::optional<OpTimes> MeasuredProfiles::lookup(const Graph& graph, NodeId node,
                                                const DeviceSpec&) const {
  if (!is_compute_op(graph.node(node).op.type)) return std::nullopt;
  const std::string sig = op_signature(graph, node);
  std::lock_guard lock(mutex_);
  auto it = times_.find(sig);
  if (it == times_.end()) {
    try {
      it = times_.emplace(sig, measure_operator(graph, node)).first;
      ++measured_now_;
    } catch (const std::exception&) {
      return std::nullopt;  // the analytic model stays
    }
  }
  return OpTimes{it->second.forward * slowdown_, it->second.backward * slowdown_};
}

double predicted_iteration_ms(const Graph& pcg, const std::map<NodeId, MachineView>& views,
                              const MachineSpec& machine, const std::string& optimizer,
                              std::shared_ptr<const ProfileSource> profiles) {
  const CostModel model(machine, optimizer_from_string(optimizer), std::move(profiles));
  const MappingCost costs(pcg, model);
  const SpDecomposition sp(costs.placement());
  bool feasible = false;
  const CostBreakdown c =
      evaluate_mapping(costs, sp, views, {}, {0, machine.num_devices()}, &feasible);
  if (!feasible)
    throw InputError(fmt::format("the plan's views do not fit machine '{}'", machine.name));
  return c.time() * 1e3;
}

std::filesystem::path profiles_path_for(const std::filesystem::path& machine_file) {
  auto p = machine_file;
  return p.replace_extension("").string() + ".profiles.json";
}

}  // namespace unity::executor
