#include "unity/views/layout_service.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QProcess>
#include <QStandardPaths>

#include <graphviz/gvc.h>

#include "thread_priority.h"

namespace unity::views {

namespace {
constexpr int kChildPollMs = 20;         // how often a waiting child process checks for a stop
constexpr int kChildTimeoutMs = 300000;  // a layout that takes five minutes is stuck
}  // namespace

// The GUI drops a layout when a newer one replaces it, and must not free it itself while this
// thread may be allocating (see thread_priority.h). So a dropped layout goes on a lock-free list,
// which this thread empties before each job; what is left goes with the last owner of the list.
class LayoutService::Graveyard {
 public:
  ~Graveyard() { clear(); }
  void bury(const GraphLayout* layout) {
    auto* grave = new Grave{layout, top_.load(std::memory_order_relaxed)};
    while (!top_.compare_exchange_weak(grave->next, grave, std::memory_order_release,
                                       std::memory_order_relaxed)) {
    }
  }
  void clear() {
    for (Grave* g = top_.exchange(nullptr, std::memory_order_acquire); g;) {
      Grave* next = g->next;
      delete g->layout;
      delete g;
      g = next;
    }
  }

 private:
  struct Grave {
    const GraphLayout* layout;
    Grave* next;
  };
  std::atomic<Grave*> top_{nullptr};
};

LayoutService::LayoutService(QObject* parent)
    : QObject(parent),
      dotProgram_(QStandardPaths::findExecutable(QStringLiteral("dot"))),
      graveyard_(std::make_shared<Graveyard>()) {
  qRegisterMetaType<GraphLayoutPtr>();
  thread_ = std::thread([this] {
    lowerCurrentThreadPriority(5);
    run();
  });
}

LayoutService::~LayoutService() {
  {
    std::lock_guard lock(mutex_);
    quit_ = true;
    pending_.clear();
    if (hasRunning_) running_.stop->store(true);
  }
  wake_.notify_all();
  thread_.join();
}

LayoutService* LayoutService::shared() {
  static LayoutService* service = [] {
    auto* s = new LayoutService(QCoreApplication::instance());
    return s;
  }();
  return service;
}

std::mutex& LayoutService::graphvizMutex() {
  static std::mutex m;
  return m;
}

quint64 LayoutService::request(const QObject* client, const QByteArray& dot, int nodeCount) {
  Job job;
  job.client = client;
  job.dot = dot;
  job.nodeCount = nodeCount;
  quint64 dropped = 0;
  {
    std::lock_guard lock(mutex_);
    job.ticket = nextTicket_++;
    for (auto it = pending_.begin(); it != pending_.end(); ++it) {
      if (it->client == client) {
        dropped = it->ticket;
        pending_.erase(it);
        break;
      }
    }
    if (hasRunning_ && running_.client == client) running_.stop->store(true);
    pending_.push_back(job);
  }
  wake_.notify_all();
  if (dropped) emit layoutCancelled(dropped);
  return job.ticket;
}

void LayoutService::cancel(const QObject* client) {
  quint64 dropped = 0;
  {
    std::lock_guard lock(mutex_);
    for (auto it = pending_.begin(); it != pending_.end(); ++it) {
      if (it->client == client) {
        dropped = it->ticket;
        pending_.erase(it);
        break;
      }
    }
    if (hasRunning_ && running_.client == client) running_.stop->store(true);
  }
  if (dropped) emit layoutCancelled(dropped);
}

bool LayoutService::busy(const QObject* client) const {
  std::lock_guard lock(mutex_);
  if (hasRunning_ && running_.client == client && !running_.stop->load()) return true;
  for (const Job& j : pending_)
    if (j.client == client) return true;
  return false;
}

bool LayoutService::isRunning(const QObject* client) const {
  std::lock_guard lock(mutex_);
  return hasRunning_ && running_.client == client;
}

void LayoutService::run() {
  for (;;) {
    Job job;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return quit_ || !pending_.empty(); });
      if (quit_) return;
      job = pending_.front();
      pending_.pop_front();
      running_ = job;
      hasRunning_ = true;
    }
    graveyard_->clear();
    layOut(job);
    {
      std::lock_guard lock(mutex_);
      hasRunning_ = false;
      running_ = Job();
    }
  }
}

void LayoutService::layOut(const Job& job) {
  QElapsedTimer timer;
  timer.start();
  QByteArray json;
  QString error;
  const bool inProcess = dotProgram_.isEmpty() || job.nodeCount <= processThreshold_.load();
  const bool ok =
      inProcess ? layOutInProcess(job, &json, &error) : layOutInChild(job, &json, &error);
  ++layoutsRun_;
  if (job.stop->load()) {
    emit layoutCancelled(job.ticket);
    return;
  }
  if (!ok) {
    emit layoutFailed(job.ticket, error);
    return;
  }
  std::shared_ptr<GraphLayout> layout(
      new GraphLayout, [graveyard = graveyard_](GraphLayout* l) { graveyard->bury(l); });
  if (!parseGraphvizJson(json, layout.get(), &error)) {
    emit layoutFailed(job.ticket, error);
    return;
  }
  layout->seconds = double(timer.nsecsElapsed()) * 1e-9;
  layout->ranInProcess = inProcess;
  emit layoutReady(job.ticket, std::move(layout));
}

bool LayoutService::layOutInProcess(const Job& job, QByteArray* json, QString* error) {
  std::lock_guard graphviz(graphvizMutex());
  GVC_t* gvc = gvContext();
  Agraph_t* graph = agmemread(job.dot.constData());
  if (!graph) {
    gvFreeContext(gvc);
    *error = QStringLiteral("Graphviz could not read the graph");
    return false;
  }
  char* data = nullptr;
  unsigned int length = 0;
  int rc = gvLayout(gvc, graph, "dot");
  if (rc == 0) rc = gvRenderData(gvc, graph, "json0", &data, &length);
  if (data) *json = QByteArray(data, qsizetype(length));
  if (data) gvFreeRenderData(data);
  gvFreeLayout(gvc, graph);
  agclose(graph);
  gvFreeContext(gvc);
  if (rc != 0 || json->isEmpty()) {
    *error = QStringLiteral("Graphviz failed to lay out the graph");
    return false;
  }
  return true;
}

bool LayoutService::layOutInChild(const Job& job, QByteArray* json, QString* error) {
  // The child is a separate process, so it needs no lock; it is killed as soon as the job stops.
  QProcess dot;
  dot.start(dotProgram_, {QStringLiteral("-Tjson0")});
  if (!dot.waitForStarted()) {
    *error = QStringLiteral("cannot start %1: %2").arg(dotProgram_, dot.errorString());
    return false;
  }
  dot.write(job.dot);
  dot.closeWriteChannel();
  QElapsedTimer timer;
  timer.start();
  while (!dot.waitForFinished(kChildPollMs)) {
    json->append(dot.readAllStandardOutput());  // keep the pipe drained
    if (job.stop->load() || quit_ || timer.elapsed() > kChildTimeoutMs) {
      dot.kill();
      dot.waitForFinished();
      if (!job.stop->load())
        *error = QStringLiteral("dot took longer than %1 s").arg(kChildTimeoutMs / 1000);
      return false;
    }
  }
  json->append(dot.readAllStandardOutput());
  if (dot.exitStatus() != QProcess::NormalExit || dot.exitCode() != 0) {
    *error = QStringLiteral("dot failed: %1")
                 .arg(QString::fromLocal8Bit(dot.readAllStandardError()).trimmed());
    return false;
  }
  return true;
}

}  // namespace unity::views
