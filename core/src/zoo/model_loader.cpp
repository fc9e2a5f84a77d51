#include "unity/core/zoo/model_loader.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "unity/core/errors.h"
#include "unity/core/hf/hf_model.h"
#include "unity/core/json_io.h"
#include "unity/core/onnx/onnx_import.h"
#include "unity/core/plan/model_shape.h"

namespace unity {
namespace {

// Edits (insertions, deletions, substitutions) between two names, letters compared in any case.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The zoo model a mistyped name most likely meant (two edits at most), or "".
std::string nearest_zoo_name(std::string_view spec) {
  std::string best;
  std::size_t best_distance = 3;
  for (const auto& m : zoo::models()) {
    const std::size_t d = edit_distance(spec, m.name);
    if (d < best_distance) {
      best = m.name;
      best_distance = d;
    }
  }
  return best;
}

void refuse_resize(const zoo::TransformerResize& resize, const std::string& spec) {
  if (!resize.empty())
    throw InputError(fmt::format(
        "--layers, --hidden, --heads, --seq, --vocab, --ffn, --kv-heads, --head-dim and "
        "--tie-embeddings "
        "resize the gpt and llama families of the zoo, not '{}'",
        spec));
}

// A .json that is a Hugging Face config rather than a Unity model or plan: it holds no graph, and
// it is named config.json or names an architecture or a model type.
bool is_hf_json(const nlohmann::json& j, const std::filesystem::path& path) {
  if (!j.is_object() || j.contains("nodes") || j.contains("format")) return false;
  return path.filename() == "config.json" || j.contains("architectures") ||
         j.contains("model_type");
}

Graph build_hf(const hf::HfConfig& config, std::int64_t batch, const zoo::TransformerResize& resize,
               int devices) {
  Graph g = hf::build_hf_model(config, batch > 0 ? batch : std::max(devices, 1), resize);
  g.source_details = hf_source_details(config);
  return g;
}

}  // namespace

std::optional<hf::HfConfig> hf_config_of(const std::string& spec) {
  namespace fs = std::filesystem;
  const fs::path path(spec);
  if (fs::is_directory(path)) return hf::read_hf_config(path);
  if (path.extension() != ".json" || !fs::is_regular_file(path)) return std::nullopt;
  if (!is_hf_json(read_json_file(path), path)) return std::nullopt;
  return hf::read_hf_config(path);
}

Graph load_model(const std::string& spec, std::int64_t batch) {
  return load_model(spec, batch, {}, 1);
}

Graph load_model(const std::string& spec, std::int64_t batch, const zoo::TransformerResize& resize,
                 int devices) {
  namespace fs = std::filesystem;
  const fs::path path(spec);
  if (fs::is_directory(path)) return build_hf(hf::read_hf_config(path), batch, resize, devices);
  const auto ext = path.extension().string();
  if (ext == ".onnx") {
    refuse_resize(resize, spec);
    OnnxImportOptions options;
    options.batch_size = batch;
    return import_onnx(path, options);
  }
  if (ext == ".json") {
    const auto j = read_json_file(path);
    if (is_hf_json(j, path)) return build_hf(hf::read_hf_config(path), batch, resize, devices);
    refuse_resize(resize, spec);
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
  if (zoo::has_model(spec)) return zoo::build(spec, batch, resize);
  if (fs::exists(path))
    throw InputError(fmt::format(
        "'{}': unknown model file type (expected .onnx, .json or a Hugging Face config.json)",
        spec));
  std::string names;
  for (const auto& m : zoo::models()) names += (names.empty() ? "" : ", ") + m.name;
  const std::string nearest = nearest_zoo_name(spec);
  throw InputError(fmt::format(
      "'{}' is neither a model file, a Hugging Face config nor a zoo model{} ({})", spec,
      nearest.empty() ? "" : fmt::format(": did you mean '{}'?", nearest), names));
}

}  // namespace unity
