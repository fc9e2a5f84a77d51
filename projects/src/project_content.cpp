// Models, machines, searches (read side) and plans of a Project.
#include <fmt/format.h>

#include "json_column.h"
#include "process_owner.h"
#include "search_store.h"
#include "sqlite_db.h"
#include "unity/core/content_hash.h"
#include "unity/core/errors.h"
#include "unity/core/json_io.h"
#include "unity/projects/project.h"

namespace unity::projects {
using detail::Statement;
using detail::Transaction;

namespace {

// Graphs and machines come back through the same parsers as files, so a damaged row is reported
// like a damaged file.
template <typename Parse>
auto parse_stored(const std::filesystem::path& file, const char* what, std::int64_t id,
                  Parse&& parse) {
  try {
    return parse();
  } catch (const InputError& e) {
    throw InputError(fmt::format("'{}': {} {} in the project is damaged: {}", file.string(), what,
                                 id, e.what()));
  }
}

}  // namespace

std::int64_t Project::add_model(const Graph& model, const std::string& source) {
  require_writable("add a model");
  const std::string hash = hex64(model.structural_hash());
  const std::string json = graph_to_json(model).dump();
  auto& c = *connection_;
  Transaction tx(c);
  Statement insert(c, R"sql(
INSERT INTO models (name, source, structural_hash, model_json, created_at)
VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (name, structural_hash) DO NOTHING)sql");
  insert.bind(1, model.name).bind(2, source).bind(3, hash).bind(4, json).bind(5, detail::utc_now());
  insert.run();
  Statement find(c, "SELECT id FROM models WHERE name = ?1 AND structural_hash = ?2");
  find.bind(1, model.name).bind(2, hash);
  find.step();
  const std::int64_t id = find.column_int(0);
  find.reset();
  tx.commit();
  return id;
}

std::vector<ModelRecord> Project::models() const {
  Statement s(*connection_,
              "SELECT id, name, source, structural_hash, created_at FROM models ORDER BY id");
  std::vector<ModelRecord> out;
  while (s.step())
    out.push_back(
        {s.column_int(0), s.column_text(1), s.column_text(2), s.column_text(3), s.column_text(4)});
  return out;
}

Graph Project::load_model(std::int64_t model_id) const {
  Statement s(*connection_, "SELECT model_json FROM models WHERE id = ?1");
  s.bind(1, model_id);
  if (!s.step())
    throw InputError(fmt::format("'{}': no model {} in the project", file_.string(), model_id));
  const auto j = detail::parse_json_column(s, 0, file_, "a model");
  return parse_stored(file_, "model", model_id, [&] { return graph_from_json(j); });
}

std::int64_t Project::add_machine(const MachineSpec& machine) {
  require_writable("add a machine");
  const std::string json = machine_to_json(machine).dump();
  const std::string hash = hex64(fnv1a64(json));
  auto& c = *connection_;
  Transaction tx(c);
  Statement insert(c, R"sql(
INSERT INTO machines (name, devices, content_hash, machine_json, created_at)
VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (name, content_hash) DO NOTHING)sql");
  insert.bind(1, machine.name)
      .bind(2, machine.num_devices())
      .bind(3, hash)
      .bind(4, json)
      .bind(5, detail::utc_now());
  insert.run();
  Statement find(c, "SELECT id FROM machines WHERE name = ?1 AND content_hash = ?2");
  find.bind(1, machine.name).bind(2, hash);
  find.step();
  const std::int64_t id = find.column_int(0);
  find.reset();
  tx.commit();
  return id;
}

std::vector<MachineRecord> Project::machines() const {
  Statement s(*connection_, "SELECT id, name, devices, created_at FROM machines ORDER BY id");
  std::vector<MachineRecord> out;
  while (s.step())
    out.push_back(
        {s.column_int(0), s.column_text(1), static_cast<int>(s.column_int(2)), s.column_text(3)});
  return out;
}

MachineSpec Project::load_machine(std::int64_t machine_id) const {
  Statement s(*connection_, "SELECT machine_json FROM machines WHERE id = ?1");
  s.bind(1, machine_id);
  if (!s.step())
    throw InputError(fmt::format("'{}': no machine {} in the project", file_.string(), machine_id));
  const auto j = detail::parse_json_column(s, 0, file_, "a machine");
  return parse_stored(file_, "machine", machine_id, [&] { return machine_from_json(j); });
}

std::vector<SearchRecord> Project::searches() const {
  const detail::ReadTransaction snapshot(*connection_);
  return detail::query_searches(*connection_);
}

std::optional<SearchRecord> Project::search(std::int64_t search_id) const {
  const detail::ReadTransaction snapshot(*connection_);
  auto rows = detail::query_searches(*connection_, search_id);
  if (rows.empty()) return std::nullopt;
  return std::move(rows.front());
}

std::vector<SearchEvent> Project::load_search_steps(std::int64_t search_id,
                                                    std::int64_t first_seq) const {
  const detail::ReadTransaction snapshot(*connection_);
  return detail::query_search_steps(*connection_, search_id, first_seq);
}

std::int64_t Project::count_search_steps(std::int64_t search_id) const {
  Statement s(*connection_, "SELECT count(*) FROM search_steps WHERE search_id = ?1");
  s.bind(1, search_id);
  s.step();
  return s.column_int(0);
}

std::int64_t Project::add_plan(const Plan& plan, std::optional<std::int64_t> search_id) {
  require_writable("add a plan");
  const auto& s = plan.summary;
  const std::string plan_json = plan_to_json(plan).dump();
  const std::string summary_json = summary_to_json(s).dump();
  auto& c = *connection_;
  Transaction tx(c);
  if (search_id) {
    Statement check(c, "SELECT count(*) FROM searches WHERE id = ?1");
    check.bind(1, *search_id);
    check.step();
    if (check.column_int(0) == 0)
      throw InputError(
          fmt::format("'{}': no search {} in the project", file_.string(), *search_id));
  }
  Statement insert(c, R"sql(
INSERT INTO plans (search_id, model, machine, devices, mode, iteration_time_ms, summary_json,
                   plan_json, created_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9))sql");
  insert.bind(1, search_id)
      .bind(2, s.model)
      .bind(3, s.machine)
      .bind(4, s.devices)
      .bind(5, s.mode)
      .bind(6, s.iteration_time_ms)
      .bind(7, summary_json)
      .bind(8, plan_json)
      .bind(9, detail::utc_now());
  insert.run();
  const std::int64_t id = c.last_insert_rowid();
  tx.commit();
  return id;
}

std::optional<std::int64_t> Project::find_plan(const Plan& plan) const {
  // Plans are compared as a plan file would hold them (a plan read back from a file lacks some
  // figures of the one the search returned), among the rows for the same model, machine and mode.
  const auto& s = plan.summary;
  const std::string wanted = plan_to_json(plan_from_json(plan_to_json(plan))).dump();
  Statement candidates(*connection_, R"sql(
SELECT id, plan_json FROM plans WHERE model = ?1 AND machine = ?2 AND devices = ?3 AND mode = ?4
ORDER BY id)sql");
  candidates.bind(1, s.model).bind(2, s.machine).bind(3, s.devices).bind(4, s.mode);
  while (candidates.step()) {
    const auto id = candidates.column_int(0);
    const auto j = detail::parse_json_column(candidates, 1, file_, "a plan");
    const Plan stored = parse_stored(file_, "plan", id, [&] { return plan_from_json(j); });
    if (plan_to_json(stored).dump() == wanted) return id;
  }
  return std::nullopt;
}

std::vector<PlanRecord> Project::plans() const {
  Statement s(*connection_, R"sql(
SELECT id, search_id, model, machine, devices, mode, iteration_time_ms, summary_json, created_at
FROM plans ORDER BY id)sql");
  std::vector<PlanRecord> out;
  while (s.step()) {
    PlanRecord r;
    r.id = s.column_int(0);
    r.search_id = s.column_optional_int(1);
    r.model = s.column_text(2);
    r.machine = s.column_text(3);
    r.devices = static_cast<int>(s.column_int(4));
    r.mode = s.column_text(5);
    r.iteration_time_ms = s.column_double(6);
    r.summary = detail::parse_json_column(s, 7, file_, "a plan's summary");
    r.created_at = s.column_text(8);
    out.push_back(std::move(r));
  }
  return out;
}

Plan Project::load_plan(std::int64_t plan_id) const {
  Statement s(*connection_, "SELECT plan_json FROM plans WHERE id = ?1");
  s.bind(1, plan_id);
  if (!s.step())
    throw InputError(fmt::format("'{}': no plan {} in the project", file_.string(), plan_id));
  const auto j = detail::parse_json_column(s, 0, file_, "a plan");
  return parse_stored(file_, "plan", plan_id, [&] { return plan_from_json(j); });
}

}  // namespace unity::projects
