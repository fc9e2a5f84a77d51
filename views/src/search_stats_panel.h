#pragma once
// The search's numbers under the chart (best, start, step, candidates and their rate, queue size,
// elapsed time, the current candidate). Painted rather than built from labels: it changes up to 30
// times a second, and a label's new text would re-lay out the whole search view each time.
#include <QString>
#include <QWidget>

#include "unity/views/search_runner.h"

namespace unity::views {

class SearchStatsPanel : public QWidget {
 public:
  explicit SearchStatsPanel(QWidget* parent = nullptr);
  void setSnapshot(const SearchSnapshot& snapshot);
  void clear();
  QString text() const;  // what it shows, as plain lines (for tests and accessibility)
  QSize sizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  QList<std::pair<QString, QString>> rows_;
  QString current_;
};

}  // namespace unity::views
