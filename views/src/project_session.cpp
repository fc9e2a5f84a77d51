#include "unity/views/project_session.h"

#include <QFile>

#include <algorithm>
#include <exception>

#include "unity/projects/project.h"
#include "unity/use_cases/rule_choices.h"

namespace unity::views {

namespace {

std::filesystem::path pathOf(const QString& file) { return QFile::encodeName(file).toStdString(); }

QStringList toQt(const std::vector<std::string>& list) {
  QStringList out;
  for (const auto& s : list) out << QString::fromStdString(s);
  return out;
}

std::vector<std::string> toStd(const QStringList& list) {
  std::vector<std::string> out;
  for (const auto& s : list) out.push_back(s.toStdString());
  return out;
}

template <typename F>
bool guarded(QString* error, F&& f) {
  try {
    f();
    return true;
  } catch (const std::exception& e) {
    if (error) *error = QString::fromUtf8(e.what());
    return false;
  }
}

}  // namespace

ProjectSession::ProjectSession(QObject* parent) : QObject(parent) {}
ProjectSession::~ProjectSession() = default;

bool ProjectSession::open(const QString& file, QString* error) {
  std::unique_ptr<projects::Project> project;
  if (!guarded(error, [&] {
        project = std::make_unique<projects::Project>(projects::Project::open(pathOf(file)));
      }))
    return false;
  project_ = std::move(project);
  file_ = file;
  emit opened(file_);
  return true;
}

bool ProjectSession::create(const QString& file, QString* error) {
  std::unique_ptr<projects::Project> project;
  if (!guarded(error, [&] {
        project = std::make_unique<projects::Project>(projects::Project::create(pathOf(file)));
      }))
    return false;
  project_ = std::move(project);
  file_ = file;
  emit opened(file_);
  return true;
}

void ProjectSession::close() {
  if (!project_) return;
  project_.reset();
  file_.clear();
  emit closed();
}

ProjectContents ProjectSession::readContents(const QString& file) {
  ProjectContents out;
  out.file = file;
  guarded(&out.error, [&] {
    const auto project = projects::Project::open(pathOf(file), projects::Access::ReadOnly);
    std::optional<std::int64_t> modelId, machineId;
    const auto searches = project.searches();
    for (auto it = searches.rbegin(); it != searches.rend(); ++it)
      if (it->info.model_id && it->info.machine_id) {
        modelId = it->info.model_id;
        machineId = it->info.machine_id;
        break;
      }
    const auto plans = project.plans();
    const auto models = project.models();
    if (!modelId && !plans.empty()) {
      // No search: the model of the latest plan, by name, with the plan's own machine.
      const auto& latest = plans.back();
      for (auto it = models.rbegin(); it != models.rend() && !modelId; ++it)
        if (it->name == latest.model) modelId = it->id;
      out.machine = std::make_shared<const MachineSpec>(project.load_plan(latest.id).machine);
    }
    if (!modelId && !models.empty()) modelId = models.back().id;
    if (!machineId && !out.machine && !project.machines().empty())
      machineId = project.machines().back().id;
    if (machineId)
      out.machine = std::make_shared<const MachineSpec>(project.load_machine(*machineId));
    if (!modelId) return;
    out.model = std::make_shared<const Graph>(project.load_model(*modelId));
    for (const auto& m : models)
      if (m.id == *modelId) out.modelSource = QString::fromStdString(m.source);
    const int devices = out.machine ? out.machine->num_devices() : 0;
    for (auto it = plans.rbegin(); it != plans.rend(); ++it) {
      const QString mode = QString::fromStdString(it->mode);
      if (it->model != out.model->name || it->devices != devices || out.plans.count(mode)) continue;
      out.plans[mode] = std::make_shared<const Plan>(project.load_plan(it->id));
    }
    const auto choices = use_cases::stored_choices(project, *modelId);
    out.pins = toQt(choices.pins);
    out.vetoes = toQt(choices.vetoes);
  });
  return out;
}

std::vector<SearchEvent> ProjectSession::readSearchSteps(const QString& file, qint64 searchId) {
  const auto project = projects::Project::open(pathOf(file), projects::Access::ReadOnly);
  return project.load_search_steps(searchId);
}

std::shared_ptr<const Plan> ProjectSession::readSearchPlan(const QString& file, qint64 searchId) {
  const auto project = projects::Project::open(pathOf(file), projects::Access::ReadOnly);
  for (const auto& p : project.plans())
    if (p.search_id && *p.search_id == searchId)
      return std::make_shared<const Plan>(project.load_plan(p.id));
  return nullptr;
}

std::vector<projects::SearchRecord> ProjectSession::searches() const {
  std::vector<projects::SearchRecord> out;
  if (project_) guarded(nullptr, [&] { out = project_->searches(); });
  return out;
}

std::vector<projects::RunRecord> ProjectSession::runs() const {
  std::vector<projects::RunRecord> out;
  if (project_) guarded(nullptr, [&] { out = project_->runs(); });
  return out;
}

std::vector<projects::PlanRecord> ProjectSession::plans() const {
  std::vector<projects::PlanRecord> out;
  if (project_) guarded(nullptr, [&] { out = project_->plans(); });
  return out;
}

std::vector<projects::RunMetric> ProjectSession::runMetrics(qint64 runId) const {
  std::vector<projects::RunMetric> out;
  if (project_) guarded(nullptr, [&] { out = project_->run_metrics(runId); });
  return out;
}

bool ProjectSession::store(const Graph& model, const QString& modelSource,
                           const MachineSpec& machine,
                           const std::vector<std::shared_ptr<const Plan>>& plans,
                           const QStringList& pins, const QStringList& vetoes, QString* error) {
  if (!project_) {
    if (error) *error = tr("no project is open");
    return false;
  }
  const bool ok = guarded(error, [&] {
    project_->add_model(model, modelSource.toStdString());
    project_->add_machine(machine);
    for (const auto& plan : plans)
      if (plan && !project_->find_plan(*plan)) project_->add_plan(*plan);
  });
  if (!ok || !storeDecisions(model, modelSource, pins, vetoes, error)) return false;
  emit changed();
  return true;
}

bool ProjectSession::storeDecisions(const Graph& model, const QString& modelSource,
                                    const QStringList& pins, const QStringList& vetoes,
                                    QString* error) {
  if (!project_) {
    if (error) *error = tr("no project is open");
    return false;
  }
  return guarded(error, [&] {
    const std::int64_t modelId = project_->add_model(model, modelSource.toStdString());
    use_cases::replace_choices(*project_, modelId, {toStd(pins), toStd(vetoes)});
  });
}

}  // namespace unity::views
