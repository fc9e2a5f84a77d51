#include "unity/views/topology_layout.h"

#include <QObject>

#include <algorithm>
#include <cmath>

namespace unity::views {

namespace {
constexpr double kDeviceW = 96;
constexpr double kDeviceH = 64;
constexpr double kDeviceGap = 26;
constexpr double kIslandPad = 12;
constexpr double kIslandHeader = 22;
constexpr double kIslandGap = 56;
constexpr double kNodePad = 14;
constexpr double kNodeHeader = 26;
constexpr double kNodeGapX = 48;
constexpr double kNodeGapY = 48;
constexpr double kSwitchH = 40;
constexpr double kSwitchGap = 60;
constexpr double kArcRise = 16;
constexpr int kPairwiseUpTo = 3;  // larger islands are drawn with a switch (NVSwitch, PCIe)
constexpr int kWrapAbove = 16;    // a switched island of more devices is drawn in rows of
constexpr int kDevicesPerRow = 12;
}  // namespace

std::set<int> TopologyLayout::route(const MachineSpec& m, int a, int b) const {
  std::set<int> out;
  if (a == b || a < 0 || b < 0) return out;
  const int na = m.node_of(a), nb = m.node_of(b);
  const int ia = m.island_of(a), ib = m.island_of(b);
  for (int i = 0; i < links.size(); ++i) {
    const TopologyLink& l = links[i];
    switch (l.kind) {
      case TopologyLink::Kind::IntraIsland:
        if (ia != ib) break;
        if (l.b < 0 ? (l.a == a || l.a == b) : ((l.a == a && l.b == b) || (l.a == b && l.b == a)))
          out.insert(i);
        break;
      case TopologyLink::Kind::InterIsland:
        // Islands of a node sit in a chain: every hop between the two islands.
        if (na == nb && ia != ib && std::min(l.a, l.b) >= std::min(ia, ib) &&
            std::max(l.a, l.b) <= std::max(ia, ib))
          out.insert(i);
        break;
      case TopologyLink::Kind::InterNode:
        if (na != nb && (l.a == na || l.a == nb)) out.insert(i);
        break;
    }
  }
  // Leaving a node starts and ends at the devices' islands: their switch ports count too.
  if (na != nb) {
    for (int i = 0; i < links.size(); ++i) {
      const TopologyLink& l = links[i];
      if (l.kind == TopologyLink::Kind::IntraIsland && l.b < 0 && (l.a == a || l.a == b))
        out.insert(i);
    }
  }
  return out;
}

TopologyLayout layOutTopology(const MachineSpec& m, double aspect, int columnStep) {
  TopologyLayout t;
  const int perIsland = m.island_size();
  const int islandsPerNode = m.islands_per_node();
  const bool switched = perIsland > kPairwiseUpTo;
  // A wide NVLink domain (GB200 NVL72: 72 GPUs on one switch) wraps into rows, each device's port
  // running down the gap at its right to the switch below, so that no port crosses a device.
  const int perRow = switched && perIsland > kWrapAbove ? kDevicesPerRow : perIsland;
  const int rows = (perIsland + perRow - 1) / perRow;
  const double islandW = perRow * kDeviceW + (perRow - 1) * kDeviceGap + 2 * kIslandPad;
  const double devicesH = rows * kDeviceH + (rows - 1) * kDeviceGap;
  const double islandH = kIslandHeader + devicesH + 2 * kIslandPad + (switched ? 34 : kArcRise);
  const double nodeW = islandsPerNode * islandW + (islandsPerNode - 1) * kIslandGap + 2 * kNodePad;
  const double nodeH = kNodeHeader + islandH + 2 * kNodePad;
  // As many node columns as make the drawing's shape closest to the room it is shown in.
  int columns = 1;
  double bestScale = 0;
  for (int c = 1; c <= m.num_nodes; ++c) {
    if (columnStep > 1 && c % columnStep != 0 && c != m.num_nodes) continue;
    const int r = (m.num_nodes + c - 1) / c;
    const double w = c * nodeW + (c - 1) * kNodeGapX;
    const double h =
        (m.num_nodes > 1 ? kSwitchH + kSwitchGap : 0) + r * nodeH + (r - 1) * kNodeGapY;
    const double scale = std::min(aspect / w, 1.0 / h);
    if (scale > bestScale * 1.0001) {
      bestScale = scale;
      columns = c;
    }
  }
  const double top = m.num_nodes > 1 ? kSwitchH + kSwitchGap : 0;
  const double gridW = columns * nodeW + (columns - 1) * kNodeGapX;

  // The switch spans the grid above it; each node's uplink leaves its left side and climbs the gap
  // beside it, so no line crosses another node.
  const double switchLeft = -kNodeGapX / 2 - 12;
  if (m.num_nodes > 1) t.networkSwitch = QRectF(switchLeft, 0, gridW - switchLeft, kSwitchH);
  for (int n = 0; n < m.num_nodes; ++n) {
    const int row = n / columns, col = n % columns;
    const QRectF nodeRect(col * (nodeW + kNodeGapX), top + row * (nodeH + kNodeGapY), nodeW, nodeH);
    t.nodes.append({n, nodeRect, QObject::tr("Node %1").arg(n)});
    if (m.num_nodes > 1) {
      TopologyLink up;
      up.kind = TopologyLink::Kind::InterNode;
      up.a = n;
      const double x = nodeRect.left() - kNodeGapX / 2 + std::min(row, 6) * 4.0;
      up.path.moveTo(nodeRect.left(), nodeRect.top() + kNodeHeader / 2 + 4);
      up.path.lineTo(x, nodeRect.top() + kNodeHeader / 2 + 4);
      up.path.lineTo(x, t.networkSwitch.bottom());
      t.links.append(up);
    }
    for (int i = 0; i < islandsPerNode; ++i) {
      const int island = n * islandsPerNode + i;
      const QRectF islandRect(nodeRect.left() + kNodePad + i * (islandW + kIslandGap),
                              nodeRect.top() + kNodeHeader + kNodePad, islandW, islandH);
      t.islands.append(
          {island, islandRect, islandsPerNode > 1 ? QObject::tr("Island %1").arg(i) : QString()});
      const double deviceTop =
          islandRect.top() + kIslandHeader + (switched ? kIslandPad : kArcRise + 4);
      QList<int> members;
      for (int k = 0; k < perIsland; ++k) {
        const int d = n * m.devices_per_node + i * perIsland + k;
        if (d >= m.num_devices()) break;
        t.devices.append(
            {d, n, island,
             QRectF(islandRect.left() + kIslandPad + (k % perRow) * (kDeviceW + kDeviceGap),
                    deviceTop + (k / perRow) * (kDeviceH + kDeviceGap), kDeviceW, kDeviceH)});
        members.append(d);
      }
      if (switched) {
        const QRectF sw(islandRect.left() + kIslandPad, deviceTop + devicesH + 12,
                        islandW - 2 * kIslandPad, 10);
        t.islandSwitches.append(sw);
        for (int d : members) {
          TopologyLink port;
          port.kind = TopologyLink::Kind::IntraIsland;
          port.a = d;
          const QRectF r = t.devices[d].rect;
          if (rows == 1) {
            port.path.moveTo(r.center().x(), r.bottom());
            port.path.lineTo(r.center().x(), sw.top());
          } else {
            const double gapX = r.right() + kDeviceGap / 2;
            port.path.moveTo(r.right(), r.center().y());
            port.path.lineTo(gapX, r.center().y());
            port.path.lineTo(gapX, sw.top());
          }
          t.links.append(port);
        }
      } else {
        t.islandSwitches.append(QRectF());
        for (int x = 0; x < members.size(); ++x)
          for (int y = x + 1; y < members.size(); ++y) {
            TopologyLink l;
            l.kind = TopologyLink::Kind::IntraIsland;
            l.a = members[x];
            l.b = members[y];
            const QRectF ra = t.devices[members[x]].rect, rb = t.devices[members[y]].rect;
            if (y == x + 1) {
              l.path.moveTo(ra.right(), ra.center().y());
              l.path.lineTo(rb.left(), rb.center().y());
            } else {  // not neighbours: an arc over the devices between them
              const QPointF p(ra.center().x(), ra.top()), q(rb.center().x(), rb.top());
              const double rise = kArcRise * (y - x - 1) + 2;
              l.path.moveTo(p);
              l.path.cubicTo(p + QPointF(0, -rise), q + QPointF(0, -rise), q);
            }
            t.links.append(l);
          }
      }
      if (i > 0) {
        TopologyLink x;
        x.kind = TopologyLink::Kind::InterIsland;
        x.a = island - 1;
        x.b = island;
        const QRectF prev = t.islands[t.islands.size() - 2].rect;
        x.path.moveTo(prev.right(), prev.center().y());
        x.path.lineTo(islandRect.left(), islandRect.center().y());
        t.links.append(x);
      }
    }
  }
  QRectF bounds = t.networkSwitch;
  for (const TopologyBox& b : t.nodes) bounds = bounds.united(b.rect);
  t.bounds = bounds.adjusted(-20, -20, 20, 20);
  return t;
}

}  // namespace unity::views
