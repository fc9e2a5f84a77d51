// Fuzzes the ONNX reader and importer (`unity import FILE.onnx`, every command taking a .onnx
// MODEL) with the input as the file's bytes.
#include <cstddef>
#include <cstdint>
#include <optional>

#include "accepted_model_checks.h"
#include "fuzz_contract.h"
#include "temp_input_file.h"
#include "unity/core/onnx/onnx_import.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  unity::fuzz::record_input(data, size);
  static unity::fuzz::TempInputFile file(".onnx");
  const auto& path = file.write(data, size);
  std::optional<unity::Graph> graph;
  unity::fuzz::expect_user_errors_only([&] { graph = unity::import_onnx(path); });
  if (graph) unity::fuzz::check_accepted_model(*graph);
  return 0;
}
