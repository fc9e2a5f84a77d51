#pragma once
// One Unity project file (`.unity`): a SQLite database in WAL mode holding models, machines,
// searches with every step, plans, runs with per-iteration metrics, op profiles, pins and vetoes
// (schema and migration policy: docs/projects.md).
//
// A Project is one SQLite connection: use it from one thread at a time. Another thread or process
// that wants to read while this one writes opens its own Project (WAL lets readers and one writer
// work at the same time). Every write is one transaction.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "unity/core/machine/machine_spec.h"
#include "unity/core/pcg/graph.h"
#include "unity/core/plan/plan.h"
#include "unity/core/search/search_observer.h"
#include "unity/projects/records.h"

namespace unity::projects {

namespace detail {
class Connection;
}

enum class Access {
  // Migrates an older file and marks searches and runs whose process died as interrupted.
  ReadWrite,
  // A live reader beside a writer (the explorer while a search records). Writes nothing, but SQLite
  // needs the -wal/-shm files of a WAL database and creates them if missing.
  ReadOnly,
  // Like ReadOnly, but when no other connection has the file open it reads the file as it is,
  // creating nothing beside it (for one-shot commands such as `unity project show`).
  Snapshot,
};

class Project {
 public:
  // Creates a new project; throws InputError if `file` already exists (whatever it holds).
  static Project create(const std::filesystem::path& file);
  // Opens an existing project. Throws InputError, leaving the file byte-for-byte untouched and
  // creating no -wal/-shm files, when it is missing, not SQLite, truncated, another application's
  // database, or from a newer schema version than this build knows; a ReadOnly or Snapshot open of
  // an older schema version is also refused (it would need migrating).
  static Project open(const std::filesystem::path& file, Access access = Access::ReadWrite);
  static Project open_or_create(const std::filesystem::path& file);

  Project(Project&&) noexcept;
  Project& operator=(Project&&) noexcept;
  ~Project();

  // The schema version this build writes (the migrations it knows).
  static int latest_schema_version();
  int schema_version() const { return schema_version_; }
  const std::filesystem::path& file() const { return file_; }
  bool read_only() const { return access_ != Access::ReadWrite; }

  ProjectCounts counts() const;

  // Models and machines are stored once: adding an equal one again returns the existing id (models
  // by name and structural hash, machines by name and JSON).
  std::int64_t add_model(const Graph& model, const std::string& source);
  std::vector<ModelRecord> models() const;
  Graph load_model(std::int64_t model_id) const;  // throws InputError for an unknown id
  std::int64_t add_machine(const MachineSpec& machine);
  std::vector<MachineRecord> machines() const;
  MachineSpec load_machine(std::int64_t machine_id) const;

  // Searches are written by a SearchRecorder (search_recorder.h). A 'running' search whose process
  // is gone reads as 'interrupted' even from a read-only Project.
  std::vector<SearchRecord> searches() const;
  std::optional<SearchRecord> search(std::int64_t search_id) const;
  // The recorded events of a search in the order they were reported (the explorer replays them),
  // from the `first_seq`-th on (0-based), so that a live reader can fetch only what is new.
  std::vector<SearchEvent> load_search_steps(std::int64_t search_id,
                                             std::int64_t first_seq = 0) const;
  std::int64_t count_search_steps(std::int64_t search_id) const;

  std::int64_t add_plan(const Plan& plan, std::optional<std::int64_t> search_id = std::nullopt);
  std::vector<PlanRecord> plans() const;
  Plan load_plan(std::int64_t plan_id) const;  // throws InputError for an unknown id
  // The first stored plan equal to `plan` (same plan JSON), e.g. to record a run of a plan file
  // that came out of this project.
  std::optional<std::int64_t> find_plan(const Plan& plan) const;

  // A training run of a plan: begin (status running), metrics as iterations finish, then finish.
  std::int64_t begin_run(std::int64_t plan_id, const std::string& backend, int ranks,
                         const nlohmann::json& config = nlohmann::json::object());
  void add_run_metrics(std::int64_t run_id, const std::vector<RunMetric>& metrics);
  // Throws InputError for Status::Running (not a final status).
  void finish_run(std::int64_t run_id, Status status, const nlohmann::json& result);
  std::vector<RunRecord> runs() const;
  std::vector<RunMetric> run_metrics(std::int64_t run_id) const;

  // Inserts or replaces (same device and key) measured operator times, all in one transaction.
  void put_op_profiles(const std::vector<OpProfile>& profiles);
  std::vector<OpProfile> op_profiles() const;

  // Sets (replacing an earlier choice for the same model, rule and match) or clears a pin or veto.
  // `match` is null (everywhere the rule matches) or {"node": NAME} (matches covering that node).
  std::int64_t set_pin_veto(std::optional<std::int64_t> model_id, const std::string& rule,
                            const nlohmann::json& match, RuleChoice state);
  void clear_pin_veto(std::optional<std::int64_t> model_id, const std::string& rule,
                      const nlohmann::json& match);
  // The choices for a model: its own and the global ones; all of them when model_id is empty.
  std::vector<PinVeto> pins_vetoes(std::optional<std::int64_t> model_id = std::nullopt) const;

  // The connection, for the library's own writers (SearchRecorder opens a second one).
  detail::Connection& connection() const { return *connection_; }

 private:
  Project(std::filesystem::path file, Access access, std::unique_ptr<detail::Connection> connection,
          int schema_version);
  void require_writable(const char* what) const;
  void mark_dead_owners_interrupted();

  std::filesystem::path file_;
  Access access_ = Access::ReadWrite;
  std::unique_ptr<detail::Connection> connection_;
  int schema_version_ = 0;
};

}  // namespace unity::projects
