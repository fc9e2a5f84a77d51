#pragma once
// The first thing a user sees after opening a model: its name, size (operators, parameters, weight
// bytes, per-device batch), its operator mix and its input, weight and output tensors, so they can
// check that the right model loaded before spending time on a search.
#include <QWidget>

class QLabel;
class QTableView;

namespace unity {
class Graph;
}

namespace unity::views {

class OpCountModel;
class TensorTableModel;

class ModelSummaryView : public QWidget {
  Q_OBJECT

 public:
  explicit ModelSummaryView(QWidget* parent = nullptr);

  // Shows the graph's summary; keeps no reference to the graph. `devices`: how many devices the
  // graph's (global) batch is split over.
  void setGraph(const Graph& graph, int devices = 1);
  void clear();

  QString title() const;       // the model name, or a hint when nothing is loaded
  QString statistics() const;  // the line under the title
  OpCountModel* opCountModel() const { return counts_; }
  TensorTableModel* tensorModel() const { return tensors_; }
  QTableView* table() const { return table_; }  // the operator counts
  QTableView* tensorTable() const { return tensorTable_; }

 private:
  QLabel* title_;
  QLabel* statistics_;
  OpCountModel* counts_;
  TensorTableModel* tensors_;
  QTableView* table_;
  QTableView* tensorTable_;
};

}  // namespace unity::views
