#pragma once
#include <filesystem>
#include <string>

namespace unity::cli {

// Lays out DOT text with Graphviz's dot engine and writes SVG to `path` (atomically).
void render_dot_to_svg(const std::string& dot, const std::filesystem::path& path);

}  // namespace unity::cli
