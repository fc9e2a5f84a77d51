#include "unity/views/property_panel.h"

#include <QHeaderView>
#include <QLabel>
#include <QTreeWidget>
#include <QVBoxLayout>

#include <QLocale>

#include <map>

#include "category_colors.h"
#include "unity/core/ops/operator_definition.h"
#include "unity/views/display_format.h"
#include "unity/views/pcg_display.h"

namespace unity::views {

namespace {

QString qs(std::string_view s) { return QString::fromUtf8(s.data(), qsizetype(s.size())); }

const OpCost* findCost(const Plan* plan, NodeId id) {
  if (!plan) return nullptr;
  for (const OpCost& c : plan->mapping.per_op)
    if (c.node == id) return &c;
  return nullptr;
}

QString deviceNoun(const Plan* plan) {
  if (plan && !plan->machine.device_types.empty() && plan->machine.device_types[0].kind == "cpu")
    return QObject::tr("ranks");
  return QObject::tr("GPUs");
}

}  // namespace

PropertyPanel::PropertyPanel(QWidget* parent)
    : QWidget(parent),
      title_(new QLabel(this)),
      subtitle_(new QLabel(this)),
      tree_(new QTreeWidget(this)) {
  setObjectName(QStringLiteral("propertyPanel"));
  QFont f = title_->font();
  f.setBold(true);
  f.setPointSizeF(f.pointSizeF() * 1.2);
  title_->setFont(f);
  title_->setWordWrap(true);
  title_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  subtitle_->setWordWrap(true);
  subtitle_->setStyleSheet(QStringLiteral("color: #546e7a;"));
  tree_->setColumnCount(2);
  tree_->setHeaderLabels({tr("Property"), tr("Value")});
  tree_->header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
  tree_->setRootIsDecorated(false);
  tree_->setAlternatingRowColors(true);
  tree_->setWordWrap(true);
  tree_->setTextElideMode(
      Qt::ElideNone);  // values wrap: shapes and device lists must be read whole
  tree_->header()->setStretchLastSection(true);
  tree_->setSelectionMode(QAbstractItemView::NoSelection);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);
  layout->addWidget(title_);
  layout->addWidget(subtitle_);
  layout->addWidget(tree_, 1);
  clear();
}

void PropertyPanel::clear() {
  title_->setText(tr("Nothing selected"));
  subtitle_->setText(tr("Click an operator to see its shapes, devices and costs."));
  tree_->clear();
}

QString PropertyPanel::title() const { return title_->text(); }

QTreeWidgetItem* PropertyPanel::section(const QString& name) {
  auto* item = new QTreeWidgetItem(tree_, {name});
  QFont f = item->font(0);
  f.setBold(true);
  item->setFont(0, f);
  item->setFirstColumnSpanned(true);
  item->setBackground(0, QColor(0xec, 0xef, 0xf1));
  return item;
}

void PropertyPanel::add(QTreeWidgetItem* parent, const QString& property, const QString& value,
                        const QString& tip) {
  Q_UNUSED(parent);
  auto* item = new QTreeWidgetItem(tree_, {property, value});
  item->setToolTip(1, tip.isEmpty() ? value : tip);
}

QString PropertyPanel::value(const QString& property) const {
  for (int i = 0; i < tree_->topLevelItemCount(); ++i)
    if (tree_->topLevelItem(i)->text(0) == property) return tree_->topLevelItem(i)->text(1);
  return {};
}

void PropertyPanel::showNode(const Graph& g, NodeId id, const Plan* plan) {
  tree_->clear();
  if (!g.contains(id)) {
    clear();
    return;
  }
  const Node& n = g.node(id);
  const OpInfo& info = op_info(n.op.type);
  title_->setText(QString::fromStdString(n.op.name));
  static const char* categories[] = {"source", "compute operator", "parallel operator"};
  subtitle_->setText(tr("%1 · %2").arg(operatorSubtitle(n), tr(categories[int(info.category)])));

  QTreeWidgetItem* op = section(tr("Operator"));
  add(op, tr("Type"), qs(info.name));
  const OperatorDefinition& definition = operator_definition(n.op.type);
  if (!definition.summary.empty()) add(op, tr("Computes"), qs(definition.summary));
  add(op, tr("Node id"), QString::number(id));
  for (const auto& [key, value] : n.op.attrs.items())
    add(op, QString::fromStdString(key), QString::fromStdString(to_string(value)));
  // A point-wise operator's parameters that the node leaves at their defaults.
  if (definition.pointwise)
    for (const PointwiseParameter& p : definition.pointwise->parameters)
      if (p.default_value && !n.op.attrs.has(std::string(p.name)))
        add(op, qs(p.name), tr("%1 (default)").arg(*p.default_value));

  QTreeWidgetItem* inputs = section(tr("Inputs"));
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const TensorRef in = n.inputs[i];
    const Node& producer = g.node(in.node);
    add(inputs, QString::fromStdString(producer.op.name), formatShape(g.shape(in)),
        QString::fromStdString(g.shape(in).to_string()));
  }
  if (n.inputs.empty()) add(inputs, tr("(none)"), QString());
  QTreeWidgetItem* outputs = section(tr("Outputs"));
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    const ParallelTensorShape& s = n.outputs[i];
    add(outputs, n.outputs.size() == 1 ? tr("Shape") : tr("Shape %1").arg(i), formatShape(s),
        QString::fromStdString(s.to_string()));
    add(outputs, tr("Pieces"),
        tr("%1 × %2").arg(s.num_pieces()).arg(formatBytes(double(s.piece_bytes()))),
        tr("%1 pieces of %2 elements").arg(s.num_pieces()).arg(s.piece_elements()));
  }
  QStringList consumers;
  for (const Use& u : g.uses(id)) consumers << QString::fromStdString(g.node(u.node).op.name);
  consumers.removeDuplicates();
  add(outputs, tr("Read by"),
      consumers.isEmpty() ? tr("(nobody: a result)") : consumers.join(QStringLiteral(", ")));

  QTreeWidgetItem* placement = section(tr("Placement and cost"));
  if (!plan) {
    add(placement, tr("Plan"), tr("No plan: pick a machine and optimise to see devices and costs"));
    return;
  }
  const OpCost* cost = findCost(plan, id);
  if (!cost) {
    add(placement, tr("Devices"),
        tr("Where its readers run (%1)").arg(consumers.join(QStringLiteral(", "))),
        tr("Weights and inputs are not placed on their own: they live on the devices of the "
           "operators "
           "that read them"));
    if (n.op.type == OpType::Weight && !n.outputs.empty())
      add(placement, tr("Weight size"), formatBytes(double(n.outputs[0].bytes())));
    if (n.op.type == OpType::Constant && !n.outputs.empty())
      add(placement, tr("Constant size"), formatBytes(double(n.outputs[0].bytes())),
          tr("Values the model holds and does not train (positions, masks, tables)"));
    return;
  }
  const std::vector<int> devices = cost->view.devices();
  add(placement, tr("Devices"),
      tr("%1 %2 (%3 tasks)")
          .arg(deviceNoun(plan), formatDevices(devices))
          .arg(cost->view.num_tasks()),
      QString::fromStdString(cost->view.to_string()));
  add(placement, tr("Machine view"), QString::fromStdString(cost->view.to_string()));
  add(placement, tr("Forward"), tr("%1 per task").arg(formatMs(cost->forward * 1e3)));
  add(placement, tr("Backward"), tr("%1 per task").arg(formatMs(cost->backward * 1e3)));
  add(placement, tr("Computation"), formatMs(cost->own.compute * 1e3),
      tr("Forward, backward and weight update of every task, slowest device"));
  const double commMs = (cost->own.communication + cost->edges.communication) * 1e3;
  const double commBytes = cost->own.bytes + cost->edges.bytes;
  add(placement, tr("Communication"),
      tr("%1 (%2 sent)").arg(formatMs(commMs), formatBytes(commBytes)),
      tr("Weight synchronisation %1, inputs moved %2")
          .arg(formatMs(cost->own.communication * 1e3), formatMs(cost->edges.communication * 1e3)));
  add(placement, tr("Memory"), tr("%1 on its busiest device").arg(formatBytes(cost->memory)));
}

void PropertyPanel::showBlock(const Graph& g, const Block& b, const Plan* plan) {
  tree_->clear();
  title_->setText(b.name);
  subtitle_->setText(
      tr("Block of %1 operators · double-click it to expand").arg(b.computeOps + b.parallelOps));
  QTreeWidgetItem* s = section(tr("Block"));
  add(s, tr("Compute operators"), QString::number(b.computeOps));
  add(s, tr("Parallel operators"), QString::number(b.parallelOps));
  add(s, tr("Weights and inputs"), QString::number(b.sourceOps));
  std::map<std::string, int> types;
  std::int64_t parameters = 0;
  for (NodeId id : b.members) {
    const Node& n = g.node(id);
    if (n.op.type == OpType::Weight && !n.outputs.empty())
      parameters += n.outputs[0].num_elements();
    if (!is_source_op(n.op.type)) ++types[std::string(to_string(n.op.type))];
  }
  QStringList mix;
  for (const auto& [type, count] : types)
    mix << QStringLiteral("%1 %2").arg(count).arg(QString::fromStdString(type));
  add(s, tr("Operators"), mix.join(QStringLiteral(", ")));
  add(s, tr("Parameters"), QLocale().toString(qint64(parameters)));
  if (!plan) return;
  double compute = 0, comm = 0, bytes = 0, memory = 0;
  std::vector<int> devices;
  for (NodeId id : b.members)
    if (const OpCost* c = findCost(plan, id)) {
      compute += c->own.compute;
      comm += c->own.communication + c->edges.communication;
      bytes += c->own.bytes + c->edges.bytes;
      memory += c->memory;
      for (int d : c->view.devices()) devices.push_back(d);
    }
  QTreeWidgetItem* p = section(tr("Placement and cost"));
  add(p, tr("Devices"), tr("%1 %2").arg(deviceNoun(plan), formatDevices(devices)));
  add(p, tr("Computation"), formatMs(compute * 1e3), tr("Sum over the block's operators"));
  add(p, tr("Communication"), tr("%1 (%2 sent)").arg(formatMs(comm * 1e3), formatBytes(bytes)));
  add(p, tr("Memory"), tr("%1 (sum of its operators' busiest devices)").arg(formatBytes(memory)));
}

}  // namespace unity::views
