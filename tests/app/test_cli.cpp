// The `unity` CLI contract of DESIGN.md: commands, JSON output, exit codes, nothing half-written.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "cli_runner.h"

namespace fs = std::filesystem;

namespace {

fs::path temp_path(const std::string& name) {
  return fs::temp_directory_path() / (std::to_string(::getpid()) + "_" + name);
}

}  // namespace

TEST(Cli, ModelsListsThePaperModelsAndTheDecoderFamilies) {
  auto r = run_cli("models --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto rows = nlohmann::json::parse(r.out);
  std::set<std::string> names;
  for (const auto& row : rows) names.insert(row["name"].get<std::string>());
  EXPECT_EQ(names,
            (std::set<std::string>{
                "mlp",          "mnist-mlp",    "resnext50",     "inception-v3",  "bert-large",
                "dlrm",         "xdl",          "candle-uno",    "gpt-1.7b",      "gpt-3.6b",
                "gpt-7.5b",     "gpt-18b",      "gpt-39b",       "gpt-76b",       "gpt-145b",
                "gpt-310b",     "gpt-530b",     "gpt-1t",        "gpt-tiny",      "llama-7b",
                "llama-13b",    "llama-70b",    "llama-tiny",    "llama3-8b",     "llama3-70b",
                "llama3-405b",  "mixtral-8x7b", "mixtral-8x22b", "qwen3-30b-a3b", "qwen3-235b-a22b",
                "gpt-oss-120b", "moe-tiny",     "deepseek-v3",   "deepseek-tiny"}));
  for (const auto& row : rows) {
    if (row["name"] == "mnist-mlp") {
      EXPECT_EQ(row["parameters"], 406528);
      EXPECT_EQ(row["batch_per_device"], 64);
    }
  }
  auto table = run_cli("models");
  ASSERT_EQ(table.exit_code, 0);
  EXPECT_NE(table.out.find("resnext50"), std::string::npos);
  EXPECT_NE(table.out.find("parameters"), std::string::npos);
}

TEST(Cli, ShowWritesDotSvgAndJson) {
  const auto dot = temp_path("mnist.dot");
  const auto svg = temp_path("mnist.svg");
  auto r = run_cli("show mnist-mlp --json --dot " + dot.string() + " --svg " + svg.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto s = nlohmann::json::parse(r.out);
  EXPECT_EQ(s["parameters"], 406528);
  EXPECT_EQ(s["op_counts"]["Relu"], 1);
  const auto dot_text = slurp(dot);
  EXPECT_NE(dot_text.find("digraph"), std::string::npos);
  EXPECT_NE(dot_text.find("[64, 784] float32"), std::string::npos);  // edges carry shapes
  EXPECT_NE(slurp(svg).find("<svg"), std::string::npos);
  fs::remove(dot);
  fs::remove(svg);
}

TEST(Cli, ImportWritesModelJsonThatShowsTheSameGraph) {
  const auto json_path = temp_path("resnext50.json");
  auto imp = run_cli("import resnext50 -o " + json_path.string());
  ASSERT_EQ(imp.exit_code, 0) << imp.err;
  auto from_zoo = run_cli("show resnext50 --json");
  auto from_file = run_cli("show " + json_path.string() + " --json");
  ASSERT_EQ(from_zoo.exit_code, 0) << from_zoo.err;
  ASSERT_EQ(from_file.exit_code, 0) << from_file.err;
  const auto a = nlohmann::json::parse(from_zoo.out);
  const auto b = nlohmann::json::parse(from_file.out);
  EXPECT_EQ(a["op_counts"]["Conv2D"], 53);
  EXPECT_EQ(a["structural_hash"], b["structural_hash"]);
  EXPECT_EQ(a["parameters"], b["parameters"]);
  fs::remove(json_path);
}

TEST(Cli, BadInputExitsOneWithAMessageAndWritesNothing) {
  const auto out = temp_path("never.json");
  auto missing = run_cli("import /nonexistent/model.onnx -o " + out.string());
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("/nonexistent/model.onnx"), std::string::npos) << missing.err;
  EXPECT_FALSE(fs::exists(out));

  const auto garbage = temp_path("garbage.onnx");
  std::ofstream(garbage) << "this is not a protobuf";
  auto bad = run_cli("import " + garbage.string() + " -o " + out.string());
  EXPECT_EQ(bad.exit_code, 1) << bad.err;
  EXPECT_FALSE(fs::exists(out));
  fs::remove(garbage);

  const auto bad_json = temp_path("bad.json");
  std::ofstream(bad_json)
      << "{\"format\": \"unity-model\", \"version\": 1, \"nodes\": [{\"id\": 0}]}";
  auto invalid = run_cli("show " + bad_json.string());
  EXPECT_EQ(invalid.exit_code, 1);
  EXPECT_NE(invalid.err.find("missing field 'op'"), std::string::npos) << invalid.err;
  fs::remove(bad_json);

  auto unknown = run_cli("show no-such-model");
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.err.find("resnext50"), std::string::npos) << unknown.err;  // lists the zoo

  auto flag = run_cli("models --frobnicate");
  EXPECT_EQ(flag.exit_code, 1);
  auto none = run_cli("");
  EXPECT_EQ(none.exit_code, 1);
}

TEST(Cli, VersionNamesTheLibraries) {
  auto r = run_cli("--version");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Z3 4."), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("SQLite 3."), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("backend cpu: available"), std::string::npos) << r.out;
}

// A run whose loss diverges (inf, then NaN; a run's file keeps neither as a number) finishes, says
// so, and its --check compares diverged values with diverged ones instead of stopping with an
// internal error.
TEST(Cli, ADivergedRunSaysSoAndStillChecks) {
  const auto run = run_cli("run mnist-mlp --ranks 2 --iterations 3 --lr 1e30 --check");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("not finite from iteration 2: training diverged"), std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("max |diff| 0 (losses 0, weights 0)"), std::string::npos) << run.out;
}

// An inference export (torch.onnx.export of a 2-layer MLP, no loss) trains as it is: the command
// says which loss it attached, and a 2-rank run equals one rank.
TEST(Cli, AnInferenceExportTrainsWithAnAttachedLoss) {
  const std::string onnx = std::string(UNITY_TEST_DATA_DIR) + "/onnx/mlp.onnx";
  const auto run = run_cli("run " + onnx + " --ranks 2 --iterations 3 --check --json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find("attached cross-entropy"), std::string::npos) << run.err;
  const auto j = nlohmann::json::parse(run.out);
  EXPECT_LT(j["max_rel_diff"].get<double>(), 1e-5);
  EXPECT_LT(j["losses"].back().get<double>(), j["losses"].front().get<double>());

  const auto json_path = temp_path("mlp-mse.json");
  const auto imported = run_cli("import " + onnx + " --loss mse -o " + json_path.string());
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  const auto shown = run_cli("show " + json_path.string() + " --json");
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_EQ(nlohmann::json::parse(shown.out)["op_counts"]["MSELoss"], 1);
  // Asking for a loss the model has already, or one that does not exist, is bad input.
  EXPECT_EQ(run_cli("optimize mnist-mlp --loss mse").exit_code, 1);
  EXPECT_EQ(run_cli("optimize " + onnx + " --loss hinge").exit_code, 1);
  fs::remove(json_path);
}

// `unity rules verify` reports per rule what was proved, and a file of no rules proves nothing.
TEST(Cli, RulesVerifyReportsTheProvedScopeAndRefusesAnEmptyFile) {
  const auto layout = std::string(UNITY_SOURCE_DIR) + "/rules/layout.json";
  const auto r = run_cli("rules verify " + layout + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  bool variadic = false;
  for (const auto& rule : j["rules"]) {
    ASSERT_TRUE(rule.contains("proved")) << rule.dump();
    if (rule["rule"] == "concat_partition") {
      variadic = true;
      EXPECT_EQ(rule["proved"]["variadic_inputs"], 8);
      EXPECT_EQ(rule["proved"]["degrees"], "all");
    }
  }
  EXPECT_TRUE(variadic);
  EXPECT_EQ(j["by_scope"]["all degrees and shapes; 1 to 8 variadic inputs"], 1);

  const auto empty = temp_path("no-rules.json");
  std::ofstream(empty) << R"({"format": "unity-rules", "version": 1, "rules": []})";
  const auto none = run_cli("rules verify " + empty.string());
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("no rules to verify"), std::string::npos) << none.err;
  fs::remove(empty);
}
