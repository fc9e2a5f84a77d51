#include "unity/executor/op_profiles.h"

#include "unity/executor/compute_precision.h"

#include <fmt/format.h>

#include "unity/core/cost/op_profile_key.h"
#include "unity/core/errors.h"
#include "unity/core/json_io.h"
#include "unity/core/mapping/machine_mapping.h"
#include "unity/core/mapping/sp_decomposition.h"
#include "unity/executor/communicator.h"
#include "unity/executor/device_backend.h"
#include "unity/executor/program.h"
#include "unity/executor/run_files.h"
#include "unity/executor/training.h"

namespace unity::executor {
namespace {

// 2: keys are op_profile_key (shared with the project file).
constexpr int kProfileFileVersion = 2;

}  // namespace

OpTimes measure_operator(const Graph& graph, NodeId id, double seconds) {
  const Node& n = graph.node(id);
  if (!is_compute_op(n.op.type)) throw InputError("only compute operators are profiled");
  // The operator alone: each input from a source (a Weight when the original input needs a
  // gradient) split and replicated like the original, so the one rank runs every task of it.
  Graph g;
  std::vector<TensorRef> inputs;
  int k = 0;
  for (const auto& in : n.inputs) {
    const ParallelTensorShape& s = graph.shape(in);
    const bool weight = needs_gradient(graph, in);
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
    // Version 1 files keyed operators another way: their operators are measured again.
    if (j.value("version", 1) < kProfileFileVersion) return p;
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
      {"version", kProfileFileVersion},
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
  const std::string sig = op_profile_key(graph, node);
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
