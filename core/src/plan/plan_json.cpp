#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "unity/core/errors.h"
#include "unity/core/json_io.h"
#include "unity/core/plan/plan.h"

namespace unity {

using nlohmann::json;

// Byte counts are written as integers: the cost model's fractions of a byte (a ring all-reduce
// sends 2(n-1)/n of a tensor) mean nothing to a reader. Not finite stays as it is (null).
json bytes_to_json(double bytes) {
  if (!std::isfinite(bytes)) return bytes;
  return static_cast<std::int64_t>(std::llround(bytes));
}

json bytes_to_json(const std::vector<double>& bytes) {
  json out = json::array();
  for (const double b : bytes) out.push_back(bytes_to_json(b));
  return out;
}

json memory_to_json(const MemoryBreakdown& m) {
  json out = {
      {"weights", bytes_to_json(m.weights)},     {"gradients", bytes_to_json(m.gradients)},
      {"optimizer", bytes_to_json(m.optimizer)}, {"activations", bytes_to_json(m.activations)},
      {"workspace", bytes_to_json(m.workspace)}, {"total", bytes_to_json(m.total())}};
  // Of weights, gradients and optimizer, the experts' (mixture-of-experts models only).
  if (m.experts() > 0)
    out["experts"] = {{"weights", bytes_to_json(m.expert_weights)},
                      {"gradients", bytes_to_json(m.expert_gradients)},
                      {"optimizer", bytes_to_json(m.expert_optimizer)}};
  return out;
}

namespace {

using nlohmann::json;

json view_to_json(const MachineView& v) {
  return {{"start", v.start}, {"extents", v.extents}, {"strides", v.strides}};
}

std::vector<int> int_list(const json& j, const std::string& what) {
  if (!j.is_array()) throw InputError(fmt::format("{} must be a list of integers", what));
  std::vector<int> out;
  for (const json& x : j) out.push_back(json_integer<int>(x, what));
  return out;
}

MachineView view_from_json(const json& j, const std::string& where) {
  try {
    return MachineView{json_integer<int>(j.at("start"), where + ": view start"),
                       int_list(j.at("extents"), where + ": view extents"),
                       int_list(j.at("strides"), where + ": view strides")};
  } catch (const json::exception& e) {
    throw InputError(
        fmt::format("{}: a view needs start, extents and strides ({})", where, e.what()));
  }
}

json breakdown_to_json(const CostBreakdown& c) {
  return {{"compute_ms", c.compute * 1e3},
          {"communication_ms", c.communication * 1e3},
          {"communication_bytes", bytes_to_json(c.bytes)}};
}

json applied_to_json(const std::vector<AppliedSubstitution>& applied) {
  json out = json::array();
  for (const auto& a : applied)
    out.push_back(
        {{"rule", a.rule}, {"nodes", a.nodes}, {"parameters", a.parameters}, {"pinned", a.pinned}});
  return out;
}

// Read leniently like the rest of the summary: a plan file without the list, or an entry without
// a rule name, leaves it out.
std::vector<AppliedSubstitution> applied_from_json(const json& j) {
  std::vector<AppliedSubstitution> out;
  if (!j.is_array()) return out;
  for (const json& a : j) {
    if (!a.is_object() || !a.contains("rule") || !a["rule"].is_string()) continue;
    AppliedSubstitution s;
    s.rule = a["rule"].get<std::string>();
    if (a.contains("nodes") && a["nodes"].is_array())
      for (const json& n : a["nodes"])
        if (n.is_string()) s.nodes.push_back(n.get<std::string>());
    if (a.contains("parameters") && a["parameters"].is_object())
      for (const auto& [k, v] : a["parameters"].items())
        if (v.is_number_integer()) s.parameters[k] = v.get<std::int64_t>();
    s.pinned = a.value("pinned", false);
    out.push_back(std::move(s));
  }
  return out;
}

MemoryBreakdown memory_from_json(const json& j) {
  MemoryBreakdown m;
  m.weights = j.value("weights", 0.0);
  m.gradients = j.value("gradients", 0.0);
  m.optimizer = j.value("optimizer", 0.0);
  m.activations = j.value("activations", 0.0);
  m.workspace = j.value("workspace", 0.0);
  if (j.contains("experts")) {
    const json& e = j.at("experts");
    m.expert_weights = e.value("weights", 0.0);
    m.expert_gradients = e.value("gradients", 0.0);
    m.expert_optimizer = e.value("optimizer", 0.0);
  }
  return m;
}

// A chunk's seconds per micro-batch in each pass, [forward, backward] in ms; absent: none.
json pass_ms_to_json(const PassSeconds& s) {
  return json::array({s.forward * 1e3, s.backward * 1e3});
}
PassSeconds pass_ms_from_json(const json& chunk, const char* key) {
  PassSeconds s;
  if (!chunk.contains(key)) return s;
  s.forward = chunk.at(key).at(0).get<double>() / 1e3;
  s.backward = chunk.at(key).at(1).get<double>() / 1e3;
  return s;
}

PipelinePlan pipeline_from_json(const json& j) {
  PipelinePlan p;
  try {
    p.tensor_parallel =
        json_integer<int>(j.at("tensor_parallel"), "plan: pipeline.tensor_parallel");
    p.pipeline_stages =
        json_integer<int>(j.at("pipeline_stages"), "plan: pipeline.pipeline_stages");
    p.data_parallel = json_integer<int>(j.at("data_parallel"), "plan: pipeline.data_parallel");
    p.micro_batches = json_integer<int>(j.at("micro_batches"), "plan: pipeline.micro_batches");
    p.micro_batch_size =
        json_integer<std::int64_t>(j.at("micro_batch_size"), "plan: pipeline.micro_batch_size");
    p.interleave = json_integer<int>(j.at("interleave"), "plan: pipeline.interleave");
    p.recompute = recompute_from_string(j.at("recompute").get<std::string>());
    if (const std::string modules = j.value("recompute_modules", ""); !modules.empty())
      p.recompute_modules = recompute_modules_from_string(modules);
    p.zero_stage = json_integer<int>(j.at("zero_stage"), "plan: pipeline.zero_stage");
    p.sequence_parallel = j.at("sequence_parallel").get<bool>();
    p.overlap_grad_reduce = j.value("overlap_grad_reduce", false);
    p.tp_comm_overlap = j.value("tp_comm_overlap", false);
    p.expert_parallel = j.value("ep", 1);
    p.expert_tensor_parallel = j.value("etp", 1);
    p.expert_data_parallel = j.value("edp", p.data_parallel);
    p.token_dispatcher = token_dispatcher_from_string(j.value("dispatcher", "alltoall"));
    p.ep_comm_overlap = j.value("ep_comm_overlap", false);
    p.expert_load.capacity_factor = j.value("moe_expert_capacity_factor", 0.0);
    p.expert_load.imbalance = j.value("moe_load_imbalance", 1.0);
    p.grad_reduce_in_bf16 = j.value("grad_reduce_in_bf16", false);
    p.fp8_param_gather = j.value("fp8_param_gather", false);
    p.embedding_in_split = j.value("embedding_in_split", false);
    p.loss_in_split = j.value("loss_in_split", false);
    p.alltoall_time = j.value("alltoall_ms", 0.0) / 1e3;
    p.expert_slice_time = j.value("expert_slice_ms", 0.0) / 1e3;
    p.alltoall_bytes = j.value("alltoall_bytes", 0.0);
    p.alltoall_inter_node_bytes = j.value("alltoall_inter_node_bytes", 0.0);
    p.experts = j.value("experts", std::int64_t{0});
    p.top_k = j.value("top_k", std::int64_t{0});
    p.route_groups = j.value("route_groups", std::int64_t{0});
    p.route_group_top_k = j.value("route_group_top_k", std::int64_t{0});
    p.context_parallel = j.value("cp", 1);
    p.context_exchange = context_exchange_from_string(j.value("cp_comm", "p2p"));
    p.cp_time = j.value("cp_ms", 0.0) / 1e3;
    p.cp_bytes = j.value("cp_bytes", 0.0);
    p.device_order = device_order_from_string(j.value("device_order", "tp-dp-pp"));
    p.dtype = data_type_from_string(j.at("dtype").get<std::string>());
    p.iteration_time = j.at("iteration_time_ms").get<double>() / 1e3;
    p.pipeline_time = j.value("pipeline_ms", 0.0) / 1e3;
    p.bubble_time = j.value("bubble_ms", 0.0) / 1e3;
    p.bubble_fraction = j.value("bubble_fraction", 0.0);
    p.sync_time = j.value("gradient_sync_ms", 0.0) / 1e3;
    p.update_time = j.value("optimizer_step_ms", 0.0) / 1e3;
    p.peak_memory = j.value("peak_memory_bytes", 0.0);
    p.fits = j.value("fits_in_memory", false);
    p.model_flops = j.value("model_flops_per_iteration", 0.0);
    p.flop_count = flop_count_from_string(j.value("flop_count", "full"));
    p.tflops_per_device = j.value("tflops_per_device", 0.0);
    for (const json& c : j.at("stages")) {
      StagePlan sp;
      sp.rank = json_integer<int>(c.at("rank"), "plan: pipeline.stages: rank");
      sp.first_segment =
          json_integer<int>(c.at("segments").at(0), "plan: pipeline.stages: segments");
      sp.last_segment =
          json_integer<int>(c.at("segments").at(1), "plan: pipeline.stages: segments");
      sp.first_layer = json_integer<int>(c.at("layers").at(0), "plan: pipeline.stages: layers");
      sp.last_layer = json_integer<int>(c.at("layers").at(1), "plan: pipeline.stages: layers");
      sp.first_node = c.value("first_node", "");
      sp.last_node = c.value("last_node", "");
      sp.forward = c.value("forward_ms", 0.0) / 1e3;
      sp.backward = c.value("backward_ms", 0.0) / 1e3;
      sp.p2p = c.value("p2p_ms", 0.0) / 1e3;
      sp.parameters = c.value("parameters", 0.0);
      sp.exchanges.alltoall = pass_ms_from_json(c, "alltoall_ms");
      sp.exchanges.alltoall_exposed = pass_ms_from_json(c, "alltoall_exposed_ms");
      sp.exchanges.context_exchange = pass_ms_from_json(c, "cp_exchange_ms");
      p.chunks.push_back(std::move(sp));
    }
    for (const json& m : j.at("memory_per_rank")) p.rank_memory.push_back(memory_from_json(m));
    if (j.contains("gradient_sync_per_rank"))  // optional: plans written before it lack it
      for (const json& s : j.at("gradient_sync_per_rank")) {
        p.rank_sync_total.push_back(s.at("total_ms").get<double>() / 1e3);
        p.rank_sync_exposed.push_back(s.at("exposed_ms").get<double>() / 1e3);
        if (s.contains("last_bucket_parameters"))  // optional: plans written before it lack it
          p.rank_last_bucket.push_back(s.at("last_bucket_parameters").get<double>());
      }
    p.segment_plans = j.value("segment_plans", std::vector<std::string>{});
    if (j.contains("kind_plans"))
      for (const json& k : j.at("kind_plans")) {
        SegmentKindPlan kp;
        kp.pcg = graph_from_json(k.at("pcg"));
        for (const auto& [id, v] : k.at("views").items()) {
          NodeId node = -1;
          const auto parsed = std::from_chars(id.data(), id.data() + id.size(), node);
          if (parsed.ec != std::errc() || parsed.ptr != id.data() + id.size())
            throw InputError(fmt::format("plan: pipeline: kind_plans: '{}' is not a node id", id));
          if (!kp.pcg.contains(node))
            throw InputError(fmt::format("plan: pipeline: kind_plans: no node {}", node));
          kp.views[node] = view_from_json(v, "plan: pipeline: kind_plans");
        }
        p.kind_plans.push_back(std::move(kp));
      }
  } catch (const json::exception& e) {
    throw InputError(fmt::format("plan: pipeline: {}", e.what()));
  }
  return p;
}

}  // namespace

json pipeline_to_json(const PipelinePlan& p) {
  json stages = json::array();
  for (const auto& c : p.chunks) {
    json stage = {{"rank", c.rank},
                  {"segments", {c.first_segment, c.last_segment}},
                  {"layers", {c.first_layer, c.last_layer}},
                  {"first_node", c.first_node},
                  {"last_node", c.last_node},
                  {"forward_ms", c.forward * 1e3},
                  {"backward_ms", c.backward * 1e3},
                  {"p2p_ms", c.p2p * 1e3},
                  {"parameters", static_cast<std::int64_t>(c.parameters)}};
    // Only where the chunk has them (mixture-of-experts and context-parallel plans).
    const ChunkExchanges& x = c.exchanges;
    if (x.alltoall.total() > 0) {
      stage["alltoall_ms"] = pass_ms_to_json(x.alltoall);
      stage["alltoall_exposed_ms"] = pass_ms_to_json(x.alltoall_exposed);
    }
    if (x.context_exchange.total() > 0)
      stage["cp_exchange_ms"] = pass_ms_to_json(x.context_exchange);
    stages.push_back(std::move(stage));
  }
  json memory = json::array();
  for (const auto& m : p.rank_memory) memory.push_back(memory_to_json(m));
  json sync = json::array();
  for (std::size_t r = 0; r < p.rank_sync_total.size() && r < p.rank_sync_exposed.size(); ++r) {
    json s = {{"total_ms", p.rank_sync_total[r] * 1e3},
              {"exposed_ms", p.rank_sync_exposed[r] * 1e3}};
    if (r < p.rank_last_bucket.size()) s["last_bucket_parameters"] = p.rank_last_bucket[r];
    sync.push_back(std::move(s));
  }
  json kinds = json::array();
  for (const auto& k : p.kind_plans) {
    json views = json::object();
    for (const auto& [id, v] : k.views) views[std::to_string(id)] = view_to_json(v);
    kinds.push_back({{"pcg", graph_to_json(k.pcg)}, {"views", views}});
  }
  return {{"tensor_parallel", p.tensor_parallel},
          {"pipeline_stages", p.pipeline_stages},
          {"data_parallel", p.data_parallel},
          {"micro_batches", p.micro_batches},
          {"micro_batch_size", p.micro_batch_size},
          {"interleave", p.interleave},
          {"recompute", to_string(p.recompute)},
          // What selective recomputation runs again ("" for none and full).
          {"recompute_modules",
           p.recompute == Recompute::Selective ? to_string(p.recompute_modules) : ""},
          {"zero_stage", p.zero_stage},
          {"sequence_parallel", p.sequence_parallel},
          {"overlap_grad_reduce", p.overlap_grad_reduce},
          {"tp_comm_overlap", p.tp_comm_overlap},
          {"ep", p.expert_parallel},
          {"etp", p.expert_tensor_parallel},
          {"edp", p.expert_data_parallel},
          {"dispatcher", to_string(p.token_dispatcher)},
          {"ep_comm_overlap", p.ep_comm_overlap},
          {"moe_expert_capacity_factor", p.expert_load.capacity_factor},
          {"moe_load_imbalance", p.expert_load.imbalance},
          {"grad_reduce_in_bf16", p.grad_reduce_in_bf16},
          {"fp8_param_gather", p.fp8_param_gather},
          {"embedding_in_split", p.embedding_in_split},
          {"loss_in_split", p.loss_in_split},
          {"alltoall_ms", p.alltoall_time * 1e3},
          {"expert_slice_ms", p.expert_slice_time * 1e3},
          {"alltoall_bytes", p.alltoall_bytes},
          {"alltoall_inter_node_bytes", p.alltoall_inter_node_bytes},
          {"experts", p.experts},
          {"top_k", p.top_k},
          {"route_groups", p.route_groups},
          {"route_group_top_k", p.route_group_top_k},
          {"cp", p.context_parallel},
          {"cp_comm", to_string(p.context_exchange)},
          {"cp_ms", p.cp_time * 1e3},
          {"cp_bytes", p.cp_bytes},
          {"device_order", to_string(p.device_order)},
          {"dtype", to_string(p.dtype)},
          {"iteration_time_ms", p.iteration_time * 1e3},
          {"pipeline_ms", p.pipeline_time * 1e3},
          {"bubble_ms", p.bubble_time * 1e3},
          {"bubble_fraction", p.bubble_fraction},
          {"gradient_sync_ms", p.sync_time * 1e3},
          {"optimizer_step_ms", p.update_time * 1e3},
          {"gradient_sync_per_rank", sync},
          {"peak_memory_bytes", bytes_to_json(p.peak_memory)},
          {"fits_in_memory", p.fits},
          {"model_flops_per_iteration", p.model_flops},
          {"flop_count", to_string(p.flop_count)},
          {"tflops_per_device", p.tflops_per_device},
          {"layouts_evaluated", p.layouts_evaluated},
          {"segment_candidates_evaluated", p.candidates_evaluated},
          {"segment_plans", p.segment_plans},
          {"kind_plans", kinds},
          {"stages", stages},
          {"memory_per_rank", memory}};
}

bool is_plan_json(const json& j) {
  // Compared, not read with value(): a "format" that is not a string is no plan, not a type error.
  return j.is_object() && j.contains("format") && j["format"] == "unity-plan";
}

json summary_to_json(const PlanSummary& s) {
  json j = {
      {"model", s.model},
      {"machine", s.machine},
      {"devices", s.devices},
      {"mode", s.mode},
      {"optimizer", s.optimizer},
      {"iteration_time_ms", s.iteration_time_ms},
      {"compute_ms", s.compute_ms},
      {"communication_ms", s.communication_ms},
      {"communication_bytes", bytes_to_json(s.communication_bytes)},
      {"peak_memory_bytes", bytes_to_json(s.peak_memory_bytes)},
      {"fits_in_memory", s.fits_in_memory},
      {"memory_verdict", s.memory_verdict},
      {"model_state_bytes", s.model_state_bytes},
      {"fewest_devices_for_state", s.fewest_devices_for_state},
      {"memory_margin_bytes", bytes_to_json(s.memory_margin_bytes)},
      {"search_seconds", s.search_seconds},
      {"candidates_evaluated", s.candidates_evaluated},
      {"substitutions_applied", applied_to_json(s.substitutions_applied)},
      {"vetoed", s.vetoed},
      {"pinned", s.pinned},
      {"origin", s.origin},
      {"pieces", s.pieces},
      {"searches", s.searches},
      {"search_status", s.search_status},
      {"operators", s.operators},
      {"parallel_operators", s.parallel_operators},
      {"mapping_subproblems", s.mapping_subproblems},
      {"cost_sources", {{"measured", s.measured_operators}, {"analytic", s.analytic_operators}}},
      {"dtype", s.dtype},
      {"pipeline_stages", s.pipeline_stages},
      {"micro_batches", s.micro_batches},
      {"bubble_fraction", s.bubble_fraction},
      {"recompute", s.recompute},
      {"recompute_modules", s.recompute_modules},
      {"zero_stage", s.zero_stage},
      {"ep", s.ep},
      {"etp", s.etp},
      {"edp", s.edp},
      {"cp", s.cp},
      {"alltoall_bytes", bytes_to_json(s.alltoall_bytes)},
      {"cp_bytes", bytes_to_json(s.cp_bytes)},
      {"model_flops_per_iteration", s.model_flops_per_iteration},
      {"flop_count", s.flop_count},
      {"tflops_per_device", s.tflops_per_device}};
  if (s.model_shape) j["model_shape"] = model_shape_to_json(*s.model_shape);
  return j;
}

json plan_to_json(const Plan& plan) {
  json ops = json::array();
  for (const auto& op : plan.mapping.per_op) {
    json o = {{"node", op.node},
              {"name", plan.pcg.node(op.node).op.name},
              {"view", view_to_json(op.view)},
              {"forward_ms", op.forward * 1e3},
              {"backward_ms", op.backward * 1e3},
              {"memory_bytes", bytes_to_json(op.memory)}};
    o["own"] = breakdown_to_json(op.own);
    o["edges"] = breakdown_to_json(op.edges);
    ops.push_back(std::move(o));
  }
  json j = {{"format", "unity-plan"},
            {"version", 1},
            {"summary", summary_to_json(plan.summary)},
            {"machine", machine_to_json(plan.machine)},
            {"pcg", graph_to_json(plan.pcg)},
            {"operators", ops},
            {"memory_per_device_bytes", bytes_to_json(plan.mapping.memory_per_device)}};
  if (plan.pipeline) j["pipeline"] = pipeline_to_json(*plan.pipeline);
  return j;
}

namespace {

// plan_from_json without its guard: the summary's and operators' fields are read with json::value
// and get, which throw json's type_error when the file holds another type there.
Plan plan_from_json_fields(const json& j) {
  if (!is_plan_json(j)) throw InputError("plan: field 'format' must be \"unity-plan\"");
  if (json_integer_or(j, "version", 0, "plan") > 1)
    throw InputError("plan: format version is newer than this Unity reads");
  Plan p;
  if (!j.contains("pcg")) throw InputError("plan: missing field 'pcg'");
  if (!j.contains("machine")) throw InputError("plan: missing field 'machine'");
  p.pcg = graph_from_json(j["pcg"]);
  p.machine = machine_from_json(j["machine"]);
  const json& s = j.value("summary", json::object());
  p.summary.model = s.value("model", p.pcg.name);
  p.summary.machine = s.value("machine", p.machine.name);
  p.summary.devices = json_integer_or(s, "devices", p.machine.num_devices(), "plan: summary");
  p.summary.mode = s.value("mode", "");
  p.summary.optimizer = s.value("optimizer", "sgd");
  p.summary.iteration_time_ms = s.value("iteration_time_ms", 0.0);
  p.summary.compute_ms = s.value("compute_ms", 0.0);
  p.summary.communication_ms = s.value("communication_ms", 0.0);
  p.summary.communication_bytes = s.value("communication_bytes", 0.0);
  p.summary.peak_memory_bytes = s.value("peak_memory_bytes", 0.0);
  p.summary.fits_in_memory = s.value("fits_in_memory", false);
  p.summary.memory_verdict =
      s.value("memory_verdict", std::string(p.summary.fits_in_memory ? "fits" : "does-not-fit"));
  p.summary.memory_margin_bytes = s.value("memory_margin_bytes", 0.0);
  p.summary.model_state_bytes = s.value("model_state_bytes", 0.0);
  p.summary.fewest_devices_for_state =
      json_integer_or(s, "fewest_devices_for_state", 0, "plan: summary");
  p.summary.dtype = s.value("dtype", "float32");
  p.summary.pipeline_stages = json_integer_or(s, "pipeline_stages", 1, "plan: summary");
  p.summary.micro_batches = json_integer_or(s, "micro_batches", 1, "plan: summary");
  p.summary.bubble_fraction = s.value("bubble_fraction", 0.0);
  p.summary.recompute = s.value("recompute", "none");
  p.summary.recompute_modules = s.value("recompute_modules", "");
  p.summary.zero_stage = json_integer_or(s, "zero_stage", 0, "plan: summary");
  p.summary.ep = json_integer_or(s, "ep", 1, "plan: summary");
  p.summary.etp = json_integer_or(s, "etp", 1, "plan: summary");
  p.summary.edp = json_integer_or(s, "edp", 1, "plan: summary");
  p.summary.cp = json_integer_or(s, "cp", 1, "plan: summary");
  p.summary.alltoall_bytes = s.value("alltoall_bytes", 0.0);
  p.summary.cp_bytes = s.value("cp_bytes", 0.0);
  p.summary.model_flops_per_iteration = s.value("model_flops_per_iteration", 0.0);
  p.summary.flop_count = to_string(flop_count_from_string(s.value("flop_count", "full")));
  p.summary.tflops_per_device = s.value("tflops_per_device", 0.0);
  p.summary.origin = s.value("origin", "");
  if (s.contains("substitutions_applied"))
    p.summary.substitutions_applied = applied_from_json(s["substitutions_applied"]);
  if (s.contains("model_shape")) p.summary.model_shape = model_shape_from_json(s["model_shape"]);
  if (s.contains("cost_sources") && s["cost_sources"].is_object()) {
    const json& c = s["cost_sources"];
    p.summary.measured_operators = json_integer_or(c, "measured", 0, "plan: summary.cost_sources");
    p.summary.analytic_operators = json_integer_or(c, "analytic", 0, "plan: summary.cost_sources");
  }
  if (j.contains("pipeline")) p.pipeline = pipeline_from_json(j["pipeline"]);
  if (j.contains("operators")) {
    for (std::size_t i = 0; i < j["operators"].size(); ++i) {
      const json& o = j["operators"][i];
      const std::string where = fmt::format("plan: operators[{}]", i);
      if (!o.contains("node") || !o.contains("view"))
        throw InputError(where + ": needs 'node' and 'view'");
      const NodeId id = json_integer<NodeId>(o["node"], where + ": node");
      if (!p.pcg.contains(id))
        throw InputError(fmt::format("{}: no node {} in the PCG", where, id));
      MachineView v = view_from_json(o["view"], where);
      for (int d : v.devices())
        if (d < 0 || d >= p.machine.num_devices())
          throw InputError(fmt::format("{}: device {} is outside the machine's {} devices", where,
                                       d, p.machine.num_devices()));
      p.mapping.views[id] = v;
      OpCost op;
      op.node = id;
      op.view = v;
      op.forward = o.value("forward_ms", 0.0) / 1e3;
      op.backward = o.value("backward_ms", 0.0) / 1e3;
      op.memory = o.value("memory_bytes", 0.0);
      if (o.contains("own")) {
        op.own.compute = o["own"].value("compute_ms", 0.0) / 1e3;
        op.own.communication = o["own"].value("communication_ms", 0.0) / 1e3;
        op.own.bytes = o["own"].value("communication_bytes", 0.0);
      }
      if (o.contains("edges")) {
        op.edges.compute = o["edges"].value("compute_ms", 0.0) / 1e3;
        op.edges.communication = o["edges"].value("communication_ms", 0.0) / 1e3;
        op.edges.bytes = o["edges"].value("communication_bytes", 0.0);
      }
      p.mapping.per_op.push_back(std::move(op));
    }
  }
  p.mapping.feasible = !p.mapping.views.empty() || p.pipeline.has_value();
  p.mapping.fits_in_memory = p.summary.fits_in_memory;
  p.mapping.peak_memory = p.summary.peak_memory_bytes;
  return p;
}

}  // namespace

Plan plan_from_json(const json& j) {
  try {
    return plan_from_json_fields(j);
  } catch (const json::exception& e) {
    throw InputError(fmt::format("plan: a field has the wrong type or value ({})", e.what()));
  }
}

}  // namespace unity
