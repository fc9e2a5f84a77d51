#pragma once
// One colour per operator category, shared by every view so that a parallel operator looks the same
// in the summary table, the PCG drawing and the legend (op_type.h: compute green, parallel orange).
#include <QColor>

#include "unity/core/pcg/op_type.h"

namespace unity::views {

// The strong colour: table chips, borders, legends.
inline QColor categoryColor(OpCategory category) {
  switch (category) {
    case OpCategory::Compute:
      return QColor(0x4c, 0xaf, 0x50);
    case OpCategory::Parallel:
      return QColor(0xff, 0x98, 0x00);
    case OpCategory::Source:
      return QColor(0x90, 0xa4, 0xae);
  }
  return {};
}

// The fill of a PCG node: light enough for black text (the paper's figures use the same pair).
inline QColor categoryFill(OpCategory category) {
  switch (category) {
    case OpCategory::Compute:
      return QColor(0xc5, 0xe6, 0xb8);
    case OpCategory::Parallel:
      return QColor(0xfc, 0xd5, 0x9c);
    case OpCategory::Source:
      return QColor(0xec, 0xef, 0xf1);
  }
  return {};
}

// Overlays shared by the PCG, search and compare views.
inline QColor selectionColor() { return QColor(0x1e, 0x88, 0xe5); }
inline QColor substitutedColor() { return QColor(0x8e, 0x24, 0xaa); }  // the candidate's rewrite
inline QColor newBestColor() { return QColor(0x2e, 0x7d, 0x32); }
inline QColor changedColor() { return QColor(0x7b, 0x1f, 0xa2); }   // differs in the other plan
inline QColor onlyHereColor() { return QColor(0xd3, 0x2f, 0x2f); }  // absent from the other plan

}  // namespace unity::views
