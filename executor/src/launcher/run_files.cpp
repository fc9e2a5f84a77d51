#include "unity/executor/run_files.h"

#include <algorithm>
#include <fstream>

#include <fmt/format.h>

#include "unity/core/errors.h"
#include "unity/core/json_io.h"
#include "unity/core/plan/plan.h"

namespace unity::executor {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

nlohmann::json pipeline_measurement_to_json(const PipelineMeasurement& m) {
  nlohmann::json stages = nlohmann::json::array();
  for (const auto& s : m.stages)
    stages.push_back({{"stage", s.stage},
                      {"forward_ms", s.forward_ms},
                      {"backward_ms", s.backward_ms},
                      {"idle_ms", s.idle_ms}});
  nlohmann::json memory = nlohmann::json::array();
  for (const auto& b : m.memory) memory.push_back(memory_to_json(b));
  return {{"stages", stages},
          {"bubble_fraction_measured", m.bubble_fraction},
          {"peak_memory_bytes_measured", bytes_to_json(m.peak_memory_bytes)},
          {"memory_per_rank_measured", memory},
          {"timeline", timeline_to_json(m.timeline)},
          {"plan_dtype", m.plan_dtype},
          {"compute_dtype", m.compute_dtype},
          {"recompute", m.recompute},
          {"zero_stage", m.zero_stage},
          {"expert_exchange_bytes_measured", m.expert_exchange_bytes}};
}

PipelineMeasurement pipeline_measurement_from_json(const nlohmann::json& j) {
  PipelineMeasurement m;
  for (const auto& s : j.at("stages"))
    m.stages.push_back({s.at("stage").get<int>(), s.at("forward_ms").get<double>(),
                        s.at("backward_ms").get<double>(), s.at("idle_ms").get<double>()});
  m.bubble_fraction = j.at("bubble_fraction_measured").get<double>();
  m.peak_memory_bytes = j.at("peak_memory_bytes_measured").get<std::vector<double>>();
  for (const auto& b : j.at("memory_per_rank_measured"))
    m.memory.push_back({b.at("weights").get<double>(), b.at("gradients").get<double>(),
                        b.at("optimizer").get<double>(), b.at("activations").get<double>(),
                        b.at("workspace").get<double>()});
  m.timeline = timeline_from_json(j.at("timeline"));
  m.plan_dtype = j.value("plan_dtype", "");
  m.compute_dtype = j.value("compute_dtype", "");
  m.recompute = j.value("recompute", "");
  m.zero_stage = j.value("zero_stage", 0);
  m.expert_exchange_bytes = j.value("expert_exchange_bytes_measured", 0.0);
  return m;
}

void write_run_result(const std::filesystem::path& path, const TrainingResult& result,
                      const nlohmann::json& extra, const std::filesystem::path& weights_path) {
  nlohmann::json j = extra.is_object() ? extra : nlohmann::json::object();
  j["losses"] = result.losses;
  j["warmup_losses"] = result.warmup_losses;
  j["iteration_ms"] = result.iteration_ms;
  j["setup_ms"] = result.setup_ms;
  j["device_bytes"] = result.device_bytes;
  if (!result.profile.empty()) {
    nlohmann::json profile = nlohmann::json::array();
    for (const auto& p : result.profile)
      profile.push_back({{"node", p.node},
                         {"name", p.name},
                         {"op", p.op},
                         {"forward_ms", p.forward_ms},
                         {"backward_ms", p.backward_ms}});
    j["profile"] = profile;
  }
  if (result.pipeline) j["pipeline"] = pipeline_measurement_to_json(*result.pipeline);
  if (!weights_path.empty()) {
    std::ofstream out(weights_path, std::ios::binary);
    if (!out) throw InputError(fmt::format("cannot write '{}'", weights_path.string()));
    nlohmann::json index = nlohmann::json::array();
    std::uint64_t offset = 0;
    for (const auto& [name, t] : result.weights) {
      const std::size_t bytes = t.integer ? t.integers.size() * 8 : t.values.size() * 4;
      index.push_back({{"name", name},
                       {"shape", t.shape},
                       {"integer", t.integer},
                       {"offset", offset},
                       {"bytes", bytes}});
      if (t.integer)
        out.write(reinterpret_cast<const char*>(t.integers.data()),
                  static_cast<std::streamsize>(bytes));
      else
        out.write(reinterpret_cast<const char*>(t.values.data()),
                  static_cast<std::streamsize>(bytes));
      offset += bytes;
    }
    if (!out) throw InputError(fmt::format("cannot write '{}'", weights_path.string()));
    j["weights_file"] = weights_path.string();
    j["weights"] = index;
  }
  write_text_file_atomic(path, j.dump() + "\n");
}

TrainingResult read_run_result(const std::filesystem::path& path, nlohmann::json* extra) {
  const nlohmann::json j = read_json_file(path);
  TrainingResult r;
  try {
    r.losses = json_measured_list(j.at("losses"));
    r.warmup_losses = json_measured_list(j.at("warmup_losses"));
    r.iteration_ms = json_measured_list(j.at("iteration_ms"));
    r.setup_ms = j.at("setup_ms").get<double>();
    r.device_bytes = j.at("device_bytes").get<std::size_t>();
    if (j.contains("profile"))
      for (const auto& p : j.at("profile"))
        r.profile.push_back({p.at("node").get<NodeId>(), p.at("name").get<std::string>(),
                             p.at("op").get<std::string>(), p.at("forward_ms").get<double>(),
                             p.at("backward_ms").get<double>()});
    if (j.contains("pipeline")) r.pipeline = pipeline_measurement_from_json(j.at("pipeline"));
    if (j.contains("weights_file")) {
      std::ifstream in(j.at("weights_file").get<std::string>(), std::ios::binary);
      if (!in)
        throw InputError(fmt::format("cannot read '{}'", j.at("weights_file").get<std::string>()));
      for (const auto& w : j.at("weights")) {
        HostTensor t;
        t.shape = w.at("shape").get<std::vector<std::int64_t>>();
        t.integer = w.at("integer").get<bool>();
        const auto bytes = w.at("bytes").get<std::size_t>();
        in.seekg(static_cast<std::streamoff>(w.at("offset").get<std::uint64_t>()));
        if (t.integer) {
          t.integers.resize(bytes / 8);
          in.read(reinterpret_cast<char*>(t.integers.data()), static_cast<std::streamsize>(bytes));
        } else {
          t.values.resize(bytes / 4);
          in.read(reinterpret_cast<char*>(t.values.data()), static_cast<std::streamsize>(bytes));
        }
        if (!in) throw InputError(fmt::format("weights file of '{}' is truncated", path.string()));
        r.weights[w.at("name").get<std::string>()] = std::move(t);
      }
    }
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("run result '{}' is malformed: {}", path.string(), e.what()));
  }
  if (extra) *extra = j;
  return r;
}

}  // namespace unity::executor
