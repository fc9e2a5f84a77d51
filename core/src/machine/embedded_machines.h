#pragma once
// The machine preset files, compiled into the library (core/CMakeLists.txt generates the
// definition).
#include <string_view>
#include <vector>

namespace unity::detail {

struct EmbeddedMachine {
  std::string_view name;  // the file name without .json: the preset's name
  std::string_view json;  // the file's text
};

// In file-name order.
const std::vector<EmbeddedMachine>& embedded_machines();

}  // namespace unity::detail
