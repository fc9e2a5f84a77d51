#pragma once
// The PCG view: the chosen plan's parallel computation graph (or the model before any plan), its
// legend and headline numbers, and the property panel of the selected operator. It follows the
// document: new plans appear in the chooser, the fastest is shown until the user picks one, and the
// selection is shared with the other views.
#include <QWidget>

class QComboBox;
class QLabel;

namespace unity::views {

class ExplorerDocument;
class GraphView;
class LayoutService;
class PropertyPanel;

class PcgView : public QWidget {
  Q_OBJECT

 public:
  explicit PcgView(ExplorerDocument* document, QWidget* parent = nullptr,
                   LayoutService* service = nullptr);

  GraphView* graphView() const { return graph_; }
  PropertyPanel* propertyPanel() const { return properties_; }
  // The plan shown: a mode of the document, or empty for the model itself.
  QString shownMode() const { return shownMode_; }
  void showMode(const QString& mode);  // remembered as the user's choice
  QString headline() const;
  bool busy() const;

 signals:
  void busyChanged(bool busy);

 private:
  void rebuildChooser();
  void display(const QString& mode);
  void updateProperties();
  void followDocumentSelection(const QString& name);

  ExplorerDocument* document_;
  GraphView* graph_;
  PropertyPanel* properties_;
  QComboBox* chooser_;
  QLabel* headline_;
  QString shownMode_;
  bool userChose_ = false;
  bool updatingChooser_ = false;
};

}  // namespace unity::views
