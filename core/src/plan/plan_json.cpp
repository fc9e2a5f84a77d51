#include <fmt/format.h>

#include "unity/core/errors.h"
#include "unity/core/json_io.h"
#include "unity/core/plan.h"

namespace unity {
namespace {

using nlohmann::json;

json view_to_json(const MachineView& v) {
  return {{"start", v.start}, {"extents", v.extents}, {"strides", v.strides}};
}

MachineView view_from_json(const json& j, const std::string& where) {
  try {
    return MachineView{j.at("start").get<int>(), j.at("extents").get<std::vector<int>>(),
                       j.at("strides").get<std::vector<int>>()};
  } catch (const json::exception& e) {
    throw InputError(fmt::format("{}: a view needs start, extents and strides ({})", where, e.what()));
  }
}

json breakdown_to_json(const CostBreakdown& c) {
  return {{"compute_ms", c.compute * 1e3},
          {"communication_ms", c.communication * 1e3},
          {"communication_bytes", c.bytes}};
}

json applied_to_json(const std::vector<AppliedSubstitution>& applied) {
  json out = json::array();
  for (const auto& a : applied)
    out.push_back({{"rule", a.rule}, {"nodes", a.nodes}, {"parameters", a.parameters},
                   {"pinned", a.pinned}});
  return out;
}

}  // namespace

bool is_plan_json(const json& j) { return j.is_object() && j.value("format", "") == "unity-plan"; }

json summary_to_json(const PlanSummary& s) {
  return {{"model", s.model},
          {"machine", s.machine},
          {"devices", s.devices},
          {"mode", s.mode},
          {"optimizer", s.optimizer},
          {"iteration_time_ms", s.iteration_time_ms},
          {"compute_ms", s.compute_ms},
          {"communication_ms", s.communication_ms},
          {"communication_bytes", s.communication_bytes},
          {"peak_memory_bytes", s.peak_memory_bytes},
          {"fits_in_memory", s.fits_in_memory},
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
          {"mapping_subproblems", s.mapping_subproblems}};
}

json plan_to_json(const Plan& plan) {
  json ops = json::array();
  for (const auto& op : plan.mapping.per_op) {
    json o = {{"node", op.node},
              {"name", plan.pcg.node(op.node).op.name},
              {"view", view_to_json(op.view)},
              {"forward_ms", op.forward * 1e3},
              {"backward_ms", op.backward * 1e3},
              {"memory_bytes", op.memory}};
    o["own"] = breakdown_to_json(op.own);
    o["edges"] = breakdown_to_json(op.edges);
    ops.push_back(std::move(o));
  }
  return {{"format", "unity-plan"},
          {"version", 1},
          {"summary", summary_to_json(plan.summary)},
          {"machine", machine_to_json(plan.machine)},
          {"pcg", graph_to_json(plan.pcg)},
          {"operators", ops},
          {"memory_per_device_bytes", plan.mapping.memory_per_device}};
}

Plan plan_from_json(const json& j) {
  if (!is_plan_json(j)) throw InputError("plan: field 'format' must be \"unity-plan\"");
  if (j.value("version", 0) > 1) throw InputError("plan: format version is newer than this Unity reads");
  Plan p;
  if (!j.contains("pcg")) throw InputError("plan: missing field 'pcg'");
  if (!j.contains("machine")) throw InputError("plan: missing field 'machine'");
  p.pcg = graph_from_json(j["pcg"]);
  p.machine = machine_from_json(j["machine"]);
  const json& s = j.value("summary", json::object());
  p.summary.model = s.value("model", p.pcg.name);
  p.summary.machine = s.value("machine", p.machine.name);
  p.summary.devices = s.value("devices", p.machine.num_devices());
  p.summary.mode = s.value("mode", "");
  p.summary.optimizer = s.value("optimizer", "sgd");
  p.summary.iteration_time_ms = s.value("iteration_time_ms", 0.0);
  p.summary.compute_ms = s.value("compute_ms", 0.0);
  p.summary.communication_ms = s.value("communication_ms", 0.0);
  p.summary.communication_bytes = s.value("communication_bytes", 0.0);
  p.summary.peak_memory_bytes = s.value("peak_memory_bytes", 0.0);
  p.summary.fits_in_memory = s.value("fits_in_memory", false);
  if (j.contains("operators")) {
    for (std::size_t i = 0; i < j["operators"].size(); ++i) {
      const json& o = j["operators"][i];
      const std::string where = fmt::format("plan: operators[{}]", i);
      if (!o.contains("node") || !o.contains("view"))
        throw InputError(where + ": needs 'node' and 'view'");
      const NodeId id = o["node"].get<NodeId>();
      if (!p.pcg.contains(id)) throw InputError(fmt::format("{}: no node {} in the PCG", where, id));
      MachineView v = view_from_json(o["view"], where);
      for (int d : v.devices())
        if (d < 0 || d >= p.machine.num_devices())
          throw InputError(fmt::format("{}: device {} is outside the machine's {} devices", where, d,
                                       p.machine.num_devices()));
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
  p.mapping.feasible = !p.mapping.views.empty();
  p.mapping.fits_in_memory = p.summary.fits_in_memory;
  p.mapping.peak_memory = p.summary.peak_memory_bytes;
  return p;
}

}  // namespace unity
