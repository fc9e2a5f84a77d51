// `unity show MODEL|PLAN [--dot FILE] [--svg FILE] [--costs] [--json] [--trace FILE]`: what a model
// or plan is made of, and pictures of it.
#include <filesystem>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "commands.h"
#include "pipeline_report.h"
#include "search_options.h"
#include "svg_render.h"
#include "table_printer.h"
#include "unity/core/errors.h"
#include "unity/core/json_io.h"
#include "unity/core/pcg/dot_export.h"
#include "unity/core/pipeline/pipeline_schedule.h"
#include "unity/core/plan/memory_verdict.h"
#include "unity/core/plan/plan.h"
#include "unity/core/zoo/model_loader.h"
#include "unity/projects/op_profiles.h"
#include "unity/projects/project.h"
#include "unity/use_cases/operator_times.h"

namespace unity::cli {
namespace {

nlohmann::json summary_json(const Graph& g) {
  std::map<std::string, std::int64_t> counts;
  std::int64_t ops = 0, parallel = 0;
  for (const auto& [id, n] : g.nodes()) {
    if (is_source_op(n.op.type)) continue;
    ++ops;
    if (is_parallel_op(n.op.type)) ++parallel;
    ++counts[std::string(to_string(n.op.type))];
  }
  nlohmann::json outputs = nlohmann::json::array();
  for (const auto& t : g.sinks())
    outputs.push_back({{"node", g.node(t.node).op.name}, {"shape", g.shape(t).to_string()}});
  return {{"name", g.name},
          {"batch_size", g.batch_size},
          {"nodes", g.size()},
          {"operators", ops},
          {"parallel_operators", parallel},
          {"parameters", g.parameter_count()},
          {"active_parameters", g.active_parameter_count()},
          {"weight_bytes", g.weight_bytes()},
          {"op_counts", counts},
          {"outputs", outputs},
          {"structural_hash", fmt::format("{:016x}", g.structural_hash())}};
}

void print_summary(const nlohmann::json& s) {
  fmt::print("model       {}\n", s["name"].get<std::string>());
  fmt::print("batch       {}\n", s["batch_size"].get<std::int64_t>());
  fmt::print("operators   {} ({} parallel)\n", s["operators"].get<std::int64_t>(),
             s["parallel_operators"].get<std::int64_t>());
  fmt::print("parameters  {} ({})\n", human_count(s["parameters"].get<std::int64_t>()),
             human_bytes(s["weight_bytes"].get<std::int64_t>()));
  if (s["active_parameters"] != s["parameters"])
    fmt::print("active      {} per token (the experts a token's router picks)\n",
               human_count(s["active_parameters"].get<std::int64_t>()));
  for (const auto& o : s["outputs"])
    fmt::print("output      {} {}\n", o["node"].get<std::string>(), o["shape"].get<std::string>());
  fmt::print("hash        {}\n\n", s["structural_hash"].get<std::string>());
  std::vector<std::pair<std::int64_t, std::string>> rows;
  for (const auto& [k, v] : s["op_counts"].items()) rows.push_back({v.get<std::int64_t>(), k});
  std::sort(rows.begin(), rows.end(), [](auto& a, auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  Table t({"operator", "count"});
  for (const auto& [n, name] : rows) t.add({name, std::to_string(n)});
  t.print();
}

void print_plan(const Plan& plan, bool costs) {
  const auto& s = plan.summary;
  fmt::print("plan        {} on {} ({} devices), {}\n", s.model, s.machine, s.devices, s.mode);
  fmt::print("iteration   {:.3f} ms (compute {:.3f} ms, communication {:.3f} ms)\n",
             s.iteration_time_ms, s.compute_ms, s.communication_ms);
  fmt::print("sends       {} per iteration\n",
             human_bytes(static_cast<std::int64_t>(s.communication_bytes)));
  fmt::print("memory      {} peak per device ({})\n\n",
             human_bytes(static_cast<std::int64_t>(s.peak_memory_bytes)),
             plan_memory_verdict(s.peak_memory_bytes, s.fits_in_memory, plan.machine).describe());
  if (plan.pipeline) {
    print_pipeline(*plan.pipeline, costs, has_causal_attention(plan.pcg));
    return;
  }
  if (!costs) return;
  Table t({"operator", "type", "forward ms", "backward ms", "comm ms", "sends", "memory", "view"});
  for (const auto& op : plan.mapping.per_op) {
    const auto& n = plan.pcg.node(op.node);
    t.add({n.op.name, std::string(to_string(n.op.type)), fmt::format("{:.4f}", op.forward * 1e3),
           fmt::format("{:.4f}", op.backward * 1e3),
           fmt::format("{:.4f}", (op.own.communication + op.edges.communication) * 1e3),
           human_bytes(static_cast<std::int64_t>(op.own.bytes + op.edges.bytes)),
           human_bytes(static_cast<std::int64_t>(op.memory)), op.view.to_string()});
  }
  t.print();
}

// Predicted beside measured, largest error first.
void print_operator_times(const std::vector<use_cases::OperatorTimes>& rows,
                          const std::string& project) {
  if (rows.empty()) {
    fmt::print(
        "no operator of the plan has a measured time in {} (unity run PLAN --project {} "
        "--profile measures them)\n\n",
        project, project);
    return;
  }
  fmt::print("predicted (analytic, one task) against measured in {}, largest error first:\n",
             project);
  Table t({"operator", "type", "predicted ms", "measured ms", "error"});
  for (const auto& r : rows)
    t.add({r.name, r.op, fmt::format("{:.4f}", r.predicted_ms),
           fmt::format("{:.4f}", r.measured_ms),
           r.predicted_ms > 0 ? fmt::format("{:.2f}x {}", r.error(),
                                            r.measured_ms > r.predicted_ms ? "slower" : "faster")
                              : "-"});
  t.print();
  fmt::print("\n");
}

}  // namespace

void add_show_command(CLI::App& app) {
  struct Options {
    std::string model;
    std::string dot;
    std::string svg;
    bool json = false;
    bool costs = false;
    std::string trace;
    ModelOptions model_options;
    std::string project;
  };
  auto opt = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "show", "Summarise a model (zoo name, .onnx, .json or Hugging Face config.json) and draw it");
  cmd->add_option("model", opt->model,
                  "Zoo model name, .onnx, model .json or Hugging Face config.json (or its folder)")
      ->required();
  cmd->add_option("--dot", opt->dot, "Write the PCG as Graphviz DOT");
  cmd->add_option("--svg", opt->svg, "Write the PCG laid out by Graphviz dot as SVG");
  cmd->add_flag("--json", opt->json, "Print the summary as JSON");
  cmd->add_flag("--costs", opt->costs,
                "For a plan: each operator's (a pipeline's: each stage's) times, traffic, memory");
  cmd->add_option("--trace", opt->trace,
                  "For a pipelined plan: write its predicted timeline as a Chrome trace (JSON for "
                  "chrome://tracing and Perfetto)");
  add_model_options(cmd, opt->model_options);
  cmd->add_option("--project", opt->project,
                  "For a plan with --costs: each operator's predicted time beside the time "
                  "measured for it in this project (`unity run --project --profile`), largest "
                  "error first");
  cmd->callback([opt] {
    std::optional<Plan> plan;
    if (std::filesystem::path(opt->model).extension() == ".json") {
      const auto j = read_json_file(opt->model);
      if (is_plan_json(j)) plan = plan_from_json(j);
    }
    if (!opt->trace.empty() && !(plan && plan->pipeline))
      throw InputError(
          fmt::format("--trace: '{}' is not a pipelined plan (it has no timeline)", opt->model));
    const Graph g = plan ? plan->pcg : opt->model_options.load(opt->model, 1, /*training=*/false);
    auto summary = summary_json(g);
    if (plan) summary["plan"] = summary_to_json(plan->summary);
    if (plan && plan->pipeline) summary["plan"]["pipeline"] = pipeline_to_json(*plan->pipeline);
    if (!opt->project.empty() && !(plan && opt->costs))
      throw InputError("--project: give a plan and --costs to compare its operators' times");
    std::vector<use_cases::OperatorTimes> measured;
    if (plan && !opt->project.empty()) {
      const auto project = projects::Project::open(opt->project, projects::Access::ReadOnly);
      measured =
          use_cases::compare_with_profiles(*plan, *projects::ProjectProfileSource::load(project));
      summary["operator_times"] = use_cases::operator_times_to_json(measured);
    }
    if (!opt->trace.empty())
      write_text_file_atomic(opt->trace, chrome_trace(predicted_timeline(*plan->pipeline),
                                                      plan->summary.model + " (predicted)")
                                                 .dump() +
                                             "\n");
    if (opt->json) {
      fmt::print("{}\n", summary.dump(2));
    } else {
      if (plan) print_plan(*plan, opt->costs);
      if (!opt->project.empty()) print_operator_times(measured, opt->project);
      print_summary(summary);
    }
    if (!opt->dot.empty() || !opt->svg.empty()) {
      const std::string dot = graph_to_dot(g);
      if (!opt->dot.empty()) write_text_file_atomic(opt->dot, dot);
      if (!opt->svg.empty()) render_dot_to_svg(dot, opt->svg);
    }
  });
}

}  // namespace unity::cli
