// `unity project new|show|replay|upgrade FILE`: the project file (docs/projects.md).
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "commands.h"
#include "table_printer.h"
#include "unity/core/errors.h"
#include "unity/projects/project.h"
#include "unity/projects/records_json.h"
#include "unity/projects/sqlite_info.h"
#include "unity/use_cases/rule_choices.h"

namespace unity::cli {
namespace {
using namespace unity::projects;

std::string fixed(std::optional<double> v, int digits = 3) {
  return v ? fmt::format("{:.{}f}", *v, digits) : "-";
}

std::string status_text(const std::string& status, const std::string& reason) {
  if (reason.empty() || reason == status) return status;
  return status + " (" + reason + ")";
}

void print_counts(const Project& project, const ProjectCounts& c) {
  fmt::print("project   {} (schema version {}, SQLite {})\n", project.file().string(),
             project.schema_version(), sqlite_version());
  std::string searches = fmt::format("{} searches", c.searches);
  std::vector<std::string> by_status;
  for (const auto& [n, name] : {std::pair{c.running, "running"},
                                {c.completed, "completed"},
                                {c.cancelled, "cancelled"},
                                {c.interrupted, "interrupted"},
                                {c.failed, "failed"}})
    if (n > 0) by_status.push_back(fmt::format("{} {}", n, name));
  if (!by_status.empty()) searches += fmt::format(" ({})", fmt::join(by_status, ", "));
  fmt::print(
      "contents  {} models, {} machines, {}, {} plans, {} runs, {} op profiles, "
      "{} pins/vetoes\n",
      c.models, c.machines, searches, c.plans, c.runs, c.op_profiles, c.pins_vetoes);
}

void show(const std::string& file, bool json) {
  const auto project = Project::open(file, Access::Snapshot);
  const auto counts = project.counts();
  const auto models = project.models();
  const auto machines = project.machines();
  const auto searches = project.searches();
  const auto plans = project.plans();
  const auto runs = project.runs();
  const auto choices = project.pins_vetoes();
  if (json) {
    nlohmann::json j = {{"file", project.file().string()},
                        {"schema_version", project.schema_version()},
                        {"counts", to_json(counts)}};
    auto list = [](const auto& rows) {
      nlohmann::json a = nlohmann::json::array();
      for (const auto& r : rows) a.push_back(to_json(r));
      return a;
    };
    j["models"] = list(models);
    j["machines"] = list(machines);
    j["searches"] = list(searches);
    j["plans"] = list(plans);
    j["runs"] = list(runs);
    j["pins_vetoes"] = list(choices);
    fmt::print("{}\n", j.dump(2));
    return;
  }
  print_counts(project, counts);
  if (!models.empty()) {
    fmt::print("\nmodels\n");
    Table t({"id", "name", "hash", "source"});
    for (const auto& m : models) t.add({std::to_string(m.id), m.name, m.structural_hash, m.source});
    t.print();
  }
  if (!machines.empty()) {
    fmt::print("\nmachines\n");
    Table t({"id", "devices", "name"});
    for (const auto& m : machines) t.add({std::to_string(m.id), std::to_string(m.devices), m.name});
    t.print();
  }
  if (!searches.empty()) {
    fmt::print("\nsearches\n");
    Table t({"id", "model", "machine", "devices", "mode", "steps", "candidates", "initial ms",
             "best ms", "seconds", "started", "status"});
    for (const auto& s : searches)
      t.add({std::to_string(s.id), s.model.empty() ? "-" : s.model,
             s.machine.empty() ? "-" : s.machine, std::to_string(s.info.devices), s.info.mode,
             std::to_string(s.steps), std::to_string(s.candidates_evaluated), fixed(s.initial_ms),
             fixed(s.best_ms), fixed(s.search_seconds), s.started_at,
             status_text(s.status, s.end_reason)});
    t.print();
  }
  if (!plans.empty()) {
    fmt::print("\nplans\n");
    Table t({"id", "search", "devices", "mode", "iteration ms", "created", "model on machine"});
    for (const auto& p : plans)
      t.add({std::to_string(p.id), p.search_id ? std::to_string(*p.search_id) : "-",
             std::to_string(p.devices), p.mode, fixed(p.iteration_time_ms), p.created_at,
             p.model + " on " + p.machine});
    t.print();
  }
  if (!runs.empty()) {
    fmt::print("\nruns\n");
    Table t({"id", "plan", "backend", "ranks", "iterations", "started", "status"});
    for (const auto& r : runs)
      t.add({std::to_string(r.id), std::to_string(r.plan_id), r.backend, std::to_string(r.ranks),
             std::to_string(project.run_metrics(r.id).size()), r.started_at, r.status});
    t.print();
  }
  if (!choices.empty()) {
    fmt::print("\npins and vetoes\n");
    Table t({"id", "model", "state", "rule", "where"});
    for (const auto& p : choices)
      t.add({std::to_string(p.id), p.model_id ? std::to_string(*p.model_id) : "all",
             std::string(to_string(p.state)), p.rule,
             p.match.is_null() ? "everywhere" : p.match.dump()});
    t.print();
  }
}

void replay(const std::string& file, std::int64_t search_id, std::int64_t from,
            const std::vector<std::string>& kinds, bool json) {
  const auto project = Project::open(file, Access::Snapshot);
  const auto search = project.search(search_id);
  if (!search)
    throw InputError(
        fmt::format("'{}': no search {} in the project ('unity project show {}' "
                    "lists them)",
                    file, search_id, file));
  std::set<SearchEvent::Kind> wanted;
  for (const auto& k : kinds) wanted.insert(event_kind_from_name(k));
  const auto steps = project.load_search_steps(search_id, from);
  auto keep = [&](const SearchEvent& e) { return wanted.empty() || wanted.count(e.kind) != 0; };
  if (json) {
    nlohmann::json list = nlohmann::json::array();
    for (std::size_t i = 0; i < steps.size(); ++i)
      if (keep(steps[i]))
        list.push_back(step_to_json(from + static_cast<std::int64_t>(i), steps[i]));
    fmt::print("{}\n", nlohmann::json{{"search", to_json(*search)}, {"steps", list}}.dump(2));
    return;
  }
  fmt::print("search {}: {} on {} ({} devices, {}), {}, {} steps recorded\n", search->id,
             search->model.empty() ? "-" : search->model,
             search->machine.empty() ? "-" : search->machine, search->info.devices,
             search->info.mode, status_text(search->status, search->end_reason), search->steps);
  Table t({"seq", "step", "event", "candidate ms", "best ms", "queue", "candidates", "seconds",
           "rule / status"});
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const auto& e = steps[i];
    if (!keep(e)) continue;
    std::string what = e.rule;
    if (!e.matched_names.empty())
      what += " on " + fmt::format("{}", fmt::join(e.matched_names, ", "));
    else if (!e.matched_nodes.empty())
      what += fmt::format(" on nodes {}", fmt::join(e.matched_nodes, ", "));
    for (const auto& [name, value] : e.parameters) what += fmt::format(" {}={}", name, value);
    if (!e.status.empty()) what = e.status;
    if (e.segments > 0) what = fmt::format("[piece {}/{}] ", e.segment + 1, e.segments) + what;
    t.add({std::to_string(from + static_cast<std::int64_t>(i)), std::to_string(e.step),
           event_kind_name(e.kind), fmt::format("{:.3f}", e.candidate_ms),
           fmt::format("{:.3f}", e.best_ms), std::to_string(e.queue_size),
           std::to_string(e.candidates_evaluated), fmt::format("{:.3f}", e.elapsed_seconds), what});
  }
  t.print();
}

// `project pin|veto|unpin FILE RULE[@NODE] [--model NAME]`: the explorer's tri-state column.
void choose(const std::string& file, const std::string& where, const std::string& model_name,
            std::optional<RuleChoice> state) {
  auto project = Project::open(file, Access::ReadWrite);
  std::vector<std::optional<std::int64_t>> models;
  if (model_name.empty()) {
    models.push_back(std::nullopt);  // every model
  } else {
    for (const auto& m : project.models())
      if (m.name == model_name) models.push_back(m.id);
    if (models.empty())
      throw InputError(fmt::format("'{}': no model named '{}' in the project", file, model_name));
  }
  use_cases::set_choice(project, models, where, state);
  const std::string scope = model_name.empty() ? "every model" : "model " + model_name;
  if (state)
    fmt::print("{}: {} {} for {}\n", file, to_string(*state) == "pin" ? "pinned" : "vetoed", where,
               scope);
  else
    fmt::print("{}: cleared {} for {}\n", file, where, scope);
}

}  // namespace

void add_project_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("project", "Create and inspect project files (.unity)");
  cmd->require_subcommand(1);

  auto new_file = std::make_shared<std::string>();
  auto* create = cmd->add_subcommand("new", "Create an empty project file");
  create->add_option("file", *new_file, "The project file to create (must not exist)")->required();
  create->callback([new_file] {
    const auto project = Project::create(*new_file);
    fmt::print("created {} (project schema version {})\n", project.file().string(),
               project.schema_version());
  });

  struct ShowOptions {
    std::string file;
    bool json = false;
  };
  auto show_opt = std::make_shared<ShowOptions>();
  auto* show_cmd = cmd->add_subcommand(
      "show",
      "What a project holds: models, machines, searches with status and steps, plans, runs");
  show_cmd->add_option("file", show_opt->file, "The project file")->required();
  show_cmd->add_flag("--json", show_opt->json, "Print one JSON object");
  show_cmd->callback([show_opt] { show(show_opt->file, show_opt->json); });

  struct ReplayOptions {
    std::string file;
    std::int64_t search = 0;
    std::int64_t from = 0;
    std::vector<std::string> kinds;
    bool json = false;
  };
  auto replay_opt = std::make_shared<ReplayOptions>();
  auto* replay_cmd =
      cmd->add_subcommand("replay", "The recorded steps of a search, in the order they happened");
  replay_cmd->add_option("file", replay_opt->file, "The project file")->required();
  replay_cmd->add_option("--search", replay_opt->search, "Search id ('project show' lists them)")
      ->required();
  replay_cmd->add_option("--from", replay_opt->from, "First step to print (its seq)")
      ->check(CLI::NonNegativeNumber);
  replay_cmd
      ->add_option("--kind", replay_opt->kinds,
                   "Only these events: started, candidate_costed, new_best, pruned, step_done, "
                   "finished")
      ->check(CLI::IsMember(
          {"started", "candidate_costed", "new_best", "pruned", "step_done", "finished"}));
  replay_cmd->add_flag("--json", replay_opt->json,
                       "Print one JSON object: the search and its steps");
  replay_cmd->callback([replay_opt] {
    replay(replay_opt->file, replay_opt->search, replay_opt->from, replay_opt->kinds,
           replay_opt->json);
  });

  struct ChoiceOptions {
    std::string file;
    std::string where;
    std::string model;
  };
  const std::pair<const char*, std::optional<RuleChoice>> choices[] = {
      {"pin", RuleChoice::Pin}, {"veto", RuleChoice::Veto}, {"unpin", std::nullopt}};
  for (const auto& [name, state] : choices) {
    auto choice_opt = std::make_shared<ChoiceOptions>();
    auto* sub = cmd->add_subcommand(
        name, state == RuleChoice::Pin
                  ? "Pin a rule: optimize --project applies it wherever it matches"
              : state == RuleChoice::Veto ? "Veto a rule: optimize --project never applies it"
                                          : "Clear a pin or veto");
    sub->add_option("file", choice_opt->file, "The project file")->required();
    sub->add_option("rule", choice_opt->where, "RULE, or RULE@NODE for matches covering that node")
        ->required();
    sub->add_option("--model", choice_opt->model,
                    "Only for the stored model of this name (default: every model)");
    sub->callback([choice_opt, state = state] {
      choose(choice_opt->file, choice_opt->where, choice_opt->model, state);
    });
  }

  auto upgrade_file = std::make_shared<std::string>();
  auto* upgrade = cmd->add_subcommand(
      "upgrade", "Migrate a project written by an older Unity to this version's schema");
  upgrade->add_option("file", *upgrade_file, "The project file")->required();
  upgrade->callback([upgrade_file] {
    const auto project = Project::open(*upgrade_file, Access::ReadWrite);
    fmt::print("{}: project schema version {}\n", project.file().string(),
               project.schema_version());
  });
}

}  // namespace unity::cli
