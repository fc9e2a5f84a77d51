// `unity show MODEL [--dot FILE] [--svg FILE] [--json]`: what a model is made of, and pictures of it.
#include <map>

#include <fmt/format.h>

#include "commands.h"
#include "svg_render.h"
#include "table_printer.h"
#include "unity/core/dot_export.h"
#include "unity/core/json_io.h"
#include "unity/core/model_loader.h"

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
  return {{"name", g.name},          {"batch_size", g.batch_size},
          {"nodes", g.size()},       {"operators", ops},
          {"parallel_operators", parallel},
          {"parameters", g.parameter_count()},
          {"weight_bytes", g.weight_bytes()},
          {"op_counts", counts},     {"outputs", outputs},
          {"structural_hash", fmt::format("{:016x}", g.structural_hash())}};
}

void print_summary(const nlohmann::json& s) {
  fmt::print("model       {}\n", s["name"].get<std::string>());
  fmt::print("batch       {} per device\n", s["batch_size"].get<std::int64_t>());
  fmt::print("operators   {} ({} parallel)\n", s["operators"].get<std::int64_t>(),
             s["parallel_operators"].get<std::int64_t>());
  fmt::print("parameters  {} ({})\n", human_count(s["parameters"].get<std::int64_t>()),
             human_bytes(s["weight_bytes"].get<std::int64_t>()));
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

}  // namespace

void add_show_command(CLI::App& app) {
  struct Options {
    std::string model;
    std::string dot;
    std::string svg;
    bool json = false;
  };
  auto opt = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("show", "Summarise a model (zoo name, .onnx or .json) and draw it");
  cmd->add_option("model", opt->model, "Zoo model name, .onnx or model .json")->required();
  cmd->add_option("--dot", opt->dot, "Write the PCG as Graphviz DOT");
  cmd->add_option("--svg", opt->svg, "Write the PCG laid out by Graphviz dot as SVG");
  cmd->add_flag("--json", opt->json, "Print the summary as JSON");
  cmd->callback([opt] {
    const Graph g = load_model(opt->model);
    const auto summary = summary_json(g);
    if (opt->json)
      fmt::print("{}\n", summary.dump(2));
    else
      print_summary(summary);
    if (!opt->dot.empty() || !opt->svg.empty()) {
      const std::string dot = graph_to_dot(g);
      if (!opt->dot.empty()) write_text_file_atomic(opt->dot, dot);
      if (!opt->svg.empty()) render_dot_to_svg(dot, opt->svg);
    }
  });
}

}  // namespace unity::cli
