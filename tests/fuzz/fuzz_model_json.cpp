// Fuzzes the model JSON loader through load_model (model_loader.h), the path every command's .json
// MODEL takes: reading the file, a plan file's PCG read as a model, graph_from_json.
#include <cstddef>
#include <cstdint>
#include <optional>

#include "accepted_model_checks.h"
#include "fuzz_contract.h"
#include "temp_input_file.h"
#include "unity/core/zoo/model_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  unity::fuzz::record_input(data, size);
  static unity::fuzz::TempInputFile file(".json");
  const auto& path = file.write(data, size);
  std::optional<unity::Graph> graph;
  unity::fuzz::expect_user_errors_only([&] { graph = unity::load_model(path.string()); });
  if (graph) unity::fuzz::check_accepted_model(*graph);
  return 0;
}
