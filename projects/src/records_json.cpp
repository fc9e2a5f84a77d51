#include "unity/projects/records_json.h"

#include <cmath>

#include <fmt/format.h>

namespace unity::projects {
namespace {

template <typename T>
nlohmann::json optional_json(const std::optional<T>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

nlohmann::json text_or_null(const std::string& text) {
  return text.empty() ? nlohmann::json(nullptr) : nlohmann::json(text);
}

}  // namespace

nlohmann::json to_json(const ProjectCounts& c) {
  return {{"models", c.models},
          {"machines", c.machines},
          {"searches", c.searches},
          {"running", c.running},
          {"completed", c.completed},
          {"cancelled", c.cancelled},
          {"interrupted", c.interrupted},
          {"failed", c.failed},
          {"plans", c.plans},
          {"runs", c.runs},
          {"op_profiles", c.op_profiles},
          {"pins_vetoes", c.pins_vetoes}};
}

nlohmann::json to_json(const ModelRecord& m) {
  return {{"id", m.id},
          {"name", m.name},
          {"source", m.source},
          {"structural_hash", m.structural_hash},
          {"created_at", m.created_at}};
}

nlohmann::json to_json(const MachineRecord& m) {
  return {{"id", m.id}, {"name", m.name}, {"devices", m.devices}, {"created_at", m.created_at}};
}

nlohmann::json to_json(const SearchRecord& s) {
  return {{"id", s.id},
          {"model_id", optional_json(s.info.model_id)},
          {"machine_id", optional_json(s.info.machine_id)},
          {"model", s.model},
          {"machine", s.machine},
          {"devices", s.info.devices},
          {"mode", s.info.mode},
          {"config", s.info.config},
          {"status", s.status},
          {"end_reason", text_or_null(s.end_reason)},
          {"started_at", s.started_at},
          {"finished_at", text_or_null(s.finished_at)},
          {"search_seconds", optional_json(s.search_seconds)},
          {"initial_ms", optional_json(s.initial_ms)},
          {"best_ms", optional_json(s.best_ms)},
          {"candidates_evaluated", s.candidates_evaluated},
          {"steps", s.steps}};
}

nlohmann::json to_json(const PlanRecord& p) {
  return {{"id", p.id},
          {"search_id", optional_json(p.search_id)},
          {"model", p.model},
          {"machine", p.machine},
          {"devices", p.devices},
          {"mode", p.mode},
          {"iteration_time_ms", p.iteration_time_ms},
          {"created_at", p.created_at}};
}

nlohmann::json to_json(const RunRecord& r) {
  return {{"id", r.id},
          {"plan_id", r.plan_id},
          {"backend", r.backend},
          {"ranks", r.ranks},
          {"config", r.config},
          {"status", r.status},
          {"result", r.result},
          {"started_at", r.started_at},
          {"finished_at", text_or_null(r.finished_at)}};
}

nlohmann::json to_json(const PinVeto& p) {
  return {
      {"id", p.id},       {"model_id", optional_json(p.model_id)},    {"rule", p.rule},
      {"match", p.match}, {"state", std::string(to_string(p.state))}, {"created_at", p.created_at}};
}

nlohmann::json step_to_json(std::int64_t seq, const SearchEvent& e) {
  auto number = [](double v) {
    return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
  };
  nlohmann::json j = {{"seq", seq},
                      {"kind", event_kind_name(e.kind)},
                      {"step", e.step},
                      {"rule", text_or_null(e.rule)},
                      {"matched_nodes", e.matched_nodes},
                      {"matched_names", e.matched_names},
                      {"parameters", e.parameters},
                      {"candidate_ms", number(e.candidate_ms)},
                      {"best_ms", number(e.best_ms)},
                      {"elapsed_seconds", number(e.elapsed_seconds)},
                      {"queue_size", e.queue_size},
                      {"candidates_evaluated", e.candidates_evaluated},
                      {"candidate_hash", fmt::format("{:016x}", e.candidate_hash)},
                      {"status", text_or_null(e.status)}};
  if (e.segment >= 0 || e.segments > 0) {
    j["segment"] = e.segment;
    j["segments"] = e.segments;
    j["boundary"] = text_or_null(e.boundary);
  }
  return j;
}

}  // namespace unity::projects
