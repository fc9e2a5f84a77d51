#pragma once
// The one thread that runs Graphviz (DESIGN.md, GUI lessons). Graphviz is not thread-safe, even
// with one context per thread, so every Graphviz call of the process goes through this thread
// behind one mutex, and the GUI only ever sees plain GraphLayout values.
//
// Each client (a view) has at most one request in flight: a new request replaces the client's
// pending one and stops its running one (latest request wins), cancel() stops it without a
// replacement. Small graphs are laid out in-process with libgvc; graphs above processThreshold()
// nodes run `dot -Tjson0` in a child process, which cancel kills at once (an in-process layout
// cannot be interrupted: its result is dropped instead).
#include <QByteArray>
#include <QObject>
#include <QString>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "unity/views/graph_layout.h"

namespace unity::views {

class LayoutService : public QObject {
  Q_OBJECT

 public:
  explicit LayoutService(QObject* parent = nullptr);
  ~LayoutService() override;

  // The service every view uses unless given another; lives until the application quits.
  static LayoutService* shared();
  // The lock around every Graphviz call in this process.
  static std::mutex& graphvizMutex();

  // Queues a layout of `dot` (DOT text) with `nodeCount` nodes for `client`. Returns the ticket
  // that layoutReady/layoutFailed/layoutCancelled carry.
  quint64 request(const QObject* client, const QByteArray& dot, int nodeCount);
  // Drops the client's pending request and stops its running one (layoutCancelled follows).
  void cancel(const QObject* client);
  bool busy(const QObject* client) const;
  // Whether the client's request is being laid out now (not merely queued).
  bool isRunning(const QObject* client) const;

  int processThreshold() const { return processThreshold_.load(); }
  void setProcessThreshold(int nodes) { processThreshold_.store(nodes); }
  // The `dot` program used for big graphs; empty when none is installed (then every layout runs
  // in-process).
  QString dotProgram() const { return dotProgram_; }
  std::int64_t layoutsRun() const { return layoutsRun_.load(); }

 signals:
  void layoutReady(quint64 ticket, unity::views::GraphLayoutPtr layout);
  void layoutFailed(quint64 ticket, const QString& message);
  void layoutCancelled(quint64 ticket);

 private:
  struct Job {
    quint64 ticket = 0;
    const QObject* client = nullptr;
    QByteArray dot;
    int nodeCount = 0;
    std::shared_ptr<std::atomic<bool>> stop = std::make_shared<std::atomic<bool>>(false);
  };

  // Layouts freed by the thread that built them (see layout_service.cpp).
  class Graveyard;

  void run();
  void layOut(const Job& job);
  bool layOutInProcess(const Job& job, QByteArray* json, QString* error);
  bool layOutInChild(const Job& job, QByteArray* json, QString* error);

  QString dotProgram_;
  std::atomic<int> processThreshold_{400};
  std::atomic<std::int64_t> layoutsRun_{0};
  std::shared_ptr<Graveyard> graveyard_;

  mutable std::mutex mutex_;  // guards everything below
  std::condition_variable wake_;
  std::deque<Job> pending_;
  Job running_;
  bool hasRunning_ = false;
  std::atomic<bool> quit_{false};
  quint64 nextTicket_ = 1;
  std::thread thread_;
};

}  // namespace unity::views

Q_DECLARE_METATYPE(unity::views::GraphLayoutPtr)
