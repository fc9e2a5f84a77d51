// The CLI and the explorer share their use cases (projects/include/unity/use_cases): the same
// model, machine, options and project choices give the same plan and the same project records,
// whether `unity optimize --project` or the explorer's search records them, and both plan with the
// project's pins, vetoes and measured operator times.
#include <QTemporaryDir>
#include <QtTest>

#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "unity/core/cost/op_profile_key.h"
#include "unity/core/plan/plan_optimizer.h"
#include "unity/core/zoo/model_loader.h"
#include "unity/projects/project.h"
#include "unity/projects/records_json.h"
#include "unity/use_cases/rule_choices.h"
#include "unity/views/search_runner.h"
#include "views_test.h"

using namespace unity;
using namespace unity::views;

namespace {

// Every Linear of the data-parallel plan and of the joint plan (the fusion vetoed) measured at
// 1 us forward and 2 us backward, so that the plans of both searches are costed with them.
std::vector<projects::OpProfile> measuredLinears(const MachineSpec& machine) {
  const Graph model = load_model_for_devices("mnist-mlp", machine.num_devices());
  OptimizeOptions joint;
  joint.mode = "joint";
  joint.budget = 300;
  joint.vetoes = {"fuse_linear_relu"};
  std::vector<projects::OpProfile> out;
  for (const Plan& plan : {optimize_plan(model, machine, {}), optimize_plan(model, machine, joint)})
    for (const auto& [id, n] : plan.pcg.nodes())
      if (n.op.type == OpType::Linear)
        out.push_back(
            {machine.device(0).name, op_profile_key(plan.pcg, id), 1e-6, 2e-6, "test", ""});
  return out;
}

// The same project content before either search: a veto for every model and measured times.
void prepare(const std::string& file, const MachineSpec& machine) {
  auto project = projects::Project::create(file);
  use_cases::set_choice(project, {std::nullopt}, "fuse_linear_relu", projects::RuleChoice::Veto);
  project.put_op_profiles(measuredLinears(machine));
}

nlohmann::json withoutTimes(nlohmann::json summary) {
  summary.erase("search_seconds");
  return summary;
}

}  // namespace

class UseCaseParityTests : public QObject {
  Q_OBJECT

 private slots:
  void cliAndExplorerRecordTheSameRows() {
    QTemporaryDir dir;
    const std::string cliFile = dir.filePath("cli.unity").toStdString();
    const std::string guiFile = dir.filePath("gui.unity").toStdString();
    const MachineSpec machine = load_machine("summit", {0, 2});
    prepare(cliFile, machine);
    prepare(guiFile, machine);

    // The CLI: its default joint search, 300 candidates, no time limit (so that both searches
    // make the same steps).
    const std::string command = fmt::format(
        "{} optimize mnist-mlp --machine summit --gpus 2 --budget 300 --time-limit 0 --project {} "
        "> /dev/null 2>&1",
        UNITY_CLI_PATH, cliFile);
    QCOMPARE(std::system(command.c_str()), 0);

    // The explorer's search runner with the same inputs.
    SearchRunner runner;
    runner.setRecording(QString::fromStdString(guiFile), QStringLiteral("mnist-mlp"));
    OptimizeOptions options;
    options.mode = "joint";
    options.budget = 300;
    QVERIFY(runner.start(std::make_shared<const Graph>(load_model_for_devices("mnist-mlp", 2)),
                         std::make_shared<const MachineSpec>(machine), options));
    QVERIFY(runner.waitForFinished(120000));
    QVERIFY2(runner.recordingError().isEmpty(), qPrintable(runner.recordingError()));
    QVERIFY(runner.recordedSearchId() > 0);

    const auto cli = projects::Project::open(cliFile, projects::Access::ReadOnly);
    const auto gui = projects::Project::open(guiFile, projects::Access::ReadOnly);
    QCOMPARE(cli.models().size(), size_t(1));
    QCOMPARE(gui.models().size(), size_t(1));
    QCOMPARE(gui.models()[0].structural_hash, cli.models()[0].structural_hash);
    QCOMPARE(gui.models()[0].source, cli.models()[0].source);
    QCOMPARE(gui.machines().size(), cli.machines().size());
    QCOMPARE(gui.machines()[0].name, cli.machines()[0].name);
    QCOMPARE(gui.machines()[0].devices, cli.machines()[0].devices);

    const auto cliSearches = cli.searches(), guiSearches = gui.searches();
    QCOMPARE(cliSearches.size(), size_t(1));
    QCOMPARE(guiSearches.size(), size_t(1));
    const auto &c = cliSearches[0], &g = guiSearches[0];
    QCOMPARE(g.info.mode, c.info.mode);
    // The same configuration: the project's veto and its measured times joined both searches.
    QCOMPARE(QString::fromStdString(g.info.config.dump()),
             QString::fromStdString(c.info.config.dump()));
    QCOMPARE(c.info.config.at("vetoes"), nlohmann::json({"fuse_linear_relu"}));
    QVERIFY(c.info.config.at("op_profiles").get<int>() > 0);
    QCOMPARE(g.status, c.status);
    QCOMPARE(g.steps, c.steps);
    QCOMPARE(g.candidates_evaluated, c.candidates_evaluated);
    QCOMPARE(*g.best_ms, *c.best_ms);

    const auto cliPlans = cli.plans(), guiPlans = gui.plans();
    QCOMPARE(cliPlans.size(), size_t(1));
    QCOMPARE(guiPlans.size(), size_t(1));
    QCOMPARE(QString::fromStdString(withoutTimes(guiPlans[0].summary).dump()),
             QString::fromStdString(withoutTimes(cliPlans[0].summary).dump()));
    const Plan cliPlan = cli.load_plan(cliPlans[0].id), guiPlan = gui.load_plan(guiPlans[0].id);
    QCOMPARE(guiPlan.pcg.structural_hash(), cliPlan.pcg.structural_hash());
    // The measured times were used, and the veto held.
    QVERIFY2(cliPlan.summary.measured_operators > 0, cliPlans[0].summary.dump().c_str());
    for (const auto& a : cliPlan.summary.substitutions_applied)
      QVERIFY(a.rule != "fuse_linear_relu");
  }
};

UNITY_VIEWS_SUITE(UseCaseParityTests);
#include "test_use_case_parity.moc"
