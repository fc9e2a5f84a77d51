#include "unity/views/explorer_document.h"

#include "unity/core/plan/search_mode.h"
#include "unity/views/project_session.h"

#include <limits>

namespace unity::views {

ExplorerDocument::ExplorerDocument(QObject* parent)
    : QObject(parent), project_(new ProjectSession(this)) {}

const QStringList& ExplorerDocument::modes() {
  // The explorer's order: the baselines it computes by itself first, then the searches.
  static const QStringList m = [] {
    QStringList out;
    for (const SearchMode mode :
         {SearchMode::DataParallel, SearchMode::Sequential, SearchMode::Joint, SearchMode::Expert})
      out << QString::fromUtf8(to_string(mode));
    return out;
  }();
  return m;
}

void ExplorerDocument::setDecisions(const QStringList& pins, const QStringList& vetoes) {
  if (pins == pins_ && vetoes == vetoes_) return;
  pins_ = pins;
  vetoes_ = vetoes;
  emit decisionsChanged();
}

QString ExplorerDocument::modeTitle(const QString& mode) {
  if (mode == QLatin1String("data-parallel")) return tr("Data parallel");
  if (mode == QLatin1String("sequential")) return tr("Sequential (algebraic, then parallel)");
  if (mode == QLatin1String("joint")) return tr("Joint (Unity)");
  if (mode == QLatin1String("expert")) return tr("Expert");
  return mode;
}

void ExplorerDocument::setModel(std::shared_ptr<const Graph> model, const QString& spec) {
  model_ = std::move(model);
  modelSpec_ = spec;
  ++generation_;
  selected_.clear();
  dropPlans();
  emit modelChanged();
  emit selectionChanged(QString());
}

void ExplorerDocument::setMachine(std::shared_ptr<const MachineSpec> machine, const QString& spec,
                                  const MachineSelection& selection) {
  machine_ = std::move(machine);
  machineSpec_ = spec;
  selection_ = selection;
  ++generation_;
  dropPlans();
  emit machineChanged();
}

QString ExplorerDocument::machineDescription() const {
  if (!machine_) return tr("no machine");
  const MachineSpec& m = *machine_;
  const bool cpu = !m.device_types.empty() && m.device_types[0].kind == "cpu";
  const QString noun = cpu ? tr("ranks") : tr("GPUs");
  const QString device = QString::fromStdString(m.device(0).name);
  if (m.num_nodes > 1)
    return tr("%1 · %2 nodes × %3 %4 (%5 %6)")
        .arg(QString::fromStdString(m.name))
        .arg(m.num_nodes)
        .arg(m.devices_per_node)
        .arg(device)
        .arg(m.num_devices())
        .arg(noun);
  return tr("%1 · %2 × %3").arg(QString::fromStdString(m.name)).arg(m.num_devices()).arg(device);
}

std::shared_ptr<const Plan> ExplorerDocument::plan(const QString& mode) const {
  const auto it = plans_.find(mode);
  return it == plans_.end() ? nullptr : it->second;
}

void ExplorerDocument::setPlan(const QString& mode, std::shared_ptr<const Plan> plan) {
  if (!plan) return;
  plans_[mode] = std::move(plan);
  emit planChanged(mode);
}

QStringList ExplorerDocument::planModes() const {
  QStringList out;
  for (const QString& m : modes())
    if (plans_.count(m)) out << m;
  for (const auto& [mode, plan] : plans_)
    if (!out.contains(mode)) out << mode;
  return out;
}

void ExplorerDocument::setPreferredMode(const QString& mode) {
  preferred_ = mode;
  if (plan(mode)) emit planChanged(mode);  // views choosing a default look again
}

QString ExplorerDocument::bestMode() const {
  if (plan(preferred_)) return preferred_;
  QString best;
  double bestMs = std::numeric_limits<double>::infinity();
  for (const QString& mode : planModes()) {
    const auto& s = plan(mode)->summary;
    // A plan that fits always beats one that does not; ties go to the later mode (the joint
    // search).
    const double key = s.iteration_time_ms + (s.fits_in_memory ? 0 : 1e12);
    if (key <= bestMs) {
      bestMs = key;
      best = mode;
    }
  }
  return best;
}
QString ExplorerDocument::bestPipelinedMode() const {
  if (const auto p = plan(preferred_); p && p->pipeline) return preferred_;
  QString best;
  double bestMs = std::numeric_limits<double>::infinity();
  for (const QString& mode : planModes()) {
    const auto p = plan(mode);
    if (!p->pipeline) continue;
    const double key = p->summary.iteration_time_ms + (p->summary.fits_in_memory ? 0 : 1e12);
    if (key <= bestMs) {
      bestMs = key;
      best = mode;
    }
  }
  return best.isEmpty() ? bestMode() : best;
}

void ExplorerDocument::setMeasurement(
    std::shared_ptr<const Plan> plan,
    std::shared_ptr<const executor::PipelineMeasurement> measurement) {
  measuredPlan_ = std::move(plan);
  measurement_ = std::move(measurement);
  emit measurementChanged();
}

std::shared_ptr<const executor::PipelineMeasurement> ExplorerDocument::measurement(
    const Plan& plan) const {
  if (!measurement_ || !measuredPlan_) return nullptr;
  if (measuredPlan_.get() == &plan) return measurement_;
  // A plan read again (a project, a plan file) is another object with the same layout.
  const Plan& m = *measuredPlan_;
  if (!m.pipeline || !plan.pipeline) return nullptr;
  const PipelinePlan &a = *m.pipeline, &b = *plan.pipeline;
  const bool same = m.summary.model == plan.summary.model && m.summary.mode == plan.summary.mode &&
                    m.summary.devices == plan.summary.devices &&
                    a.tensor_parallel == b.tensor_parallel &&
                    a.pipeline_stages == b.pipeline_stages && a.data_parallel == b.data_parallel &&
                    a.micro_batches == b.micro_batches && a.interleave == b.interleave;
  return same ? measurement_ : nullptr;
}

void ExplorerDocument::setSelectedName(const QString& name) {
  if (name == selected_) return;
  selected_ = name;
  emit selectionChanged(name);
}

void ExplorerDocument::dropPlans() {
  preferred_.clear();
  if (measurement_) {
    measurement_.reset();
    measuredPlan_.reset();
    emit measurementChanged();
  }
  if (plans_.empty()) return;
  plans_.clear();
  emit planChanged(QString());
}

}  // namespace unity::views
