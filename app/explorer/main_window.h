#pragma once
// The explorer's main window: menus, toolbar, status bar and the views in tabs. It owns the wiring
// only: models load through the core (unity::load_model_for_devices) off the GUI thread, plans come
// from SearchRunner workers, runs from RunRunner workers, and drawing is libunity_views'. A project
// file (.unity) holds what the session did (main_window_project.cpp).
#include <QFutureWatcher>
#include <QMainWindow>
#include <QString>
#include <QStringList>

#include <memory>

#include "explorer_settings.h"
#include "unity/core/machine/machine_spec.h"
#include "unity/core/pcg/graph.h"
#include "unity/core/pipeline/training_setup.h"
#include "unity/core/plan/plan.h"
#include "unity/views/project_session.h"

class QLabel;
class QMenu;
class QTabWidget;
class QTimer;

namespace unity::views {
class CompareView;
class ExplorerDocument;
class GraphView;
class MemoryView;
class ModelSummaryView;
class PcgView;
class RunView;
class SearchRunner;
class SearchView;
class TimelineView;
class TopologyView;
}  // namespace unity::views

namespace unity::explorer {

class MachineBar;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  // The views `--view` and the View menu select, in tab order.
  static QStringList viewNames();

  // rememberSettings: false for --screenshot runs, which must neither read nor change the user's
  // settings (screenshots are reproducible).
  explicit MainWindow(bool rememberSettings = true, QWidget* parent = nullptr);
  ~MainWindow() override;

  // Loads a zoo name, .onnx or model .json for the current machine, or a plan .json with its
  // machine, and shows it (blocking: for the command line). On failure returns false, keeps the
  // current model and puts the reason in *error.
  bool loadModel(const QString& spec, QString* error);
  // Loads a preset or topology .json cut down to `selection` (blocking). False with *error on
  // failure.
  bool loadMachine(const QString& spec, const MachineSelection& selection, QString* error);
  // Selects one of viewNames(); returns false for any other name.
  bool showView(const QString& name);
  QString currentView() const;
  // The two plans the compare view shows (modes: data-parallel, sequential, joint, expert); false
  // for an unknown mode.
  bool setCompareModes(const QString& left, const QString& right);
  QString currentModel() const;
  // Pins of the search view's large-model layout (unset fields searched), as `--pp 2
  // --micro-batches 4` give them.
  void setLayoutRequest(const LayoutRequest& request);

  // Opens a project (.unity; created when missing and `create`) and, when it holds a model, shows
  // its model, machine, plans and decisions (blocking: for the command line). From then on the
  // session records into it. False with *error when the file cannot be used.
  bool loadProject(const QString& file, bool create, bool showContents, QString* error);
  // Creates `file` holding the session's model, machine, plans and decisions, and records into it
  // from then on. False with *error (an existing file is never overwritten).
  bool saveProjectAs(const QString& file, QString* error);
  QString projectFile() const;

  // Starts what the view needs to show a finished picture (the search, the compared plans).
  void prepareScreenshot(const QString& view);
  // Starts a training run of the run view's plan (the screenshot of the run view shows one).
  bool startRun();
  // Writes the launch file of the plan the views show for `framework` ("megatron", "torchtitan",
  // "deepspeed") to `file`, as `unity export` does; with `nearest`, the nearest layout the
  // framework can run where it cannot run the plan. False with the reason in *message (nothing
  // written); on success *message says what was written.
  bool exportLaunch(const QString& framework, const QString& file, bool nearest, QString* message);
  // Selects the operator of the best plan that communicates most (else computes longest), so the
  // property panel and the topology highlight have something to show; returns its name.
  QString selectHeaviestOperator();
  // True while a model loads, a plan is computed, a search runs or a layout is pending.
  bool busy() const;
  QString activityText() const;
  void updateActivity();

  views::ExplorerDocument* document() const { return document_; }

 protected:
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;
  void closeEvent(QCloseEvent* event) override;

 private slots:
  void openModelDialog();
  void openMachineDialog();
  void openModel(const QString& spec);  // interactive: in the background, errors in a message box
  void selectMachine(const QString& spec, const unity::MachineSelection& selection);
  void reloadModel();
  void showSettings();
  void showAbout();
  void openProjectDialog();
  void saveProjectDialog();
  void closeProject();
  void openProject(const QString& file);  // interactive: read in the background
  void openRecent(const QString& spec);   // a model or a project
  void exportLaunchDialog();

 private:
  struct LoadedModel {
    std::shared_ptr<const Graph> graph;
    std::shared_ptr<const Plan> plan;  // set when the file is a plan
    QString spec;
    QString error;
    QString note;  // e.g. the loss attached to an inference export
  };
  // Reads a zoo name, .onnx, model .json or plan .json (any thread).
  static LoadedModel readModel(const QString& spec, int devices);
  void showLoaded(const LoadedModel& loaded);
  void createMenus();
  void createProjectMenu(QMenu* file);
  void showProjectContents(const views::ProjectContents& contents);
  void onProjectLoaded();
  void updateProjectLabel();
  void createToolBar();
  void addRecent(const QString& spec);
  void rebuildRecentMenu();
  void onModelLoaded();
  void computeDataParallelPlan();
  void updateTitle();
  views::GraphView* currentGraphView() const;
  int devices() const;

  bool rememberSettings_;
  ExplorerSettings settings_;
  views::ExplorerDocument* document_;
  QTabWidget* tabs_;
  views::ModelSummaryView* summary_;
  views::PcgView* pcg_;
  views::TopologyView* topology_;
  views::SearchView* search_;
  views::CompareView* compare_;
  views::RunView* run_;
  views::TimelineView* timeline_;
  views::MemoryView* memory_;
  views::SearchRunner* dataParallel_;
  MachineBar* machineBar_;
  QMenu* recentMenu_ = nullptr;
  QLabel* activity_;
  QLabel* machineLabel_;
  QLabel* projectLabel_;
  QTimer* activityTimer_;
  QFutureWatcher<LoadedModel> loader_;
  QString loadingSpec_;
  QFutureWatcher<views::ProjectContents> projectLoader_;
};

}  // namespace unity::explorer
