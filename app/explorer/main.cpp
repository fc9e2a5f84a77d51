// `unity-explorer [MODEL|PROJECT.unity] [--model M] [--project FILE] [--machine P [--nodes N|--gpus
// N]]
//                 [--view V] [--compare LEFT,RIGHT] [--screenshot PNG]
//                 [--tp N] [--pp N] [--micro-batches N] [--recompute R] [--zero Z]`
// With no model and no project the first launch opens the demo project (resources/demo), later
// ones the last model or project. With --screenshot it renders the chosen view offscreen into PNG
// once its work is done (layouts, the search, the compared plans) and exits: 0 on success, 1 on bad
// input (message on stderr, nothing written), like the `unity` CLI.
#include <QApplication>
#include <QCommandLineParser>
#include <QDeadlineTimer>
#include <QFileInfo>
#include <QMessageBox>
#include <QPixmap>
#include <QSettings>
#include <QThread>
#include <QTimer>

#include <cstdio>
#include <memory>

#include "demo_project.h"
#include "main_window.h"
#include "unity/core/machine/machine_spec.h"
#include "unity/core/pipeline/training_setup.h"
#include "unity/executor/blas_core.h"
#include "unity/views/explorer_document.h"

namespace {

constexpr int kScreenshotTimeoutMs = 540000;  // a screenshot of a big search may take minutes

void printError(const QString& message) {
  std::fprintf(stderr, "unity-explorer: error: %s\n", qPrintable(message));
}

// A positive count option; 0 when not given. Returns false (with *error) for anything else.
bool countOption(const QCommandLineParser& parser, const QCommandLineOption& option, int* value,
                 QString* error) {
  *value = 0;
  if (!parser.isSet(option)) return true;
  bool ok = false;
  *value = parser.value(option).toInt(&ok);
  if (ok && *value > 0) return true;
  *error = QStringLiteral("--%1 must be a positive integer, got '%2'")
               .arg(option.names().first(), parser.value(option));
  return false;
}

// Lets queued work (layouts, searches) run until the window is idle; false on timeout.
bool waitUntilSettled(const unity::explorer::MainWindow& window, int timeoutMs) {
  QDeadlineTimer deadline(timeoutMs);
  int idleRounds = 0;
  while (!deadline.hasExpired()) {
    QApplication::processEvents(QEventLoop::AllEvents, 50);
    // Idle for a few rounds in a row: results queued by workers have been delivered and drawn.
    idleRounds = window.busy() ? 0 : idleRounds + 1;
    if (idleRounds >= 5) return true;
    QThread::msleep(20);
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  unity::executor::reexec_with_openblas_core(argv);
  QApplication app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("Unity"));
  QApplication::setApplicationName(QStringLiteral("unity-explorer"));
  QApplication::setApplicationDisplayName(QStringLiteral("Unity Explorer"));
  QApplication::setApplicationVersion(QStringLiteral(UNITY_VERSION));

  QCommandLineParser parser;
  parser.setApplicationDescription(
      QStringLiteral("Explore DNN models and their parallel training plans (Unity, OSDI'22)."));
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument(
      QStringLiteral("MODEL"),
      QStringLiteral("A zoo model name, an .onnx file, a model .json file, a Hugging Face "
                     "config.json or a project .unity."),
      QStringLiteral("[MODEL]"));
  const QCommandLineOption modelOption(
      QStringLiteral("model"), QStringLiteral("Model to open (as MODEL)."), QStringLiteral("M"));
  const QCommandLineOption projectOption(
      QStringLiteral("project"),
      QStringLiteral("Project file (.unity) to open, created when missing; searches and runs are "
                     "recorded there. Without --model it shows the project's model and plans."),
      QStringLiteral("FILE"));
  const QCommandLineOption machineOption(
      QStringLiteral("machine"), QStringLiteral("Machine preset or topology .json to target."),
      QStringLiteral("P"));
  const QCommandLineOption nodesOption(QStringLiteral("nodes"),
                                       QStringLiteral("Use N whole nodes of the machine."),
                                       QStringLiteral("N"));
  const QCommandLineOption gpusOption({QStringLiteral("gpus"), QStringLiteral("devices")},
                                      QStringLiteral("Use N devices of the machine."),
                                      QStringLiteral("N"));
  const QCommandLineOption viewOption(QStringLiteral("view"),
                                      QStringLiteral("View to show first: %1.")
                                          .arg(unity::explorer::MainWindow::viewNames().join(", ")),
                                      QStringLiteral("V"));
  const QCommandLineOption screenshotOption(
      QStringLiteral("screenshot"),
      QStringLiteral("Render the view (1280x800) into PNG once its work is done, and exit."),
      QStringLiteral("PNG"));
  const QCommandLineOption compareOption(
      QStringLiteral("compare"),
      QStringLiteral(
          "Plans the compare view shows, as LEFT,RIGHT modes (default: sequential,joint)."),
      QStringLiteral("LEFT,RIGHT"));
  // Large models: the search view's layout pins, as `unity optimize` takes them.
  const QCommandLineOption tpOption(QStringLiteral("tp"),
                                    QStringLiteral("Pin the devices of a stage replica."),
                                    QStringLiteral("N"));
  const QCommandLineOption ppOption(
      QStringLiteral("pp"), QStringLiteral("Pin the pipeline stages."), QStringLiteral("N"));
  const QCommandLineOption microBatchesOption(QStringLiteral("micro-batches"),
                                              QStringLiteral("Pin the micro-batches."),
                                              QStringLiteral("N"));
  const QCommandLineOption recomputeOption(
      QStringLiteral("recompute"), QStringLiteral("Pin recomputation: none, selective or full."),
      QStringLiteral("R"));
  const QCommandLineOption zeroOption(
      QStringLiteral("zero"), QStringLiteral("Pin the ZeRO stage (0-3)."), QStringLiteral("Z"));
  parser.addOptions({modelOption, projectOption, machineOption, nodesOption, gpusOption, viewOption,
                     compareOption, screenshotOption, tpOption, ppOption, microBatchesOption,
                     recomputeOption, zeroOption});
  parser.process(app);  // exits on --help, --version and unknown options

  // Invocation mistakes fail fast in both modes: nothing has been shown yet.
  QStringList positional = parser.positionalArguments();
  QString projectArg = parser.value(projectOption);
  if (!positional.isEmpty() &&
      positional.first().endsWith(QLatin1String(".unity"), Qt::CaseInsensitive)) {
    if (!projectArg.isEmpty() && projectArg != positional.first()) {
      printError(QStringLiteral("two projects given: '%1' and --project '%2'")
                     .arg(positional.first(), projectArg));
      return 1;
    }
    projectArg = positional.takeFirst();
  }
  QString usageError;
  unity::MachineSelection selection;
  if (positional.size() > 1) {
    usageError = QStringLiteral("expected at most one MODEL, got %1").arg(positional.size());
  } else if (!positional.isEmpty() && parser.isSet(modelOption) &&
             positional.first() != parser.value(modelOption)) {
    usageError = QStringLiteral("two models given: '%1' and --model '%2'")
                     .arg(positional.first(), parser.value(modelOption));
  } else if (parser.isSet(nodesOption) && parser.isSet(gpusOption)) {
    usageError = QStringLiteral("give --nodes or --gpus, not both");
  } else if ((parser.isSet(nodesOption) || parser.isSet(gpusOption)) &&
             !parser.isSet(machineOption)) {
    usageError = QStringLiteral("--nodes and --gpus select part of a --machine");
  } else if (countOption(parser, nodesOption, &selection.nodes, &usageError) &&
             countOption(parser, gpusOption, &selection.devices, &usageError) &&
             parser.isSet(viewOption) &&
             !unity::explorer::MainWindow::viewNames().contains(parser.value(viewOption))) {
    usageError =
        QStringLiteral("unknown view '%1' (choose from: %2)")
            .arg(parser.value(viewOption), unity::explorer::MainWindow::viewNames().join(", "));
  }
  const QStringList compareModes = parser.value(compareOption).split(QLatin1Char(','));
  if (usageError.isEmpty() && parser.isSet(compareOption) &&
      (compareModes.size() != 2 ||
       !unity::views::ExplorerDocument::modes().contains(compareModes[0]) ||
       !unity::views::ExplorerDocument::modes().contains(compareModes[1])))
    usageError =
        QStringLiteral("--compare takes two modes LEFT,RIGHT from: %1; got '%2'")
            .arg(unity::views::ExplorerDocument::modes().join(", "), parser.value(compareOption));
  unity::LayoutRequest layout;
  if (usageError.isEmpty() && countOption(parser, tpOption, &layout.tensor_parallel, &usageError) &&
      countOption(parser, ppOption, &layout.pipeline_stages, &usageError) &&
      countOption(parser, microBatchesOption, &layout.micro_batches, &usageError)) {
    try {
      if (parser.isSet(recomputeOption))
        layout.recompute =
            unity::recompute_from_string(parser.value(recomputeOption).toStdString());
    } catch (const std::exception& e) {
      usageError = QString::fromUtf8(e.what());
    }
    bool ok = true;
    if (parser.isSet(zeroOption)) layout.zero_stage = parser.value(zeroOption).toInt(&ok);
    if (!ok || layout.zero_stage > 3)
      usageError =
          QStringLiteral("--zero takes 0, 1, 2 or 3, got '%1'").arg(parser.value(zeroOption));
  }
  if (!usageError.isEmpty()) {
    printError(usageError);
    return 1;
  }

  const bool screenshot = parser.isSet(screenshotOption);
  const unity::explorer::ExplorerSettings settings =
      screenshot ? unity::explorer::ExplorerSettings() : unity::explorer::ExplorerSettings::load();
  // No model and no project named: the last one opened (interactive runs), else the demo project
  // (the first launch, and --screenshot runs, which never read the settings).
  QString model = parser.isSet(modelOption) ? parser.value(modelOption) : positional.value(0);
  std::unique_ptr<unity::explorer::DemoProject> demo;
  if (model.isEmpty() && projectArg.isEmpty()) {
    const QString last = screenshot || !settings.reopenLastModel
                             ? QString()
                             : QSettings().value(QStringLiteral("lastModel")).toString();
    const bool firstLaunch = screenshot || !QSettings().contains(QStringLiteral("lastModel"));
    if (last.endsWith(QLatin1String(".unity")) && QFileInfo::exists(last))
      projectArg = last;
    else if (!last.isEmpty() && !last.endsWith(QLatin1String(".unity")))
      model = last;
    else if (firstLaunch)
      demo = std::make_unique<unity::explorer::DemoProject>(/*temporary=*/screenshot);
    if (demo && demo->path().isEmpty()) {
      printError(QStringLiteral("cannot unpack the demo project: %1").arg(demo->error()));
      demo.reset();
    }
    if (demo) projectArg = demo->path();
    if (model.isEmpty() && projectArg.isEmpty()) model = QStringLiteral("mnist-mlp");
  }
  const QString machine =
      parser.isSet(machineOption) ? parser.value(machineOption) : settings.machine;

  unity::explorer::MainWindow window(/*rememberSettings=*/!screenshot);
  if (parser.isSet(viewOption)) window.showView(parser.value(viewOption));
  if (parser.isSet(compareOption)) window.setCompareModes(compareModes[0], compareModes[1]);
  window.setLayoutRequest(layout);

  // Bad files or names: fatal for a screenshot, a message box in interactive mode (the window stays
  // usable to open something else). Both go to stderr for scripts.
  QStringList loadErrors;
  QString error;
  // A project's own model and machine, unless the command line names them.
  const bool projectShows = !projectArg.isEmpty() && model.isEmpty();
  if (!projectShows || parser.isSet(machineOption)) {
    if (!window.loadMachine(machine, selection, &error))
      loadErrors << QStringLiteral("cannot use machine '%1': %2").arg(machine, error);
  }
  if (!projectArg.isEmpty() &&
      !window.loadProject(projectArg, /*create=*/true, /*showContents=*/projectShows, &error))
    loadErrors << QStringLiteral("cannot open project '%1': %2").arg(projectArg, error);
  if (projectShows && loadErrors.isEmpty() && window.currentModel().isEmpty()) {
    // An empty project: the default model, recorded there from now on.
    if (!window.loadMachine(machine, selection, &error))
      loadErrors << QStringLiteral("cannot use machine '%1': %2").arg(machine, error);
    model = QStringLiteral("mnist-mlp");
  }
  if (!model.isEmpty() && !window.loadModel(model, &error))
    loadErrors << QStringLiteral("cannot open model '%1': %2").arg(model, error);
  for (const QString& e : loadErrors) printError(e);

  window.resize(1280, 800);
  if (screenshot) {
    if (!loadErrors.isEmpty()) return 1;
    window.show();
    window.prepareScreenshot(window.currentView());
    bool settled = waitUntilSettled(window, kScreenshotTimeoutMs);
    // The run view shows a real run of the plan the other views show.
    if (settled && window.currentView() == QLatin1String("run") && window.startRun())
      settled = waitUntilSettled(window, kScreenshotTimeoutMs);
    // A selected operator fills the property panel and the topology highlight.
    if (settled && window.currentView() != QLatin1String("summary") &&
        window.currentView() != QLatin1String("search") &&
        !window.selectHeaviestOperator().isEmpty())
      settled = waitUntilSettled(window, kScreenshotTimeoutMs);
    window.updateActivity();
    if (!settled) {
      printError(QStringLiteral("the %1 view was still busy after %2 s")
                     .arg(window.currentView())
                     .arg(kScreenshotTimeoutMs / 1000));
      return 2;
    }
    const QString path = parser.value(screenshotOption);
    if (!window.grab().save(path, "PNG")) {
      printError(QStringLiteral("cannot write '%1'").arg(path));
      return 1;
    }
    return 0;
  }

  window.show();
  if (!loadErrors.isEmpty()) {
    QTimer::singleShot(0, &window, [&window, loadErrors] {
      QMessageBox::warning(&window, QObject::tr("Unity Explorer"),
                           loadErrors.join(QStringLiteral("\n\n")));
    });
  }
  return QApplication::exec();
}
