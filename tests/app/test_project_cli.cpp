// `unity project new|show|replay|pin|veto` and `optimize --project`: what gets recorded, files that
// are refused untouched, and a recording search killed with SIGKILL.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli_runner.h"

namespace fs = std::filesystem;

namespace {

void write_bytes(const std::string& file, const std::string& bytes) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << bytes;
}

std::string read_bytes(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

bool has_sidecars(const std::string& file) {
  return fs::exists(file + "-wal") || fs::exists(file + "-shm") || fs::exists(file + "-journal");
}

nlohmann::json show_json(const std::string& file) {
  const auto r = run_cli("project show " + file + " --json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json{};
}

}  // namespace

TEST(ProjectCli, OptimizeRecordsModelMachineSearchStepsAndPlan) {
  Folder dir("project_cli_record");
  const auto file = dir / "p.unity";
  auto created = run_cli("project new " + file);
  ASSERT_EQ(created.exit_code, 0) << created.err;
  EXPECT_NE(created.out.find("schema version 3"), std::string::npos) << created.out;
  EXPECT_EQ(show_json(file)["counts"]["searches"], 0);

  const auto r = run_cli(
      "optimize mnist-mlp --machine summit --gpus 2 --mode joint --budget 40 "
      "--project " +
      file + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto out = nlohmann::json::parse(r.out);
  ASSERT_TRUE(out.contains("project"));
  const auto search_id = out["project"]["search_id"].get<std::int64_t>();
  const auto steps = out["project"]["steps"].get<std::int64_t>();
  EXPECT_GT(steps, 10);

  const auto shown = show_json(file);
  EXPECT_EQ(shown["schema_version"], 3);
  EXPECT_EQ(shown["counts"]["models"], 1);
  EXPECT_EQ(shown["counts"]["machines"], 1);
  EXPECT_EQ(shown["counts"]["searches"], 1);
  EXPECT_EQ(shown["counts"]["completed"], 1);
  EXPECT_EQ(shown["counts"]["plans"], 1);
  const auto& search = shown["searches"][0];
  EXPECT_EQ(search["id"], search_id);
  EXPECT_EQ(search["status"], "completed");
  EXPECT_EQ(search["steps"], steps);
  EXPECT_EQ(search["model"], "mnist-mlp");
  EXPECT_EQ(search["machine"], "summit");
  EXPECT_EQ(search["devices"], 2);
  EXPECT_EQ(search["mode"], "joint");
  EXPECT_EQ(search["config"]["budget"], 40);
  EXPECT_EQ(search["candidates_evaluated"], out["candidates_evaluated"]);
  EXPECT_DOUBLE_EQ(search["best_ms"].get<double>(), out["iteration_time_ms"].get<double>());
  EXPECT_EQ(shown["plans"][0]["search_id"], search_id);
  EXPECT_DOUBLE_EQ(shown["plans"][0]["iteration_time_ms"].get<double>(),
                   out["iteration_time_ms"].get<double>());

  const auto replay =
      run_cli("project replay " + file + " --search " + std::to_string(search_id) + " --json");
  ASSERT_EQ(replay.exit_code, 0) << replay.err;
  const auto recorded = nlohmann::json::parse(replay.out)["steps"];
  ASSERT_EQ(static_cast<std::int64_t>(recorded.size()), steps);
  EXPECT_EQ(recorded.front()["kind"], "started");
  EXPECT_EQ(recorded.back()["kind"], "finished");
  for (std::size_t i = 0; i < recorded.size(); ++i) EXPECT_EQ(recorded[i]["seq"], i);
  // Every applied substitution of the plan was a candidate of the search.
  for (const auto& applied : out["substitutions_applied"]) {
    bool seen = false;
    for (const auto& step : recorded) seen = seen || step["rule"] == applied["rule"];
    EXPECT_TRUE(seen) << applied;
  }
  const auto only_best = run_cli("project replay " + file + " --search " +
                                 std::to_string(search_id) + " --kind new_best");
  ASSERT_EQ(only_best.exit_code, 0) << only_best.err;
  EXPECT_EQ(only_best.out.find("pruned"), std::string::npos);
  EXPECT_NE(only_best.out.find("new_best"), std::string::npos);

  const auto text = run_cli("project show " + file);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("1 searches (1 completed)"), std::string::npos) << text.out;

  auto unknown = run_cli("project replay " + file + " --search 99");
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.err.find("no search 99"), std::string::npos) << unknown.err;
}

TEST(ProjectCli, OptimizeCreatesAMissingProjectAndAppliesItsVetoes) {
  Folder dir("project_cli_veto");
  const auto file = dir / "p.unity";
  const std::string optimize =
      "optimize mnist-mlp --machine summit --gpus 2 --mode joint --budget 40 --json --project " +
      file;
  const auto first = run_cli(optimize);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  // The unconstrained search applies some rule; veto it in the project and search again.
  const auto applied = nlohmann::json::parse(first.out)["substitutions_applied"];
  ASSERT_FALSE(applied.empty());
  const std::string rule = applied[0]["rule"];
  const auto veto = run_cli("project veto " + file + " " + rule + " --model mnist-mlp");
  ASSERT_EQ(veto.exit_code, 0) << veto.err;
  EXPECT_EQ(show_json(file)["pins_vetoes"][0]["state"], "veto");

  const auto second = run_cli(optimize);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  const auto out = nlohmann::json::parse(second.out);
  for (const auto& a : out["substitutions_applied"]) EXPECT_NE(a["rule"], rule);
  const auto shown = show_json(file);
  EXPECT_EQ(shown["counts"]["searches"], 2);
  EXPECT_EQ(shown["counts"]["models"], 1);  // stored once
  EXPECT_EQ(shown["searches"][1]["config"]["vetoes"], nlohmann::json::array({rule}));

  EXPECT_EQ(run_cli("project unpin " + file + " " + rule + " --model mnist-mlp").exit_code, 0);
  EXPECT_EQ(show_json(file)["counts"]["pins_vetoes"], 0);
  EXPECT_EQ(run_cli("project pin " + file + " x --model no-such-model").exit_code, 1);
}

TEST(ProjectCli, UnusableFilesAreRefusedUntouched) {
  Folder dir("project_cli_bad");
  const auto good = dir / "good.unity";
  ASSERT_EQ(run_cli("optimize mnist-mlp --machine summit --gpus 2 --project " + good).exit_code, 0);
  const std::string project_bytes = read_bytes(good);

  const auto text = dir / "text.unity";
  write_bytes(text, "just some notes\n");
  const auto truncated = dir / "truncated.unity";
  write_bytes(truncated, project_bytes.substr(0, project_bytes.size() / 2 + 100));
  const auto newer = dir / "newer.unity";
  std::string future = project_bytes;
  future[60] = future[61] = future[62] = 0;  // user_version (big-endian) = 99
  future[63] = 99;
  write_bytes(newer, future);

  const std::vector<std::pair<std::string, std::string>> cases = {
      {text, "not a SQLite database"},
      {truncated, "truncated"},
      {newer, "newer Unity (project schema version 99"}};
  for (const auto& [file, message] : cases) {
    const std::string before = read_bytes(file);
    for (const std::string& args :
         {"project show " + file, "project show " + file + " --json",
          "project replay " + file + " --search 1", "project new " + file,
          "project veto " + file + " some_rule", "project upgrade " + file,
          "optimize mnist-mlp --machine summit --gpus 2 --project " + file}) {
      const auto r = run_cli(args);
      EXPECT_EQ(r.exit_code, 1) << args;
      EXPECT_TRUE(r.out.empty()) << args << ": " << r.out;
      if (args.rfind("project new", 0) == 0)
        EXPECT_NE(r.err.find("already exists"), std::string::npos) << r.err;
      else
        EXPECT_NE(r.err.find(message), std::string::npos) << args << ": " << r.err;
      EXPECT_EQ(read_bytes(file), before) << args;
      EXPECT_FALSE(has_sidecars(file)) << args;
    }
  }
}

TEST(ProjectCli, SigkillDuringARecordedSearchLeavesItInterruptedWithEveryCommittedStep) {
  Folder dir("project_cli_kill");
  const auto file = dir / "p.unity";
  ASSERT_EQ(run_cli("project new " + file).exit_code, 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    // A search far longer than the test waits: resnext50 joint on the whole graph (no splitting,
    // each candidate costs a mapping of ~200 operators) with a budget it will not reach.
    std::freopen("/dev/null", "w", stdout);
    std::freopen("/dev/null", "w", stderr);
    ::execl(UNITY_CLI_PATH, UNITY_CLI_PATH, "optimize", "resnext50", "--machine", "summit",
            "--mode", "joint", "--no-split", "--budget", "100000000", "--project", file.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ASSERT_GT(pid, 0);
  // Wait for committed steps, as a reader sees them.
  nlohmann::json before;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    const auto r = run_cli("project replay " + file + " --search 1 --json");
    if (r.exit_code == 0) {
      before = nlohmann::json::parse(r.out);
      if (before["steps"].size() >= 200) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_GE(before["steps"].size(), 200u) << "no steps were committed in time";
  EXPECT_EQ(before["search"]["status"], "running");
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));

  const auto after_show = show_json(file);
  EXPECT_EQ(after_show["counts"]["interrupted"], 1);
  EXPECT_EQ(after_show["searches"][0]["status"], "interrupted");
  const auto r = run_cli("project replay " + file + " --search 1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto after = nlohmann::json::parse(r.out)["steps"];
  ASSERT_GE(after.size(), before["steps"].size());
  for (std::size_t i = 0; i < before["steps"].size(); ++i)
    ASSERT_EQ(after[i], before["steps"][i]) << i;
  EXPECT_EQ(after_show["searches"][0]["steps"], after.size());

  // The project goes on: a new search records beside the interrupted one, which stays marked.
  ASSERT_EQ(run_cli("optimize mnist-mlp --machine summit --gpus 2 --project " + file).exit_code, 0);
  const auto later = show_json(file);
  EXPECT_EQ(later["counts"]["interrupted"], 1);
  EXPECT_EQ(later["counts"]["completed"], 1);
  EXPECT_FALSE(has_sidecars(file));
}
