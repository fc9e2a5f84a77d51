#pragma once
// Where two plans of one model differ, operator by operator (matched by name, which substitutions
// keep): an operator is "changed" when its type, attributes, output parallel shape or devices
// differ, and "only here" when the other plan has no operator of that name (a fused ReLU, an
// inserted Partition). The compare view marks both drawings with it.
#include <QHash>
#include <QStringList>

#include "unity/core/plan/plan.h"
#include "unity/views/pcg_scene.h"

namespace unity::views {

struct PlanDiff {
  QHash<NodeId, NodeMark> left;   // marks on the left plan's nodes
  QHash<NodeId, NodeMark> right;  // marks on the right plan's nodes
  int changed = 0;
  int onlyLeft = 0;
  int onlyRight = 0;
  QStringList lines;  // one readable line per difference, in the left plan's order then the right's
  QHash<QString, QString> lineOf;  // operator name -> its line
};

PlanDiff diffPlans(const Plan& left, const Plan& right);

}  // namespace unity::views
