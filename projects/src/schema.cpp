#include "schema.h"

#include <fmt/format.h>

#include "file_check.h"
#include "sqlite_db.h"

namespace unity::projects::detail {
namespace {

// Never edit a step that has shipped: files in the wild have it applied. Add a new step instead
// (docs/projects.md, "Migration policy").
constexpr std::string_view kV1 = R"sql(
CREATE TABLE models (
  id              INTEGER PRIMARY KEY,
  name            TEXT NOT NULL,
  source          TEXT NOT NULL,
  structural_hash TEXT NOT NULL,
  model_json      TEXT NOT NULL,
  created_at      TEXT NOT NULL,
  UNIQUE (name, structural_hash)
);
CREATE TABLE machines (
  id           INTEGER PRIMARY KEY,
  name         TEXT NOT NULL,
  devices      INTEGER NOT NULL,
  content_hash TEXT NOT NULL,
  machine_json TEXT NOT NULL,
  created_at   TEXT NOT NULL,
  UNIQUE (name, content_hash)
);
CREATE TABLE searches (
  id                   INTEGER PRIMARY KEY,
  model_id             INTEGER REFERENCES models(id) ON DELETE SET NULL,
  machine_id           INTEGER REFERENCES machines(id) ON DELETE SET NULL,
  devices              INTEGER NOT NULL,
  mode                 TEXT NOT NULL,
  config_json          TEXT NOT NULL DEFAULT '{}',
  status               TEXT NOT NULL
                       CHECK (status IN ('running', 'completed', 'cancelled', 'interrupted', 'failed')),
  end_reason           TEXT,
  started_at           TEXT NOT NULL,
  finished_at          TEXT,
  search_seconds       REAL,
  initial_ms           REAL,
  best_ms              REAL,
  candidates_evaluated INTEGER NOT NULL DEFAULT 0,
  owner_host           TEXT,
  owner_pid            INTEGER,
  owner_start          INTEGER
);
CREATE INDEX searches_status ON searches(status);
CREATE TABLE search_steps (
  search_id            INTEGER NOT NULL REFERENCES searches(id) ON DELETE CASCADE,
  seq                  INTEGER NOT NULL,
  kind                 TEXT NOT NULL,
  step                 INTEGER NOT NULL,
  rule                 TEXT,
  matched_nodes        TEXT,
  candidate_ms         REAL,
  best_ms              REAL,
  elapsed_seconds      REAL,
  queue_size           INTEGER,
  candidates_evaluated INTEGER,
  candidate_hash       INTEGER,
  status               TEXT,
  PRIMARY KEY (search_id, seq)
) WITHOUT ROWID;
CREATE TABLE plans (
  id                INTEGER PRIMARY KEY,
  search_id         INTEGER REFERENCES searches(id) ON DELETE SET NULL,
  model             TEXT NOT NULL,
  machine           TEXT NOT NULL,
  devices           INTEGER NOT NULL,
  mode              TEXT NOT NULL,
  iteration_time_ms REAL NOT NULL,
  summary_json      TEXT NOT NULL,
  plan_json         TEXT NOT NULL,
  created_at        TEXT NOT NULL
);
CREATE INDEX plans_search ON plans(search_id);
)sql";

constexpr std::string_view kV2 = R"sql(
CREATE TABLE runs (
  id          INTEGER PRIMARY KEY,
  plan_id     INTEGER NOT NULL REFERENCES plans(id) ON DELETE CASCADE,
  backend     TEXT NOT NULL,
  ranks       INTEGER NOT NULL,
  config_json TEXT NOT NULL DEFAULT '{}',
  status      TEXT NOT NULL
              CHECK (status IN ('running', 'completed', 'cancelled', 'interrupted', 'failed')),
  result_json TEXT,
  started_at  TEXT NOT NULL,
  finished_at TEXT,
  owner_host  TEXT,
  owner_pid   INTEGER,
  owner_start INTEGER
);
CREATE INDEX runs_plan ON runs(plan_id);
CREATE INDEX runs_status ON runs(status);
CREATE TABLE run_metrics (
  run_id    INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  iteration INTEGER NOT NULL,
  time_ms   REAL NOT NULL,
  loss      REAL,
  PRIMARY KEY (run_id, iteration)
) WITHOUT ROWID;
CREATE TABLE op_profiles (
  id          INTEGER PRIMARY KEY,
  device      TEXT NOT NULL,
  op_key      TEXT NOT NULL,
  forward_s   REAL NOT NULL CHECK (forward_s >= 0),
  backward_s  REAL NOT NULL CHECK (backward_s >= 0),
  source      TEXT NOT NULL,
  measured_at TEXT NOT NULL,
  UNIQUE (device, op_key)
);
CREATE TABLE pins_vetoes (
  id         INTEGER PRIMARY KEY,
  model_id   INTEGER REFERENCES models(id) ON DELETE CASCADE,
  rule       TEXT NOT NULL,
  match_json TEXT NOT NULL DEFAULT 'null',
  state      TEXT NOT NULL CHECK (state IN ('pin', 'veto')),
  created_at TEXT NOT NULL
);
CREATE UNIQUE INDEX pins_vetoes_key ON pins_vetoes(ifnull(model_id, 0), rule, match_json);
)sql";

// What the search reports grew: the matched nodes' names (stable across candidates, unlike ids),
// the rule's parameters, and the piece of a split graph an event belongs to (paper 5.3).
constexpr std::string_view kV3 = R"sql(
ALTER TABLE search_steps ADD COLUMN matched_names TEXT;
ALTER TABLE search_steps ADD COLUMN parameters TEXT;
ALTER TABLE search_steps ADD COLUMN segment INTEGER;
ALTER TABLE search_steps ADD COLUMN segments INTEGER;
ALTER TABLE search_steps ADD COLUMN boundary TEXT;
)sql";

}  // namespace

const std::vector<Migration>& migrations() {
  static const std::vector<Migration> steps = {
      {1, "models, machines, searches with every step, plans", kV1},
      {2, "runs with per-iteration metrics, op profiles, pins and vetoes", kV2},
      {3, "search steps: matched node names, rule parameters, graph segments", kV3},
  };
  return steps;
}

int latest_schema_version() { return migrations().back().version; }

int migrate(Connection& connection, int target_version) {
  const int target = target_version > 0 ? target_version : latest_schema_version();
  if (connection.query_int("PRAGMA user_version") >= target)
    return static_cast<int>(connection.query_int("PRAGMA user_version"));
  Transaction tx(connection);
  const auto version = connection.query_int("PRAGMA user_version");
  if (version > latest_schema_version())
    throw_newer_schema(connection.file(), version, latest_schema_version());
  if (version >= target) return static_cast<int>(version);  // another process migrated it first
  for (const auto& m : migrations()) {
    if (m.version <= version || m.version > target) continue;
    connection.exec(m.sql);
  }
  // Both header fields are written inside the transaction: a crash leaves the old version and none
  // of the new tables.
  connection.exec(fmt::format("PRAGMA application_id = {}", kApplicationId));
  connection.exec(fmt::format("PRAGMA user_version = {}", target));
  tx.commit();
  return target;
}

}  // namespace unity::projects::detail
