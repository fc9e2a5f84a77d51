#pragma once
// The run view: trains the selected plan for real (the executor: CPU ranks through OpenBLAS and
// Open MPI, or CUDA when this machine has it), with the time and loss of every iteration charted
// as they arrive, the measured median against the cost model's prediction (for this CPU, and for
// the machine the plan was made for), and Stop. With a project open the run is recorded there,
// and earlier runs of the project can be shown again.
//
// Zoo models the executor can shrink (zoo::scalable_models) can be run reduced: the model is
// rebuilt with smaller widths, image and batch, planned again in the same mode on the same
// machine, and that plan runs. A full ResNeXt-50 for 12 GPUs does not fit a laptop's memory.
#include <QWidget>

#include <memory>

#include "unity/core/plan/plan.h"
#include "unity/views/run_runner.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace unity::views {

class ExplorerDocument;
class OperatorTimesPanel;
class PipelinePlanPanel;
class RunChart;
class SearchRunner;

class RunView : public QWidget {
  Q_OBJECT

 public:
  explicit RunView(ExplorerDocument* document, QWidget* parent = nullptr);

  // Starts a run of the chosen plan with the view's settings (reduced first when asked); false
  // with the reason in the status line when it cannot.
  bool startRun();
  void stop();
  void setPlanMode(const QString& mode);  // empty: the best plan
  void setRanks(int ranks);
  void setIterations(int iterations, int warmup);
  void setReduced(bool reduced, double scale = 0, int batchPerDevice = 0);
  void setBudget(int budget);              // of the reduced model's search
  void setWorker(const QString& program);  // unity-worker (tests); empty: beside this program

  RunRunner* runner() const { return runner_; }
  RunChart* chart() const { return chart_; }
  // A pipelined plan's timelines and memory bars, predicted and (after a run) measured.
  PipelinePlanPanel* pipelinePanel() const { return pipeline_; }
  // A profiled run's operators: predicted against measured, table and scatter plot.
  OperatorTimesPanel* operatorTimes() const { return operators_; }
  QCheckBox* profileOption() const { return profile_; }
  QTableWidget* runsTable() const { return runs_; }
  QString statusText() const;
  QString resultText() const;  // predicted against measured
  QString planText() const;    // the plan a run would use
  // Working at anything: a run, the planning of a reduced model, or drawing a predicted timeline.
  bool busy() const;
  // A run or the planning for one is under way; drawing a timeline does not hold a run back.
  bool running() const;
  // The plan the last run used (the reduced one when it was reduced).
  std::shared_ptr<const Plan> runPlan() const { return runPlan_; }

 signals:
  void busyChanged(bool busy);
  void runFinished(const unity::views::RunOutcome& outcome);

 private:
  std::shared_ptr<const Plan> selectedPlan() const;
  void refreshPlans();
  void refreshPlanText();
  void refreshRuns();
  void showRecordedRun(int row);
  void updateButtons();
  void launch(std::shared_ptr<const Plan> plan);
  void onPredicted(double planMachineMs, double cpuMs);
  void onFinished(const RunOutcome& outcome);
  void showResult();
  RunSettings settings() const;

  ExplorerDocument* document_;
  RunRunner* runner_;
  SearchRunner* planner_;  // plans the reduced model
  RunChart* chart_;
  PipelinePlanPanel* pipeline_;
  OperatorTimesPanel* operators_;
  QComboBox* plan_;
  QComboBox* backend_;
  QSpinBox* ranks_;
  QSpinBox* iterations_;
  QSpinBox* warmup_;
  QCheckBox* reduce_;
  QCheckBox* profile_;
  QDoubleSpinBox* scale_;
  QSpinBox* batch_;
  QPushButton* run_;
  QPushButton* stop_;
  QLabel* planLabel_;
  QLabel* status_;
  QLabel* result_;
  QTableWidget* runs_;
  QString worker_;
  int budget_ = 200;
  bool reduceTouched_ = false;
  bool planChosen_ = false;  // the user picked a plan: keep it when better ones arrive  // the user
                             // chose; keep it across plans
  std::shared_ptr<const Plan> runPlan_;
  double predictedMs_ = 0, predictedCpuMs_ = 0;
  quint64 planGeneration_ = 0;
};

}  // namespace unity::views
