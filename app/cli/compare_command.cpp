// `unity compare MODEL --machine P [--modes a,b,..] [--json] [--project FILE]`: the same model and
// machine planned by several modes (default: data-parallel, expert, sequential, joint), side by
// side: predicted time, compute, communication, memory and how long each search took.
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "commands.h"
#include "machine_options.h"
#include "progress_printer.h"
#include "project_option.h"
#include "search_options.h"
#include "table_printer.h"
#include "unity/core/json_io.h"
#include "unity/core/plan/plan_optimizer.h"
#include "unity/core/plan/search_mode.h"
#include "unity/use_cases/calibrate.h"
#include "unity/use_cases/optimize_and_record.h"

namespace unity::cli {

void add_compare_command(CLI::App& app) {
  struct Options {
    std::string model;
    MachineOptions machine;
    OptimizeOptions optimize;
    std::vector<std::string> modes = search_mode_names();
    bool json = false;
    bool progress = false;
    ModelOptions model_options;
    std::string project;
  };
  auto opt = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("compare", "Plan a model with several search modes, side by side");
  cmd->add_option("model", opt->model,
                  "Zoo model name, .onnx, model .json or Hugging Face config.json (or its folder)")
      ->required();
  add_machine_options(cmd, opt->machine);
  cmd->add_option("--modes", opt->modes, "Modes to compare, in this order")
      ->delimiter(',')
      ->check(CLI::IsMember(search_mode_names()))
      ->capture_default_str();
  add_search_options(cmd, opt->optimize);
  cmd->add_flag("--progress", opt->progress, "Print search progress on stderr");
  add_model_options(cmd, opt->model_options);
  cmd->add_flag("--json", opt->json, "Print {\"plans\": [summary per mode]} as one JSON object");
  add_project_option(cmd, opt->project);
  cmd->callback([opt] {
    std::optional<projects::Project> project;
    if (!opt->project.empty()) project.emplace(projects::Project::open_or_create(opt->project));
    const MachineSpec machine = project_machine(project, opt->machine);
    const Graph model = opt->model_options.load(opt->model, machine.num_devices());
    std::vector<PlanSummary> plans;
    std::vector<use_cases::ProjectRecord> records;
    for (const auto& mode : opt->modes) {
      ProgressPrinter progress;  // each mode's plan has its own best
      OptimizeOptions options = opt->optimize;
      options.mode = mode;
      if (opt->progress) {
        options.observer = &progress;
        fmt::print(stderr, "compare: {} ...\n", mode);
      }
      use_cases::ProjectRecord recorded;
      Plan plan = project ? use_cases::optimize_and_record(*project, model, opt->model, machine,
                                                           options, recorded)
                          : optimize_plan(model, machine, options);
      plans.push_back(std::move(plan.summary));
      records.push_back(recorded);
    }
    // The fastest plan that fits, for the "vs best" column; plans that do not fit never win.
    double best = std::numeric_limits<double>::infinity();
    for (const auto& s : plans)
      if (s.fits_in_memory) best = std::min(best, s.iteration_time_ms);

    if (opt->json) {
      nlohmann::json j = {{"model", model.name},
                          {"machine", machine.name},
                          {"devices", machine.num_devices()},
                          {"plans", nlohmann::json::array()}};
      for (std::size_t i = 0; i < plans.size(); ++i) {
        auto p = summary_to_json(plans[i]);
        if (!opt->project.empty()) p["project"] = records[i].to_json();
        j["plans"].push_back(std::move(p));
      }
      fmt::print("{}\n", j.dump(2));
      return;
    }
    fmt::print("{} on {} ({} devices)\n", model.name, machine.name, machine.num_devices());
    Table table({"mode", "iteration", "vs best", "compute", "communication", "sent/iter",
                 "peak memory", "search", "plan"});
    for (const auto& s : plans) {
      const std::string vs =
          s.fits_in_memory && best > 0 ? fmt::format("{:.2f}x", s.iteration_time_ms / best) : "-";
      table.add({s.mode, fmt::format("{:.3f} ms", s.iteration_time_ms), vs,
                 fmt::format("{:.3f} ms", s.compute_ms),
                 fmt::format("{:.3f} ms", s.communication_ms),
                 human_bytes(static_cast<std::int64_t>(s.communication_bytes)),
                 human_bytes(static_cast<std::int64_t>(s.peak_memory_bytes)) +
                     (s.fits_in_memory ? "" : " (DOES NOT FIT)"),
                 fmt::format("{:.2f} s", s.search_seconds),
                 s.origin.empty() ? fmt::format("{} substitutions", s.substitutions_applied.size())
                                  : s.origin});
    }
    table.print();
    if (!plans.empty()) print_cost_sources(plans.back(), machine);
    if (!opt->project.empty())
      for (const auto& r : records) fmt::print("  project        {}\n", r.describe());
  });
}

}  // namespace unity::cli
