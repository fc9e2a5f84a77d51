#pragma once
// Where the topology view draws a machine (laid out here rather than by Graphviz: a cluster is a
// grid, not a DAG): nodes in a grid under the network switch, islands side by side inside a node,
// devices in a row inside an island, and one line per physical link class between them. Plain
// geometry, so tests can check it and the view only paints it.
#include <QList>
#include <QPainterPath>
#include <QPointF>
#include <QRectF>
#include <QString>

#include <set>

#include "unity/core/machine/machine_spec.h"

namespace unity::views {

struct TopologyDevice {
  int index = 0;
  int node = 0;
  int island = 0;  // global island index
  QRectF rect;
};

struct TopologyLink {
  enum class Kind { IntraIsland, InterIsland, InterNode };
  Kind kind = Kind::IntraIsland;
  // IntraIsland: two devices, or one device and b = -1 for a device's port on an island switch.
  // InterIsland: two global islands of one node. InterNode: a = the node, b = -1 (its uplink).
  int a = -1;
  int b = -1;
  QPainterPath path;
};

struct TopologyBox {
  int index = 0;  // node index, or global island index
  QRectF rect;
  QString title;
};

struct TopologyLayout {
  QList<TopologyDevice> devices;
  QList<TopologyLink> links;
  QList<TopologyBox> nodes;
  QList<TopologyBox> islands;
  QRectF networkSwitch;          // empty for a single node
  QList<QRectF> islandSwitches;  // per island whose devices share a switch (empty rect: pairwise)
  QRectF bounds;

  // Indices into `links` that traffic between devices a and b crosses (empty when a == b).
  std::set<int> route(const MachineSpec& machine, int a, int b) const;
};

// `aspect`: width / height of the room the drawing is shown in; nodes wrap into the number of
// columns that fills it best, a multiple of `columnStep` (all the nodes when fewer): a plan whose
// groups span k nodes puts whole groups in each row.
TopologyLayout layOutTopology(const MachineSpec& machine, double aspect = 1.4, int columnStep = 1);

}  // namespace unity::views
