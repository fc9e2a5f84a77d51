#pragma once
// Memory per device as stacked bars: one bar per pipeline rank (a device of that rank; its
// data-parallel copies hold the same), stacked by kind (weights, gradients, optimizer state, the
// experts' weights, gradients and optimizer state together as a kind of their own, activations in
// flight, workspace: pipeline_cost.h's MemoryBreakdown), a dashed line at the
// device's capacity and a GiB axis. A run's measured bars stand beside the predicted ones. Plans
// without a breakdown (not pipelined) can show each device's total alone. Painted directly, as
// the cost breakdown bars are.
#include <QList>
#include <QRectF>
#include <QString>
#include <QStringList>
#include <QWidget>

#include <array>
#include <vector>

#include "unity/core/pipeline/pipeline_cost.h"

namespace unity::views {

class MemoryBarsChart : public QWidget {
  Q_OBJECT

 public:
  // The stacked kinds, bottom first. Weights, gradients and optimizer are the dense layers'
  // (MemoryBreakdown's less its expert shares); Experts, the three of the experts a device holds.
  enum Kind { Weights, Gradients, Optimizer, Experts, Activations, Workspace };
  static constexpr int kKinds = 6;
  static QString kindName(int kind);

  struct Bar {
    int rank = 0;  // pipeline rank (or device, for totals)
    bool measured = false;
    bool totalOnly = false;  // no breakdown: bytes[0] holds the total
    std::array<double, kKinds> bytes{};
    double total() const;
  };

  explicit MemoryBarsChart(QWidget* parent = nullptr);

  // Predicted bars per pipeline rank, and measured ones beside them when `measured` is not empty.
  void setBreakdown(const std::vector<MemoryBreakdown>& predicted,
                    const std::vector<MemoryBreakdown>& measured, double capacityBytes,
                    const QString& title);
  // One bar per device with its total only (plans without a breakdown).
  void setTotals(const std::vector<double>& perDevice, double capacityBytes, const QString& title);
  void clear(const QString& message);
  // Under each rank's bars, a second line ("layers 0-11"); empty: none.
  void setRankLabels(const QStringList& labels);

  const QList<Bar>& bars() const { return bars_; }
  double capacity() const { return capacity_; }
  bool hasMeasured() const;
  bool hasExperts() const;  // a bar with expert memory (the legend names the kind only then)
  QString title() const { return title_; }
  QString message() const { return message_; }

  // Each bar's stacked segments (kKinds per bar, bottom first) in a picture of `size`, and the
  // capacity line's height.
  QList<std::array<QRectF, kKinds>> segmentRects(const QSizeF& size) const;
  double capacityY(const QSizeF& size) const;
  void paintChart(QPainter& painter, const QSizeF& size) const;
  bool exportImage(const QString& path, QString* error) const;

  QSize sizeHint() const override { return {900, 360}; }
  QSize minimumSizeHint() const override { return {300, 160}; }

 protected:
  void paintEvent(QPaintEvent* event) override;
  void contextMenuEvent(QContextMenuEvent* event) override;

 private:
  struct Geometry {
    QRectF plot;
    double top = 1;   // bytes at the plot's top
    double slot = 0;  // width of one rank's group
    double barWidth = 0;
  };
  Geometry geometry(const QSizeF& size) const;
  int groups() const;

  QList<Bar> bars_;
  double capacity_ = 0;
  QString title_;
  QString message_;
  QStringList rankLabels_;
};

}  // namespace unity::views
