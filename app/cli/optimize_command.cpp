// `unity optimize MODEL --machine P [--nodes N|--gpus N] [--mode M] [--out plan.json] [--json]`.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "commands.h"
#include "machine_options.h"
#include "pipeline_report.h"
#include "progress_printer.h"
#include "project_option.h"
#include "search_options.h"
#include "table_printer.h"
#include "unity/core/cost/published_accuracy.h"
#include "unity/core/errors.h"
#include "unity/core/json_io.h"
#include "unity/core/launch/launcher_verdicts.h"
#include "unity/core/plan/memory_verdict.h"
#include "unity/core/plan/plan_optimizer.h"
#include "unity/core/plan/search_mode.h"
#include "unity/core/zoo/model_loader.h"
#include "unity/use_cases/calibrate.h"
#include "unity/use_cases/cpu_probe.h"
#include "unity/use_cases/optimize_and_record.h"

namespace unity::cli {

void add_optimize_command(CLI::App& app) {
  struct Options {
    std::string model;
    MachineOptions machine;
    OptimizeOptions optimize;
    std::string out;
    bool json = false;
    bool progress = false;
    ModelOptions model_options;
    std::string project;
    LayoutOptions layout;
  };
  auto opt = std::make_shared<Options>();
  // What a user who types "optimize" expects: the joint search (the baselines are modes to ask
  // for).
  opt->optimize.mode = "joint";
  auto* cmd = app.add_subcommand("optimize", "Find a training plan for a model on a machine");
  cmd->add_option("model", opt->model,
                  "Zoo model name, .onnx, model .json or Hugging Face config.json (or its folder)")
      ->required();
  add_machine_options(cmd, opt->machine);
  cmd->add_option("--mode", opt->optimize.mode, "Search mode")
      ->check(CLI::IsMember(search_mode_names()))
      ->capture_default_str();
  cmd->add_flag("--progress", opt->progress, "Print search progress on stderr");
  add_search_options(cmd, opt->optimize);
  add_layout_options(cmd, opt->layout);
  add_model_options(cmd, opt->model_options);
  cmd->add_option("--out", opt->out, "Write the plan (PCG, machine views, costs) as JSON");
  cmd->add_flag("--json", opt->json, "Print the result as one JSON object");
  add_project_option(cmd, opt->project);
  cmd->callback([opt] {
    std::optional<projects::Project> project;
    if (!opt->project.empty()) project.emplace(projects::Project::open_or_create(opt->project));
    const MachineSpec machine = project_machine(project, opt->machine);
    const Graph model = opt->model_options.load(opt->model, machine.num_devices());
    ProgressPrinter progress;
    OptimizeOptions options = opt->optimize;
    options.layout = opt->layout.layout();
    // --launcher F: a model F trains in no layout is refused before the search.
    if (!opt->layout.launcher.empty()) {
      const auto framework = launch::framework_from_string(opt->layout.launcher);
      if (const auto why = launch::model_refusals(model, machine, framework); !why.empty())
        throw InputError(
            fmt::format("--launcher {}: {} does not train '{}' in any layout: {} (nothing planned)",
                        opt->layout.launcher, launch::display_name(framework), model.name,
                        fmt::join(why, "; ")));
    }
    if (opt->progress) options.observer = &progress;
    // --project: the model, machine, search steps and plan, in the project.
    use_cases::ProjectRecord recorded;
    Plan plan = project ? use_cases::optimize_and_record(*project, model, opt->model, machine,
                                                         options, recorded)
                        : optimize_plan(model, machine, options);
    // Which launchers take the plan as it is (unity export without --nearest): a decoder's only.
    const auto launchers = launch::launcher_verdicts(plan);
    // --launcher F promises a plan F runs: where F still refuses it (the model, mostly), say
    // why and write nothing.
    if (!opt->layout.launcher.empty() && launchers) {
      const launch::LauncherVerdict& v =
          launchers->of(launch::framework_from_string(opt->layout.launcher));
      if (!v.runs())
        throw InputError(fmt::format(
            "--launcher {}: {} does not run the plan found for '{}': {} (nothing written)",
            opt->layout.launcher, launch::display_name(v.framework), plan.summary.model,
            fmt::join(v.refusals, "; ")));
    }
    if (!opt->out.empty()) write_text_file_atomic(opt->out, plan_to_json(plan).dump(1) + "\n");
    const auto& s = plan.summary;
    if (opt->json) {
      auto j = summary_to_json(s);
      if (const auto checked = published_accuracy(machine, model, plan.experts_per_device()))
        j["published_accuracy"] = {{"family", checked->family},
                                   {"kind", checked->kind},
                                   {"runs", checked->runs},
                                   {"rows", checked->rows},
                                   {"within_10_percent", checked->within_10_percent},
                                   {"lowest_error", checked->lowest_error},
                                   {"highest_error", checked->highest_error}};
      if (!opt->project.empty()) j["project"] = recorded.to_json();
      if (launchers) {
        auto& out = j["launchers"] = nlohmann::json::object();
        for (const auto& v : launchers->verdicts)
          out[std::string(launch::to_string(v.framework))] = {{"runs", v.runs()},
                                                              {"refusals", v.refusals}};
      }
      // cpu-local: which figures it was costed with.
      if (const auto figures = use_cases::cpu_figures_of(machine)) {
        const char* kinds[] = {"nominal", "probed", "calibrated"};
        j["cpu_figures"] = {{"kind", kinds[static_cast<int>(*figures)]},
                            {"source", use_cases::describe_cpu_figures(machine)}};
      }
      fmt::print("{}\n", j.dump(2));
      return;
    }
    fmt::print("{} on {} ({} devices), {}\n", s.model, s.machine, s.devices, s.mode);
    // A decoder's size as planned: the sequence and batch set the time as much as the layout, and
    // a Hugging Face config's default sequence is its longest (max_position_embeddings).
    if (const auto& shape = s.model_shape) {
      const auto config = hf_config_of(opt->model);
      const bool config_length = opt->model_options.resize.seq <= 0 && config;
      fmt::print(
          "  model          {} layers, hidden {}, {} heads{}{}, sequence {}{}, global batch {}{}\n",
          shape->layers, shape->hidden, shape->heads,
          shape->kv_heads > 0 && shape->kv_heads != shape->heads
              ? fmt::format(" ({} key/value)", shape->kv_heads)
              : "",
          shape->moe
              ? fmt::format(", {} experts ({} a token)", shape->moe->experts, shape->moe->top_k)
              : "",
          shape->seq,
          config_length ? " (the config's max_position_embeddings; --seq sets the length you "
                          "train at)"
                        : "",
          model.batch_size,
          // A config published in float32 plans in it: say so where --dtype did not choose.
          config && config->dtype == "float32" && opt->model_options.dtype.empty()
              ? ", float32 (the config's torch_dtype; --dtype bf16 plans mixed precision)"
              : "");
    }
    fmt::print("  iteration      {:.3f} ms (compute {:.3f} ms, communication {:.3f} ms)\n",
               s.iteration_time_ms, s.compute_ms, s.communication_ms);
    fmt::print("  communication  {} per iteration\n",
               human_bytes(static_cast<std::int64_t>(s.communication_bytes)));
    fmt::print("  peak memory    {} per device ({})\n",
               human_bytes(static_cast<std::int64_t>(s.peak_memory_bytes)),
               plan_memory_verdict(s.peak_memory_bytes, s.fits_in_memory, plan.machine).describe());
    // A plan that does not fit: whether any layout could on this many devices.
    if (const auto floor = memory_floor_statement(plan))
      fmt::print("  memory floor   {}\n", *floor);
    fmt::print("  operators      {} compute, {} parallel\n", s.operators, s.parallel_operators);
    fmt::print("  search         {:.3f} s, {} candidates{}\n", s.search_seconds,
               s.candidates_evaluated, s.search_status.empty() ? "" : " (" + s.search_status + ")");
    if (!s.origin.empty()) fmt::print("  plan           {}\n", s.origin);
    print_cost_sources(s, machine);
    if (const auto checked =
            published_accuracy_statement(machine, model, plan.experts_per_device()))
      fmt::print("  checked        {}\n", *checked);
    if (launchers)
      fmt::print("  launch         {}{}\n", launchers->describe(),
                 launchers->all_run()          ? ""
                 : launchers->searched_own_way ? " (optimize --launchable plans what they run; "
                                                 "export --nearest re-plans this layout)"
                                               : " (export --nearest writes the nearest layout "
                                                 "each runs)");
    if (plan.pipeline) {
      fmt::print("\n");
      print_pipeline(*plan.pipeline, false, has_causal_attention(plan.pcg));
    }
    for (const auto& a : s.substitutions_applied)
      fmt::print("  applied        {}{} on {}\n", a.rule, a.pinned ? " (pinned)" : "",
                 fmt::join(a.nodes, ", "));
    if (!opt->project.empty()) fmt::print("  project        {}\n", recorded.describe());
  });
}

}  // namespace unity::cli
