// Training runs with their per-iteration metrics, measured op profiles, pins and vetoes.
#include <cmath>

#include <fmt/format.h>

#include "json_column.h"
#include "process_owner.h"
#include "search_store.h"
#include "sqlite_db.h"
#include "unity/core/errors.h"
#include "unity/projects/project.h"

namespace unity::projects {
using detail::Statement;
using detail::Transaction;

namespace {

bool exists_row(detail::Connection& c, const char* table, std::int64_t id) {
  Statement s(c, fmt::format("SELECT count(*) FROM {} WHERE id = ?1", table));
  s.bind(1, id);
  s.step();
  return s.column_int(0) != 0;
}

RuleChoice rule_choice_from(const std::string& text) {
  return text == "veto" ? RuleChoice::Veto : RuleChoice::Pin;
}

}  // namespace

std::int64_t Project::begin_run(std::int64_t plan_id, const std::string& backend, int ranks,
                                const nlohmann::json& config) {
  require_writable("record a run");
  if (ranks <= 0) throw InputError(fmt::format("a run needs at least one rank, not {}", ranks));
  auto& c = *connection_;
  Transaction tx(c);
  if (!exists_row(c, "plans", plan_id))
    throw InputError(fmt::format("'{}': no plan {} in the project", file_.string(), plan_id));
  const auto owner = detail::current_process();
  Statement insert(c, R"sql(
INSERT INTO runs (plan_id, backend, ranks, config_json, status, started_at, owner_host, owner_pid,
                  owner_start)
VALUES (?1, ?2, ?3, ?4, 'running', ?5, ?6, ?7, ?8))sql");
  insert.bind(1, plan_id)
      .bind(2, backend)
      .bind(3, ranks)
      .bind(4, config.dump())
      .bind(5, detail::utc_now())
      .bind(6, owner.host)
      .bind(7, owner.pid)
      .bind(8, owner.start);
  insert.run();
  const std::int64_t id = c.last_insert_rowid();
  tx.commit();
  return id;
}

void Project::add_run_metrics(std::int64_t run_id, const std::vector<RunMetric>& metrics) {
  require_writable("record run metrics");
  for (const auto& m : metrics)
    if (!std::isfinite(m.time_ms) || m.time_ms < 0)
      throw InputError(fmt::format("run {}: iteration {} has an invalid time ({} ms)", run_id,
                                   m.iteration, m.time_ms));
  auto& c = *connection_;
  Transaction tx(c);
  if (!exists_row(c, "runs", run_id))
    throw InputError(fmt::format("'{}': no run {} in the project", file_.string(), run_id));
  Statement insert(c, R"sql(
INSERT INTO run_metrics (run_id, iteration, time_ms, loss) VALUES (?1, ?2, ?3, ?4)
ON CONFLICT (run_id, iteration) DO UPDATE SET time_ms = excluded.time_ms, loss = excluded.loss)sql");
  for (const auto& m : metrics) {
    insert.bind(1, run_id).bind(2, m.iteration).bind(3, m.time_ms).bind(4, m.loss);
    insert.run();
  }
  tx.commit();
}

void Project::finish_run(std::int64_t run_id, Status status, const nlohmann::json& result) {
  require_writable("finish a run");
  if (status == Status::Running)
    throw InputError(
        "'running' is not a final run status (expected completed, cancelled, "
        "interrupted or failed)");
  auto& c = *connection_;
  Transaction tx(c);
  if (!exists_row(c, "runs", run_id))
    throw InputError(fmt::format("'{}': no run {} in the project", file_.string(), run_id));
  Statement update(c,
                   "UPDATE runs SET status = ?2, result_json = ?3, finished_at = ?4 WHERE id = ?1");
  update.bind(1, run_id)
      .bind(2, to_string(status))
      .bind(3, result.dump())
      .bind(4, detail::utc_now());
  update.run();
  tx.commit();
}

std::vector<RunRecord> Project::runs() const {
  Statement s(*connection_, R"sql(
SELECT id, plan_id, backend, ranks, config_json, status, result_json, started_at, finished_at,
       owner_host, owner_pid, owner_start
FROM runs ORDER BY id)sql");
  std::vector<RunRecord> out;
  while (s.step()) {
    RunRecord r;
    r.id = s.column_int(0);
    r.plan_id = s.column_int(1);
    r.backend = s.column_text(2);
    r.ranks = static_cast<int>(s.column_int(3));
    r.config = detail::parse_json_column(s, 4, file_, "a run's configuration");
    detail::ProcessOwner owner{s.column_text(9), s.column_optional_int(10).value_or(0),
                               s.column_optional_int(11).value_or(0)};
    r.status = detail::effective_status(s.column_text(5), owner);
    r.result = detail::parse_json_column(s, 6, file_, "a run's result");
    r.started_at = s.column_text(7);
    r.finished_at = s.column_text(8);
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<RunMetric> Project::run_metrics(std::int64_t run_id) const {
  Statement s(
      *connection_,
      "SELECT iteration, time_ms, loss FROM run_metrics WHERE run_id = ?1 ORDER BY iteration");
  s.bind(1, run_id);
  std::vector<RunMetric> out;
  while (s.step())
    out.push_back({s.column_int(0), s.column_double(1), s.column_optional_double(2)});
  return out;
}

void Project::put_op_profiles(const std::vector<OpProfile>& profiles) {
  require_writable("store op profiles");
  for (const auto& p : profiles) {
    if (p.device.empty() || p.op_key.empty())
      throw InputError("an op profile needs a device name and an op key");
    if (!std::isfinite(p.forward_s) || !std::isfinite(p.backward_s) || p.forward_s < 0 ||
        p.backward_s < 0)
      throw InputError(
          fmt::format("op profile '{}' on '{}': times must be finite and >= 0 "
                      "(forward {} s, backward {} s)",
                      p.op_key, p.device, p.forward_s, p.backward_s));
  }
  auto& c = *connection_;
  Transaction tx(c);
  Statement upsert(c, R"sql(
INSERT INTO op_profiles (device, op_key, forward_s, backward_s, source, measured_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6)
ON CONFLICT (device, op_key) DO UPDATE SET forward_s = excluded.forward_s,
  backward_s = excluded.backward_s, source = excluded.source, measured_at = excluded.measured_at)sql");
  const std::string now = detail::utc_now();
  for (const auto& p : profiles) {
    upsert.bind(1, p.device)
        .bind(2, p.op_key)
        .bind(3, p.forward_s)
        .bind(4, p.backward_s)
        .bind(5, p.source)
        .bind(6, p.measured_at.empty() ? now : p.measured_at);
    upsert.run();
  }
  tx.commit();
}

std::vector<OpProfile> Project::op_profiles() const {
  Statement s(*connection_, R"sql(
SELECT device, op_key, forward_s, backward_s, source, measured_at FROM op_profiles
ORDER BY device, op_key)sql");
  std::vector<OpProfile> out;
  while (s.step())
    out.push_back({s.column_text(0), s.column_text(1), s.column_double(2), s.column_double(3),
                   s.column_text(4), s.column_text(5)});
  return out;
}

std::int64_t Project::set_pin_veto(std::optional<std::int64_t> model_id, const std::string& rule,
                                   const nlohmann::json& match, RuleChoice state) {
  require_writable("pin or veto a rule");
  if (rule.empty()) throw InputError("a pin or veto needs a rule name");
  const bool everywhere = match.is_null();
  const bool at_node = match.is_object() && match.size() == 1 && match.contains("node") &&
                       match["node"].is_string() && !match["node"].get<std::string>().empty();
  if (!everywhere && !at_node)
    throw InputError(fmt::format(
        "pin or veto of '{}': where it applies must be null (everywhere) or {{\"node\": NAME}}, "
        "not {}",
        rule, match.dump()));
  auto& c = *connection_;
  Transaction tx(c);
  if (model_id && !exists_row(c, "models", *model_id))
    throw InputError(fmt::format("'{}': no model {} in the project", file_.string(), *model_id));
  // Replaces an earlier choice for the same place (the unique index is on an expression, which an
  // upsert cannot name).
  Statement remove(c, R"sql(
DELETE FROM pins_vetoes WHERE ifnull(model_id, 0) = ifnull(?1, 0) AND rule = ?2 AND match_json = ?3)sql");
  remove.bind(1, model_id).bind(2, rule).bind(3, match.dump());
  remove.run();
  Statement insert(c, R"sql(
INSERT INTO pins_vetoes (model_id, rule, match_json, state, created_at) VALUES (?1, ?2, ?3, ?4, ?5))sql");
  insert.bind(1, model_id)
      .bind(2, rule)
      .bind(3, match.dump())
      .bind(4, to_string(state))
      .bind(5, detail::utc_now());
  insert.run();
  const std::int64_t id = c.last_insert_rowid();
  tx.commit();
  return id;
}

void Project::clear_pin_veto(std::optional<std::int64_t> model_id, const std::string& rule,
                             const nlohmann::json& match) {
  require_writable("clear a pin or veto");
  auto& c = *connection_;
  Transaction tx(c);
  Statement remove(c, R"sql(
DELETE FROM pins_vetoes WHERE ifnull(model_id, 0) = ifnull(?1, 0) AND rule = ?2 AND match_json = ?3)sql");
  remove.bind(1, model_id).bind(2, rule).bind(3, match.dump());
  remove.run();
  tx.commit();
}

std::vector<PinVeto> Project::pins_vetoes(std::optional<std::int64_t> model_id) const {
  Statement s(*connection_,
              model_id
                  ? "SELECT id, model_id, rule, match_json, state, created_at FROM pins_vetoes "
                    "WHERE model_id IS NULL OR model_id = ?1 ORDER BY id"
                  : "SELECT id, model_id, rule, match_json, state, created_at FROM pins_vetoes "
                    "ORDER BY id");
  if (model_id) s.bind(1, *model_id);
  std::vector<PinVeto> out;
  while (s.step()) {
    PinVeto p;
    p.id = s.column_int(0);
    p.model_id = s.column_optional_int(1);
    p.rule = s.column_text(2);
    p.match = detail::parse_json_column(s, 3, file_, "a pin's match");
    p.state = rule_choice_from(s.column_text(4));
    p.created_at = s.column_text(5);
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace unity::projects
