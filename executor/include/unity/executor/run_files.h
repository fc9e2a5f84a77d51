#pragma once
// What unity-worker's rank 0 leaves for the launcher: a result JSON (losses, times, setup) and a
// binary weights file (raw float32/int64 values, indexed in the JSON), and the event lines every
// rank prints on stdout (`@unity {json}`) so the launcher can follow progress and name a failing
// rank.
#include <filesystem>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "unity/executor/training.h"

namespace unity::executor {

inline constexpr const char* kEventPrefix = "@unity ";

// Writes result.json (and weights next to it when `weights_path` is not empty).
void write_run_result(const std::filesystem::path& path, const TrainingResult& result,
                      const nlohmann::json& extra, const std::filesystem::path& weights_path);
// Reads what write_run_result wrote; throws InputError naming the file.
TrainingResult read_run_result(const std::filesystem::path& path, nlohmann::json* extra = nullptr);

// A pipelined run's measurements: `stages`, `bubble_fraction_measured`,
// `peak_memory_bytes_measured`, `memory_per_rank_measured`, `timeline` (core's timeline JSON) and
// what ran (`plan_dtype`, `compute_dtype`, `recompute`, `zero_stage`).
nlohmann::json pipeline_measurement_to_json(const PipelineMeasurement& m);
PipelineMeasurement pipeline_measurement_from_json(const nlohmann::json& j);  // json exceptions

double median(std::vector<double> values);

}  // namespace unity::executor
