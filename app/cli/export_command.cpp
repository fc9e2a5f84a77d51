// `unity export PLAN --to megatron|torchtitan|deepspeed [-o FILE] [--nearest]`: the launch file of
// a plan for the framework that trains it (docs/export.md). Without -o the file goes to stdout and
// what the writer says about it to stderr; a plan the framework cannot run is exit 1 with the
// reason and nothing written.
#include <fmt/format.h>

#include "commands.h"
#include "unity/core/json_io.h"
#include "unity/core/launch/export_launch.h"

namespace unity::cli {

void add_export_command(CLI::App& app) {
  struct Options {
    std::string plan;
    std::string framework;
    std::string out;
    bool nearest = false;
  };
  auto opt = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("export",
                                 "Write a plan's launch for Megatron-LM, torchtitan or DeepSpeed");
  cmd->add_option("plan", opt->plan, "Plan file (unity optimize --out)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--to", opt->framework, "Framework to launch with")
      ->required()
      ->check(CLI::IsMember({"megatron", "torchtitan", "deepspeed"}));
  cmd->add_option("-o,--out", opt->out, "Write the launch file here (default: stdout)");
  cmd->add_flag("--nearest", opt->nearest,
                "Where the framework cannot run the plan, write the nearest layout it can run "
                "(re-planned with --mode expert) and print both predicted costs");
  cmd->callback([opt] {
    const Plan plan = plan_from_json(read_json_file(opt->plan));
    launch::ExportRequest request;
    request.framework = launch::framework_from_string(opt->framework);
    request.nearest = opt->nearest;
    const launch::ExportResult result = launch::export_launch(plan, request);
    const std::string_view name = launch::display_name(request.framework);
    if (result.nearest) {
      const double own = plan.summary.iteration_time_ms;
      const double near = result.nearest->summary.iteration_time_ms;
      fmt::print(stderr, "note: {} cannot run the plan as it is: {}\n", name,
                 fmt::join(result.refused, "; "));
      const std::string label = fmt::format("nearest for {}", name);
      fmt::print(stderr, "note: {:<{}} {:>10.1f} ms per iteration ({})\n", "the plan", label.size(),
                 own, plan.summary.origin);
      fmt::print(stderr, "note: {} {:>10.1f} ms per iteration ({}), {:+.1f}%\n", label, near,
                 result.spec.describe(), own > 0 ? (near / own - 1) * 100 : 0.0);
    }
    for (const auto& n : result.file.notes) fmt::print(stderr, "note: {}\n", n);
    if (opt->out.empty()) {
      fmt::print("{}", result.file.text);
    } else {
      write_text_file_atomic(opt->out, result.file.text);
      fmt::print(stderr, "wrote {} launch ({}) to {}\n", name, result.spec.describe(), opt->out);
    }
  });
}

}  // namespace unity::cli
