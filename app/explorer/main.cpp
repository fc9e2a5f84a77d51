// `unity-explorer [MODEL] [--model M] [--machine P] [--view V] [--screenshot PNG]`
// With --screenshot it renders the window offscreen into PNG and exits: 0 on success, 1 on bad input
// (message on stderr, nothing written), like the `unity` CLI.
#include <QApplication>
#include <QCommandLineParser>
#include <QMessageBox>
#include <QPixmap>
#include <QTimer>

#include <cstdio>

#include "main_window.h"

namespace {

int fail(const QString& message) {
  std::fprintf(stderr, "unity-explorer: error: %s\n", qPrintable(message));
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
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
  parser.addPositionalArgument(QStringLiteral("MODEL"),
                               QStringLiteral("A zoo model name, an .onnx file or a model .json file."),
                               QStringLiteral("[MODEL]"));
  const QCommandLineOption modelOption(QStringLiteral("model"), QStringLiteral("Model to open (as MODEL)."),
                                       QStringLiteral("M"));
  const QCommandLineOption machineOption(QStringLiteral("machine"),
                                         QStringLiteral("Machine preset or topology JSON to target."),
                                         QStringLiteral("P"));
  const QCommandLineOption viewOption(
      QStringLiteral("view"),
      QStringLiteral("View to show first: %1.").arg(unity::explorer::MainWindow::viewNames().join(", ")),
      QStringLiteral("V"));
  const QCommandLineOption screenshotOption(
      QStringLiteral("screenshot"), QStringLiteral("Render the window (1280x800) into PNG and exit."),
      QStringLiteral("PNG"));
  parser.addOptions({modelOption, machineOption, viewOption, screenshotOption});
  parser.process(app);  // exits on --help, --version and unknown options

  const QStringList positional = parser.positionalArguments();
  if (positional.size() > 1) return fail(QStringLiteral("expected at most one MODEL, got %1").arg(positional.size()));
  if (!positional.isEmpty() && parser.isSet(modelOption) && positional.first() != parser.value(modelOption)) {
    return fail(QStringLiteral("two models given: '%1' and --model '%2'")
                    .arg(positional.first(), parser.value(modelOption)));
  }
  const QString model = parser.isSet(modelOption) ? parser.value(modelOption)
                                            : positional.value(0, QStringLiteral("mnist-mlp"));
  const bool screenshot = parser.isSet(screenshotOption);

  unity::explorer::MainWindow window(/*rememberRecent=*/!screenshot);
  if (parser.isSet(viewOption) && !window.showView(parser.value(viewOption))) {
    return fail(QStringLiteral("unknown view '%1' (choose from: %2)")
                    .arg(parser.value(viewOption), unity::explorer::MainWindow::viewNames().join(", ")));
  }
  window.setMachine(parser.value(machineOption));

  QString error;
  const bool loaded = window.loadModel(model, &error);
  if (screenshot) {
    if (!loaded) return fail(QStringLiteral("cannot open model '%1': %2").arg(model, error));
    window.resize(1280, 800);
    window.show();
    QApplication::processEvents();  // let layouts settle before grabbing
    const QString path = parser.value(screenshotOption);
    if (!window.grab().save(path, "PNG")) return fail(QStringLiteral("cannot write '%1'").arg(path));
    return 0;
  }

  window.resize(1280, 800);
  window.show();
  if (!loaded) {
    // Interactive: say it on stderr for scripts and in a box for people; the window stays usable.
    std::fprintf(stderr, "unity-explorer: error: cannot open model '%s': %s\n", qPrintable(model),
                 qPrintable(error));
    QTimer::singleShot(0, &window, [&window, model, error] {
      QMessageBox::warning(&window, QObject::tr("Cannot open model"),
                           QObject::tr("Cannot open %1:\n\n%2").arg(model, error));
    });
  }
  return QApplication::exec();
}
