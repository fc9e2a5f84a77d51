// `unity models [--json]`: the model zoo with operator and parameter counts.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "table_printer.h"
#include "unity/core/zoo/model_zoo.h"

namespace unity::cli {

void add_models_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("models", "List the built-in models (the paper's zoo)");
  auto json_out = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json_out, "Print JSON instead of a table");
  cmd->callback([json_out] {
    nlohmann::json rows = nlohmann::json::array();
    Table table(
        {"model", "operators", "parameters", "batch/device", "weight bytes", "description"});
    for (const auto& info : zoo::models()) {
      const Graph g = zoo::build(info.name);
      std::int64_t ops = 0;
      for (const auto& [id, n] : g.nodes())
        if (!is_source_op(n.op.type)) ++ops;
      rows.push_back({{"name", info.name},
                      {"operators", ops},
                      {"parameters", g.parameter_count()},
                      {"batch_per_device", info.default_batch},
                      {"weight_bytes", g.weight_bytes()},
                      {"description", info.description}});
      table.add({info.name, std::to_string(ops), human_count(g.parameter_count()),
                 std::to_string(info.default_batch), human_bytes(g.weight_bytes()),
                 info.description});
    }
    if (*json_out)
      fmt::print("{}\n", rows.dump(2));
    else
      table.print();
  });
}

}  // namespace unity::cli
