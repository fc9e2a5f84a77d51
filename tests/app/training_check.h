#pragma once
// The training check of imported exports (the import sweep, the normalisation layers): the model
// planned data parallel on 2 CPU ranks trains 3 iterations equal to one rank (--check), and its
// loss falls.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "cli_runner.h"

// A file in this process's scratch directory for a suite ("unity-<suite>-<pid>" under the temporary
// directory, made on first use), so that parallel ctest runs do not share files. The directory
// itself is scratch_file(suite, "").parent_path().
inline std::filesystem::path scratch_file(const std::string& suite, const std::string& name) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("unity-" + suite + "-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir / name;
}

// How many operators of each type a model JSON (`unity import -o`) holds.
inline std::map<std::string, int> operator_counts(const std::filesystem::path& model_json) {
  std::map<std::string, int> ops;
  std::ifstream in(model_json);
  const auto model = nlohmann::json::parse(in);
  for (const auto& n : model["nodes"]) ++ops[n["op"].get<std::string>()];
  return ops;
}

// Names a test of an export by its model ("resnet18").
inline std::string model_name(const ::testing::TestParamInfo<std::string>& p) { return p.param; }

// The model planned on cpu-local with `how` (`--gpus 2 --mode joint`; `plan` is written) trains 2
// iterations equal to one rank (--check); the plan's printout, for a caller to look at.
inline std::string expect_plan_trains_like_one_rank(const std::filesystem::path& model_json,
                                                    const std::filesystem::path& plan,
                                                    const std::string& how) {
  const auto planned = run_cli("optimize " + model_json.string() + " --machine cpu-local " + how +
                               " --out " + plan.string());
  EXPECT_EQ(planned.exit_code, 0) << planned.err;
  if (planned.exit_code != 0) return planned.out;
  const auto run = run_cli("run " + plan.string() + " --iterations 2 --check --json");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  if (run.exit_code == 0) {
    EXPECT_LT(nlohmann::json::parse(run.out)["max_rel_diff"].get<double>(), 1e-4);
  }
  return planned.out;
}

// The model planned jointly on 2 CPU ranks trains equal to one rank.
inline void expect_joint_plan_trains_like_one_rank(const std::filesystem::path& model_json,
                                                   const std::filesystem::path& plan) {
  expect_plan_trains_like_one_rank(model_json, plan, "--gpus 2 --mode joint");
}

inline void expect_trains_like_one_rank(const std::filesystem::path& model_json,
                                        const std::filesystem::path& plan) {
  const auto planned =
      run_cli("optimize " + model_json.string() +
              " --machine cpu-local --gpus 2 --mode data-parallel --out " + plan.string());
  ASSERT_EQ(planned.exit_code, 0) << planned.err;
  const auto run = run_cli("run " + plan.string() + " --iterations 3 --check --json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto j = nlohmann::json::parse(run.out);
  EXPECT_LT(j["max_rel_diff"].get<double>(), 1e-4);
  EXPECT_LT(j["losses"].back().get<double>(), j["losses"].front().get<double>());
}
