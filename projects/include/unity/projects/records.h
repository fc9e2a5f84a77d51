#pragma once
// The rows of a project file as plain structs (schema: docs/projects.md). JSON columns come back
// parsed; timestamps are UTC ISO 8601 strings ("2024-05-01T12:34:56.789Z").
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "unity/core/search/search_observer.h"

namespace unity::projects {

// Status of a search or a run. 'interrupted': its process died while it was running (found on the
// next open); 'failed': it ended with an error.
// The stored names are to_string's; never rename one: files in the wild hold them.
enum class Status { Running, Completed, Cancelled, Interrupted, Failed };
std::string_view to_string(Status status);  // "running", "completed", ...
std::optional<Status> status_from_string(std::string_view name);

// The names search_steps.kind stores: "started", "candidate_costed", "new_best", "pruned",
// "step_done", "finished". Stable across versions (the file outlives the enum's order).
const char* event_kind_name(SearchEvent::Kind kind);
SearchEvent::Kind event_kind_from_name(std::string_view name);  // throws InputError

struct ModelRecord {
  std::int64_t id = 0;
  std::string name;
  std::string source;           // what the user named: a zoo name or a file path
  std::string structural_hash;  // Graph::structural_hash() as 16 hex digits
  std::string created_at;
};

struct MachineRecord {
  std::int64_t id = 0;
  std::string name;
  int devices = 0;
  std::string created_at;
};

// What a search row says before any step is recorded.
struct SearchInfo {
  std::optional<std::int64_t> model_id;
  std::optional<std::int64_t> machine_id;
  int devices = 0;
  std::string mode;
  nlohmann::json config = nlohmann::json::object();  // alpha, budget, rules, optimizer, ...
};

struct SearchRecord {
  std::int64_t id = 0;
  SearchInfo info;
  std::string model;    // the model's name ("" when the search has none)
  std::string machine;  // the machine's name
  std::string status;
  std::string end_reason;  // the Finished event's status ("budget", ...) or why it failed
  std::string started_at;
  std::string finished_at;  // "" while running
  std::optional<double> search_seconds;
  std::optional<double> initial_ms;  // the input graph's cost (the Started event)
  std::optional<double> best_ms;
  std::int64_t candidates_evaluated = 0;
  std::int64_t steps = 0;  // recorded search_steps rows
};

struct PlanRecord {
  std::int64_t id = 0;
  std::optional<std::int64_t> search_id;
  std::string model;
  std::string machine;
  int devices = 0;
  std::string mode;
  double iteration_time_ms = 0;
  nlohmann::json summary;  // summary_to_json of the plan
  std::string created_at;
};

struct RunRecord {
  std::int64_t id = 0;
  std::int64_t plan_id = 0;
  std::string backend;
  int ranks = 0;
  nlohmann::json config = nlohmann::json::object();
  std::string status;
  nlohmann::json result;  // null while running
  std::string started_at;
  std::string finished_at;
};

struct RunMetric {
  std::int64_t iteration = 0;
  double time_ms = 0;
  std::optional<double> loss;
};

// A measured operator time that overrides the analytic cost model (key format: op_profile_key()).
struct OpProfile {
  std::string device;  // DeviceSpec::name
  std::string op_key;
  double forward_s = 0;
  double backward_s = 0;
  std::string source;       // "calibrate", "run 12", ...
  std::string measured_at;  // filled in when stored, if empty
};

enum class RuleChoice { Pin, Veto };
std::string_view to_string(RuleChoice choice);

// A pinned or vetoed substitution: for one model, or for every model when model_id is empty.
struct PinVeto {
  std::int64_t id = 0;
  std::optional<std::int64_t> model_id;
  std::string rule;
  nlohmann::json match;  // where it applies (matched nodes, ...); null: everywhere
  RuleChoice state = RuleChoice::Pin;
  std::string created_at;
};

struct ProjectCounts {
  std::int64_t models = 0;
  std::int64_t machines = 0;
  std::int64_t searches = 0;
  std::int64_t running = 0;
  std::int64_t completed = 0;
  std::int64_t cancelled = 0;
  std::int64_t interrupted = 0;
  std::int64_t failed = 0;
  std::int64_t plans = 0;
  std::int64_t runs = 0;
  std::int64_t op_profiles = 0;
  std::int64_t pins_vetoes = 0;
};

}  // namespace unity::projects
