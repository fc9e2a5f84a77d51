#include "unity/core/zoo/model_loader.h"

#include <filesystem>

#include <fmt/format.h>

#include "unity/core/errors.h"
#include "unity/core/json_io.h"
#include "unity/core/onnx/onnx_import.h"
#include "unity/core/zoo/model_zoo.h"

namespace unity {

Graph load_model(const std::string& spec, std::int64_t batch) {
  namespace fs = std::filesystem;
  const fs::path path(spec);
  const auto ext = path.extension().string();
  if (ext == ".onnx") {
    OnnxImportOptions options;
    options.batch_size = batch;
    return import_onnx(path, options);
  }
  if (ext == ".json") {
    const auto j = read_json_file(path);
    // A plan file holds its PCG: commands that read models can read plans. ("format" is compared,
    // not read with value(), which throws json's type_error where it is not a string.)
    Graph g =
        j.is_object() && j.contains("format") && j["format"] == "unity-plan" && j.contains("pcg")
            ? graph_from_json(j["pcg"])
            : graph_from_json(j);
    if (batch > 0 && g.batch_size > 0 && batch != g.batch_size)
      throw InputError(fmt::format(
          "'{}' was built with batch {}; a JSON model cannot be re-batched", spec, g.batch_size));
    return g;
  }
  if (zoo::has_model(spec)) return zoo::build(spec, batch);
  if (fs::exists(path))
    throw InputError(fmt::format("'{}': unknown model file type (expected .onnx or .json)", spec));
  std::string names;
  for (const auto& m : zoo::models()) names += (names.empty() ? "" : ", ") + m.name;
  throw InputError(fmt::format("'{}' is neither a model file nor a zoo model ({})", spec, names));
}

}  // namespace unity
