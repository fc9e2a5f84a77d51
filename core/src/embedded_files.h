#pragma once
// Text files compiled into the library by cmake/UnityEmbed.cmake.
#include <string_view>
#include <vector>

namespace unity::detail {

struct EmbeddedFile {
  std::string_view name;  // the file name without its extension
  std::string_view text;
};

const std::vector<EmbeddedFile>& embedded_machines();  // resources/machines/*.json: the presets
const std::vector<EmbeddedFile>& embedded_rules();     // rules/*.json: hand-written
const std::vector<EmbeddedFile>& embedded_generated_rules();  // rules/generated/*.json

}  // namespace unity::detail
