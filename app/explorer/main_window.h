#pragma once
// The explorer's main window: menus, status bar and the views. It owns the wiring only; loading goes
// through the core (unity::load_model) and drawing through libunity_views.
#include <QMainWindow>
#include <QString>
#include <QStringList>

class QMenu;
class QLabel;

namespace unity {
struct MachineSelection;
}

namespace unity::views {
class ModelSummaryView;
}

namespace unity::explorer {

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  // The views `--view` and the View menu can select.
  static QStringList viewNames();

  // rememberRecent: false for --screenshot runs, which must not change the user's settings.
  explicit MainWindow(bool rememberRecent = true, QWidget* parent = nullptr);

  // Loads a zoo name, .onnx or model .json and shows it. On failure returns false, leaves the current
  // model shown and puts the reason (the core's message) in *error.
  bool loadModel(const QString& spec, QString* error);
  // Selects one of viewNames(); returns false for any other name.
  bool showView(const QString& name);
  // Loads a machine preset or topology .json (cut down to `selection`) as the target of the next
  // search and names it in the status bar. On failure returns false with the reason in *error.
  bool loadMachine(const QString& spec, const MachineSelection& selection, QString* error);
  QString currentModel() const { return currentSpec_; }

 private slots:
  void openModelDialog();
  void openModel(const QString& spec);  // interactive: errors go to a message box
  void reloadModel();
  void showAbout();

 private:
  void createMenus();
  void addRecent(const QString& spec);
  void rebuildRecentMenu();

  bool rememberRecent_;
  QString currentSpec_;
  views::ModelSummaryView* summary_;
  QMenu* recentMenu_ = nullptr;
  QLabel* machineLabel_;
};

}  // namespace unity::explorer
