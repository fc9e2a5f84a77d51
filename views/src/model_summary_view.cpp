#include "unity/views/model_summary_view.h"

#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

#include "table_style.h"
#include "unity/core/pcg/graph.h"
#include "unity/views/op_count_model.h"
#include "unity/views/tensor_table_model.h"

namespace unity::views {

namespace {

// A titled pane of the splitter. The proxy lets users re-sort by clicking a header.
QWidget* tablePane(const QString& heading, QAbstractItemModel* model, QTableView* table,
                   QWidget* parent) {
  auto* pane = new QWidget(parent);
  auto* label = new QLabel(heading, pane);
  QFont bold = label->font();
  bold.setBold(true);
  label->setFont(bold);
  auto* sorted = new QSortFilterProxyModel(table);
  sorted->setSourceModel(model);
  table->setModel(sorted);
  applyReadOnlyTableStyle(table);
  auto* layout = new QVBoxLayout(pane);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(label);
  layout->addWidget(table, 1);
  return pane;
}

}  // namespace

ModelSummaryView::ModelSummaryView(QWidget* parent)
    : QWidget(parent),
      title_(new QLabel(this)),
      statistics_(new QLabel(this)),
      counts_(new OpCountModel(this)),
      tensors_(new TensorTableModel(this)),
      table_(new QTableView(this)),
      tensorTable_(new QTableView(this)) {
  title_->setObjectName("modelTitle");
  QFont titleFont = title_->font();
  titleFont.setPointSizeF(titleFont.pointSizeF() * 1.5);
  titleFont.setBold(true);
  title_->setFont(titleFont);
  title_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  statistics_->setObjectName("modelStatistics");
  statistics_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  statistics_->setWordWrap(true);

  table_->setObjectName("opCountTable");
  tensorTable_->setObjectName("tensorTable");
  auto* splitter = new QSplitter(Qt::Horizontal, this);
  splitter->setChildrenCollapsible(false);
  splitter->addWidget(tablePane(tr("Operators"), counts_, table_, splitter));
  splitter->addWidget(
      tablePane(tr("Inputs, weights and outputs"), tensors_, tensorTable_, splitter));
  splitter->setStretchFactor(0, 2);
  splitter->setStretchFactor(1, 3);

  // Default order is the models' own (counts by frequency, tensors inputs-weights-outputs); -1
  // keeps it until the user clicks a header.
  table_->sortByColumn(-1, Qt::AscendingOrder);
  tensorTable_->sortByColumn(-1, Qt::AscendingOrder);
  QHeaderView* ops = table_->horizontalHeader();
  ops->setSectionResizeMode(QHeaderView::ResizeToContents);
  ops->setSectionResizeMode(OpCountModel::TypeColumn, QHeaderView::Stretch);
  QHeaderView* tensors = tensorTable_->horizontalHeader();
  tensors->setSectionResizeMode(QHeaderView::ResizeToContents);
  tensors->setSectionResizeMode(TensorTableModel::NameColumn, QHeaderView::Stretch);

  auto* layout = new QVBoxLayout(this);
  layout->addWidget(title_);
  layout->addWidget(statistics_);
  layout->addSpacing(6);
  layout->addWidget(splitter, 1);

  clear();
}

void ModelSummaryView::setGraph(const Graph& graph, int devices) {
  qint64 compute = 0, parallel = 0, inputs = 0;
  for (const auto& [id, node] : graph.nodes()) {
    switch (op_info(node.op.type).category) {
      case OpCategory::Compute:
        ++compute;
        break;
      case OpCategory::Parallel:
        ++parallel;
        break;
      case OpCategory::Source:
        inputs += node.op.type == OpType::Input ? 1 : 0;
        break;
    }
  }
  const QLocale locale;
  // The graph holds the global batch: split over `devices` when it divides.
  QString batch = tr("batch unknown");
  if (graph.batch_size > 0 && devices > 1 && graph.batch_size % devices == 0)
    batch = tr("batch %1 (%2 per device on %3 devices)")
                .arg(locale.toString(qint64(graph.batch_size)),
                     locale.toString(qint64(graph.batch_size / devices)))
                .arg(devices);
  else if (graph.batch_size > 0 && devices > 1)
    batch =
        tr("batch %1 on %2 devices").arg(locale.toString(qint64(graph.batch_size))).arg(devices);
  else if (graph.batch_size > 0)
    batch = tr("batch %1 per device").arg(locale.toString(qint64(graph.batch_size)));
  title_->setText(graph.name.empty() ? tr("(unnamed model)") : QString::fromStdString(graph.name));
  statistics_->setText(
      tr("%1 operators (%2 compute, %3 parallel) \u00b7 %4 inputs \u00b7 %5 parameters \u00b7 "
         "%6 of weights \u00b7 %7")
          .arg(locale.toString(compute + parallel), locale.toString(compute),
               locale.toString(parallel), locale.toString(inputs),
               locale.toString(qint64(graph.parameter_count())),
               locale.formattedDataSize(graph.weight_bytes()), batch));
  counts_->setGraph(graph);
  tensors_->setGraph(graph);
  table_->setEnabled(true);
  tensorTable_->setEnabled(true);
}

void ModelSummaryView::clear() {
  title_->setText(tr("No model loaded"));
  statistics_->setText(
      tr("Open a model with File \u2192 Open Model\u2026 or choose one from the zoo."));
  counts_->clear();
  tensors_->clear();
  table_->setEnabled(false);
  tensorTable_->setEnabled(false);
}

QString ModelSummaryView::title() const { return title_->text(); }
QString ModelSummaryView::statistics() const { return statistics_->text(); }

}  // namespace unity::views
