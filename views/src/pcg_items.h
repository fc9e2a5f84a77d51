#pragma once
// The QGraphicsItems of a PcgScene. They paint themselves from a DisplayNode/LayoutEdge and ask the
// scene for overlays (selection, halo, diff mark), so overlays never rebuild items.
#include <QGraphicsItem>
#include <QPainterPath>
#include <QStaticText>

#include "unity/views/graph_layout.h"
#include "unity/views/pcg_display.h"

namespace unity::views {

class PcgScene;

class PcgNodeItem : public QGraphicsItem {
 public:
  PcgNodeItem(const DisplayNode& node, const QRectF& rect, const DisplayFonts& fonts);
  const DisplayNode& node() const { return node_; }
  QRectF rect() const { return rect_; }
  QRectF boundingRect() const override;
  QPainterPath shape() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

 protected:
  void mousePressEvent(QGraphicsSceneMouseEvent* event) override;
  void mouseDoubleClickEvent(QGraphicsSceneMouseEvent* event) override;

 private:
  PcgScene* pcgScene() const;
  DisplayNode node_;
  QRectF rect_;
  // Laid out once: painting many nodes is mostly drawing their text.
  QStaticText title_;
  QStaticText subtitle_;
  QStaticText badge_;
  QFont titleFont_;
  QFont subtitleFont_;
  QFont badgeFont_;
};

class PcgEdgeItem : public QGraphicsItem {
 public:
  PcgEdgeItem(const DisplayEdge& edge, const LayoutEdge& layout, const QFont& labelFont);
  const DisplayEdge& edge() const { return edge_; }
  void setEmphasised(bool on);
  bool emphasised() const { return emphasised_; }
  QRectF boundingRect() const override { return bounds_; }
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

 private:
  DisplayEdge edge_;
  QPainterPath path_;
  QPolygonF arrow_;
  QRectF labelRect_;
  QStaticText label_;
  QFont font_;
  QRectF bounds_;
  bool emphasised_ = false;
};

class PcgClusterItem : public QGraphicsItem {
 public:
  PcgClusterItem(int block, const QString& title, const QRectF& rect, const QFont& font);
  int block() const { return block_; }
  QRectF headerRect() const;
  QRectF boundingRect() const override { return rect_.adjusted(-1, -1, 1, 1); }
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

 protected:
  void mousePressEvent(QGraphicsSceneMouseEvent* event) override;

 private:
  int block_;
  QString title_;
  QRectF rect_;
  QFont font_;
};

}  // namespace unity::views
