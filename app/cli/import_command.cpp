// `unity import FILE.onnx -o model.json [--batch N] [--constant NAME]...`: ONNX to our model
// JSON. Any MODEL works (a zoo name too), which makes a zoo model a file to edit. On any error
// nothing is written.
#include <fmt/format.h>

#include "commands.h"
#include "search_options.h"
#include "unity/core/errors.h"
#include "unity/core/json_io.h"
#include "unity/core/onnx/onnx_import.h"
#include "unity/core/zoo/model_loader.h"

namespace unity::cli {

void add_import_command(CLI::App& app) {
  struct Options {
    std::string input;
    std::string output;
    std::int64_t batch = 0;
    std::string loss;
    std::vector<std::string> constants;
  };
  auto opt = std::make_shared<Options>();
  auto* cmd =
      app.add_subcommand("import", "Import an ONNX model (e.g. a PyTorch export) as model JSON");
  cmd->add_option("model", opt->input,
                  "The .onnx file (or a zoo name, model .json or Hugging Face config.json)")
      ->required();
  cmd->add_option("-o,--output", opt->output, "Where to write the model JSON")->required();
  cmd->add_option("--batch", opt->batch, "Batch size for a symbolic batch dimension")
      ->check(CLI::PositiveNumber);
  add_loss_option(cmd, opt->loss);
  cmd->add_option(
         "--constant", opt->constants,
         "An initializer of the .onnx that is a buffer, not a parameter (a name or a shell "
         "pattern; repeatable): imported as a Constant holding its values, not trained")
      ->type_name("NAME");
  cmd->callback([opt] {
    Graph g;
    if (!opt->constants.empty()) {
      if (std::filesystem::path(opt->input).extension() != ".onnx")
        throw InputError(fmt::format("--constant names initializers of an .onnx model, not of '{}'",
                                     opt->input));
      OnnxImportOptions options;
      options.batch_size = opt->batch;
      options.constant_initializers = opt->constants;
      g = import_onnx(opt->input, options);
    } else {
      g = load_model(opt->input, opt->batch);
    }
    attach_training_loss(g, opt->loss, opt->input);
    write_text_file_atomic(opt->output, graph_to_json(g).dump(1) + "\n");
    std::int64_t constants = 0, constant_values = 0;
    for (const auto& [id, n] : g.nodes())
      if (n.op.type == OpType::Constant) {
        ++constants;
        constant_values += n.op.values->size();
      }
    // Constants are what the model computes from nothing it trains; they are held, not trained.
    const std::string held = constants
                                 ? fmt::format(" ({} constants of {} values kept as they are)",
                                               constants, constant_values)
                                 : "";
    fmt::print(stderr, "imported '{}': {} nodes, {} parameters{} -> {}\n", opt->input, g.size(),
               g.parameter_count(), held, opt->output);
  });
}

}  // namespace unity::cli
