#include "search_store.h"

#include <bit>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "json_column.h"

namespace unity::projects::detail {
namespace {

constexpr std::string_view kInsertSearch = R"sql(
INSERT INTO searches (model_id, machine_id, devices, mode, config_json, status, started_at,
                      owner_host, owner_pid, owner_start)
VALUES (?1, ?2, ?3, ?4, ?5, 'running', ?6, ?7, ?8, ?9))sql";

constexpr std::string_view kInsertStep = R"sql(
INSERT INTO search_steps (search_id, seq, kind, step, rule, matched_nodes, candidate_ms, best_ms,
                          elapsed_seconds, queue_size, candidates_evaluated, candidate_hash, status,
                          matched_names, parameters, segment, segments, boundary)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18))sql";

constexpr std::string_view kUpdateProgress = R"sql(
UPDATE searches SET initial_ms = coalesce(initial_ms, ?2), best_ms = coalesce(?3, best_ms),
                    candidates_evaluated = ?4, search_seconds = ?5
WHERE id = ?1)sql";

constexpr std::string_view kFinish = R"sql(
UPDATE searches SET status = ?2, end_reason = ?3, finished_at = ?4,
                    initial_ms = coalesce(initial_ms, ?5), best_ms = coalesce(?6, best_ms),
                    candidates_evaluated = ?7, search_seconds = ?8
WHERE id = ?1)sql";

constexpr std::string_view kSelectSearches = R"sql(
SELECT s.id, s.model_id, s.machine_id, s.devices, s.mode, s.config_json, s.status, s.end_reason,
       s.started_at, s.finished_at, s.search_seconds, s.initial_ms, s.best_ms,
       s.candidates_evaluated, s.owner_host, s.owner_pid, s.owner_start,
       m.name, mc.name,
       (SELECT count(*) FROM search_steps t WHERE t.search_id = s.id)
FROM searches s LEFT JOIN models m ON m.id = s.model_id LEFT JOIN machines mc ON mc.id = s.machine_id
)sql";

constexpr std::string_view kSelectSteps = R"sql(
SELECT kind, step, rule, matched_nodes, candidate_ms, best_ms, elapsed_seconds, queue_size,
       candidates_evaluated, candidate_hash, status, matched_names, parameters, segment, segments,
       boundary
FROM search_steps WHERE search_id = ?1 AND seq >= ?2 ORDER BY seq LIMIT ?3)sql";

// NaN does not survive SQLite (it binds as NULL): store it as NULL and read NULL back as NaN.
double column_real(const Statement& s, int column) {
  return s.is_null(column) ? std::numeric_limits<double>::quiet_NaN() : s.column_double(column);
}

ProcessOwner owner_from(const Statement& s, int host, int pid, int start) {
  ProcessOwner owner;
  owner.host = s.column_text(host);
  owner.pid = s.column_optional_int(pid).value_or(0);
  owner.start = s.column_optional_int(start).value_or(0);
  return owner;
}

}  // namespace

SearchWriter::SearchWriter(Connection& connection)
    : connection_(connection),
      insert_search_(connection, kInsertSearch),
      insert_step_(connection, kInsertStep),
      update_progress_(connection, kUpdateProgress),
      finish_(connection, kFinish) {}

std::int64_t SearchWriter::insert_search(const SearchInfo& info, const ProcessOwner& owner) {
  insert_search_.bind(1, info.model_id)
      .bind(2, info.machine_id)
      .bind(3, info.devices)
      .bind(4, info.mode)
      .bind(5, info.config.dump())
      .bind(6, utc_now())
      .bind(7, owner.host)
      .bind(8, owner.pid)
      .bind(9, owner.start);
  insert_search_.run();
  return connection_.last_insert_rowid();
}

void SearchWriter::insert_step(std::int64_t search_id, std::int64_t seq, const SearchEvent& e) {
  auto& s = insert_step_;
  s.bind(1, search_id).bind(2, seq).bind(3, event_kind_name(e.kind)).bind(4, e.step);
  if (!e.rule.empty()) s.bind(5, e.rule);
  if (!e.matched_nodes.empty()) s.bind(6, nlohmann::json(e.matched_nodes).dump());
  s.bind(7, e.candidate_ms).bind(8, e.best_ms).bind(9, e.elapsed_seconds);
  s.bind(10, e.queue_size).bind(11, e.candidates_evaluated);
  // SQLite integers are signed: the 64-bit hash is stored with the same bits.
  s.bind(12, std::bit_cast<std::int64_t>(e.candidate_hash));
  if (!e.status.empty()) s.bind(13, e.status);
  if (!e.matched_names.empty()) s.bind(14, nlohmann::json(e.matched_names).dump());
  if (!e.parameters.empty()) s.bind(15, nlohmann::json(e.parameters).dump());
  if (e.segment != -1 || e.segments != 0) s.bind(16, e.segment).bind(17, e.segments);
  if (!e.boundary.empty()) s.bind(18, e.boundary);
  s.run();  // unbound parameters are NULL; run() clears the bindings for the next step
}

void SearchWriter::update_progress(std::int64_t search_id, const SearchProgress& p) {
  update_progress_.bind(1, search_id)
      .bind(2, p.initial_ms)
      .bind(3, p.best_ms)
      .bind(4, p.candidates_evaluated)
      .bind(5, p.search_seconds);
  update_progress_.run();
}

void SearchWriter::finish(std::int64_t search_id, std::string_view status, std::string_view reason,
                          const SearchProgress& p) {
  finish_.bind(1, search_id).bind(2, status);
  if (!reason.empty()) finish_.bind(3, reason);
  finish_.bind(4, utc_now())
      .bind(5, p.initial_ms)
      .bind(6, p.best_ms)
      .bind(7, p.candidates_evaluated)
      .bind(8, p.search_seconds);
  finish_.run();
}

std::string effective_status(const std::string& stored, const ProcessOwner& owner) {
  if (status_from_string(stored) == Status::Running && !owner_alive(owner))
    return std::string(to_string(Status::Interrupted));
  return stored;
}

std::vector<SearchRecord> query_searches(Connection& connection, std::optional<std::int64_t> id) {
  const std::string sql =
      std::string(kSelectSearches) + (id ? "WHERE s.id = ?1 ORDER BY s.id" : "ORDER BY s.id");
  Statement s(connection, sql);
  if (id) s.bind(1, *id);
  std::vector<SearchRecord> out;
  while (s.step()) {
    SearchRecord r;
    r.id = s.column_int(0);
    r.info.model_id = s.column_optional_int(1);
    r.info.machine_id = s.column_optional_int(2);
    r.info.devices = static_cast<int>(s.column_int(3));
    r.info.mode = s.column_text(4);
    r.info.config = parse_json_column(s, 5, connection.file(), "a search's configuration");
    r.status = effective_status(s.column_text(6), owner_from(s, 14, 15, 16));
    r.end_reason = s.column_text(7);
    if (status_from_string(r.status) == Status::Interrupted && r.end_reason.empty())
      r.end_reason = "its process ended without finishing";
    r.started_at = s.column_text(8);
    r.finished_at = s.column_text(9);
    r.search_seconds = s.column_optional_double(10);
    r.initial_ms = s.column_optional_double(11);
    r.best_ms = s.column_optional_double(12);
    r.candidates_evaluated = s.column_int(13);
    r.model = s.column_text(17);
    r.machine = s.column_text(18);
    r.steps = s.column_int(19);
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<std::string> query_search_statuses(Connection& connection) {
  Statement s(connection,
              "SELECT status, owner_host, owner_pid, owner_start FROM searches ORDER BY id");
  std::vector<std::string> out;
  while (s.step()) out.push_back(effective_status(s.column_text(0), owner_from(s, 1, 2, 3)));
  return out;
}

std::vector<SearchEvent> query_search_steps(Connection& connection, std::int64_t search_id,
                                            std::int64_t first_seq, std::int64_t limit) {
  Statement s(connection, kSelectSteps);
  s.bind(1, search_id).bind(2, first_seq).bind(3, limit);
  std::vector<SearchEvent> out;
  const auto& file = connection.file();
  while (s.step()) {
    SearchEvent e;
    e.kind = event_kind_from_name(s.column_text(0));
    e.step = s.column_int(1);
    e.rule = s.column_text(2);
    if (!s.is_null(3))
      e.matched_nodes =
          parse_json_column(s, 3, file, "a step's matched nodes").get<std::vector<NodeId>>();
    e.candidate_ms = column_real(s, 4);
    e.best_ms = column_real(s, 5);
    e.elapsed_seconds = column_real(s, 6);
    e.queue_size = s.column_int(7);
    e.candidates_evaluated = s.column_int(8);
    e.candidate_hash = std::bit_cast<std::uint64_t>(s.column_int(9));
    e.status = s.column_text(10);
    if (!s.is_null(11))
      e.matched_names =
          parse_json_column(s, 11, file, "a step's matched names").get<std::vector<std::string>>();
    if (!s.is_null(12))
      e.parameters = parse_json_column(s, 12, file, "a step's parameters")
                         .get<std::map<std::string, std::int64_t>>();
    if (!s.is_null(13)) {
      e.segment = static_cast<int>(s.column_int(13));
      e.segments = static_cast<int>(s.column_int(14));
    }
    e.boundary = s.column_text(15);
    out.push_back(std::move(e));
  }
  return out;
}

void mark_dead_owners(Connection& connection, const char* table) {
  const std::string select = fmt::format(
      "SELECT id, owner_host, owner_pid, owner_start FROM {} WHERE status = 'running'", table);
  auto dead_rows = [&] {
    std::vector<std::int64_t> dead;
    Statement s(connection, select);
    while (s.step())
      if (!owner_alive(owner_from(s, 1, 2, 3))) dead.push_back(s.column_int(0));
    return dead;
  };
  // Most opens find nothing running: look before taking the write lock.
  if (dead_rows().empty()) return;
  Transaction tx(connection);
  const bool has_reason = std::string_view(table) == "searches";
  Statement update(connection,
                   fmt::format("UPDATE {} SET status = 'interrupted', finished_at = ?2{} "
                               "WHERE id = ?1 AND status = 'running'",
                               table, has_reason ? ", end_reason = coalesce(end_reason, ?3)" : ""));
  const std::string now = utc_now();
  for (const auto id : dead_rows()) {
    update.bind(1, id).bind(2, now);
    if (has_reason) update.bind(3, "its process ended without finishing");
    update.run();
  }
  tx.commit();
}

}  // namespace unity::projects::detail
