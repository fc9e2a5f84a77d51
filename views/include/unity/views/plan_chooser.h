#pragma once
// The "Plan:" box of the pipeline views (timeline, memory): the document's plans with their
// iteration times, the fastest pipelined plan first chosen, and the user's choice kept while that
// plan exists (as the topology view does).
#include <QComboBox>

#include <memory>

#include "unity/core/plan/plan.h"

namespace unity::views {

class ExplorerDocument;

class PlanChooser : public QComboBox {
  Q_OBJECT

 public:
  explicit PlanChooser(ExplorerDocument* document, QWidget* parent = nullptr);

  QString mode() const { return mode_; }
  std::shared_ptr<const Plan> plan() const;
  void choose(const QString& mode);  // as the user would

 signals:
  void planChosen(const QString& mode);  // also when the chosen mode's plan was replaced

 private:
  void rebuild();

  ExplorerDocument* document_;
  QString mode_;
  std::shared_ptr<const Plan> shown_;
  bool userChose_ = false;
  bool updating_ = false;
};

}  // namespace unity::views
