#include "unity/views/plan_diff.h"

#include <map>

#include "unity/views/display_format.h"

namespace unity::views {

namespace {

std::map<std::string, NodeId> byName(const Graph& g) {
  std::map<std::string, NodeId> out;
  for (NodeId id : g.topological_order()) out.emplace(g.node(id).op.name, id);  // first of a name
  return out;
}

const MachineView* viewOf(const Plan& p, NodeId id) {
  const auto it = p.mapping.views.find(id);
  return it == p.mapping.views.end() ? nullptr : &it->second;
}

QString typeName(OpType t) {
  const auto s = to_string(t);
  return QString::fromLatin1(s.data(), qsizetype(s.size()));
}

}  // namespace

PlanDiff diffPlans(const Plan& left, const Plan& right) {
  PlanDiff d;
  const auto leftNames = byName(left.pcg);
  const auto rightNames = byName(right.pcg);
  for (NodeId id : left.pcg.topological_order()) {
    const Node& a = left.pcg.node(id);
    const QString name = QString::fromStdString(a.op.name);
    const auto other = rightNames.find(a.op.name);
    if (other == rightNames.end()) {
      d.left.insert(id, NodeMark::OnlyHere);
      ++d.onlyLeft;
      const QString line =
          QObject::tr("%1 (%2): only in the left plan").arg(name, typeName(a.op.type));
      d.lines << line;
      d.lineOf.insert(name, line);
      continue;
    }
    if (leftNames.at(a.op.name) != id) continue;  // a repeated name: compared once
    const Node& b = right.pcg.node(other->second);
    QStringList what;
    if (a.op.type != b.op.type)
      what << QObject::tr("%1 → %2").arg(typeName(a.op.type), typeName(b.op.type));
    else if (!(a.op.attrs == b.op.attrs))
      what << QObject::tr("attributes");
    if (!a.outputs.empty() && !b.outputs.empty() && !(a.outputs[0] == b.outputs[0]))
      what << QObject::tr("%1 → %2").arg(formatShape(a.outputs[0]), formatShape(b.outputs[0]));
    const MachineView* va = viewOf(left, id);
    const MachineView* vb = viewOf(right, other->second);
    if (va && vb && va->devices() != vb->devices())
      what << QObject::tr("devices %1 → %2")
                  .arg(formatDevices(va->devices()), formatDevices(vb->devices()));
    if (what.isEmpty()) continue;
    d.left.insert(id, NodeMark::Changed);
    d.right.insert(other->second, NodeMark::Changed);
    ++d.changed;
    const QString line = QStringLiteral("%1: %2").arg(name, what.join(QStringLiteral("; ")));
    d.lines << line;
    d.lineOf.insert(name, line);
  }
  for (NodeId id : right.pcg.topological_order()) {
    const Node& b = right.pcg.node(id);
    if (leftNames.count(b.op.name)) continue;
    d.right.insert(id, NodeMark::OnlyHere);
    ++d.onlyRight;
    const QString name = QString::fromStdString(b.op.name);
    const QString line =
        QObject::tr("%1 (%2): only in the right plan").arg(name, typeName(b.op.type));
    d.lines << line;
    d.lineOf.insert(name, line);
  }
  return d;
}

}  // namespace unity::views
