#pragma once
// One colour per operator category, shared by every view so that a parallel operator looks the same in
// the summary table, the PCG drawing and the legend (op_type.h: compute green, parallel orange).
#include <QColor>

#include "unity/core/op_type.h"

namespace unity::views {

inline QColor categoryColor(OpCategory category) {
  switch (category) {
    case OpCategory::Compute: return QColor(0x4c, 0xaf, 0x50);
    case OpCategory::Parallel: return QColor(0xff, 0x98, 0x00);
    case OpCategory::Source: return QColor(0x90, 0xa4, 0xae);
  }
  return {};
}

}  // namespace unity::views
