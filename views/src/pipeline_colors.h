#pragma once
// Colours of the pipeline pictures, shared by the timeline, the memory bars and the topology view
// so that "forward", "weights" or "stage 3" look the same everywhere.
#include <QColor>

#include <array>

namespace unity::views {

// Forward passes blue, backward orange (told apart by people who do not see red and green); the
// odd chunks of an interleaved schedule a shade darker (subtle: the pass kind must stay clear).
inline QColor forwardColor(int chunk) {
  const QColor base(0x1e, 0x88, 0xe5);
  return chunk % 2 ? base.darker(115) : base;
}
inline QColor backwardColor(int chunk) {
  const QColor base(0xff, 0xa7, 0x26);
  return chunk % 2 ? base.darker(110) : base;
}

// The kinds of a device's memory, in the order the bars stack them (pipeline_cost.h's
// MemoryBreakdown): weights, gradients, optimizer state, experts, activations, workspace.
inline const std::array<QColor, 6>& memoryKindColors() {
  static const std::array<QColor, 6> colors = {
      QColor(0x5c, 0x6b, 0xc0),  // weights: indigo
      QColor(0x26, 0xa6, 0x9a),  // gradients: teal
      QColor(0xab, 0x47, 0xbc),  // optimizer state: purple
      QColor(0xfd, 0xd8, 0x35),  // experts: yellow, as the expert colouring of the topology
      QColor(0xff, 0x8a, 0x65),  // activations: deep orange
      QColor(0xbd, 0xbd, 0xbd),  // workspace: grey
  };
  return colors;
}

// One colour per pipeline stage: a qualitative palette (ColorBrewer Set3, darkened for contrast
// with white text-free device boxes); stages beyond twelve reuse it.
inline QColor stageColor(int stage) {
  static const std::array<QColor, 12> colors = {
      QColor(0x8d, 0xd3, 0xc7), QColor(0xff, 0xff, 0xb3), QColor(0xbe, 0xba, 0xda),
      QColor(0xfb, 0x80, 0x72), QColor(0x80, 0xb1, 0xd3), QColor(0xfd, 0xb4, 0x62),
      QColor(0xb3, 0xde, 0x69), QColor(0xfc, 0xcd, 0xe5), QColor(0xd9, 0xd9, 0xd9),
      QColor(0xbc, 0x80, 0xbd), QColor(0xcc, 0xeb, 0xc5), QColor(0xff, 0xed, 0x6f)};
  return colors[size_t(stage) % colors.size()];
}

}  // namespace unity::views
