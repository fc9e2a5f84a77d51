#pragma once
// The run view: launching a training run of the selected plan and charting measured against
// predicted iteration times arrives with the executor (issue 8, phase 2). Until then it says so and
// shows the plan a run would use, never invented numbers.
#include <QWidget>

class QLabel;

namespace unity::views {

class ExplorerDocument;

class RunView : public QWidget {
  Q_OBJECT

 public:
  explicit RunView(ExplorerDocument* document, QWidget* parent = nullptr);
  QString text() const;

 private:
  void refresh();
  ExplorerDocument* document_;
  QLabel* label_;
};

}  // namespace unity::views
