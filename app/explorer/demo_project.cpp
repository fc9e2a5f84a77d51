#include "demo_project.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QStandardPaths>
#include <QTemporaryDir>

namespace unity::explorer {

QString DemoProject::resource() { return QStringLiteral(":/unity/demo/mnist-mlp-demo.unity"); }

DemoProject::DemoProject(bool temporary) {
  QString folder;
  if (temporary) {
    dir_ = std::make_unique<QTemporaryDir>();
    if (!dir_->isValid()) {
      error_ = QObject::tr("cannot create a temporary folder");
      return;
    }
    folder = dir_->path();
  } else {
    folder = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation);
    if (folder.isEmpty() || !QDir().mkpath(folder)) {
      error_ = QObject::tr("cannot create the application data folder '%1'").arg(folder);
      return;
    }
  }
  const QString target = QDir(folder).filePath(QStringLiteral("mnist-mlp-demo.unity"));
  if (!QFileInfo::exists(target)) {
    if (!QFile::exists(resource())) {
      error_ = QObject::tr("this build has no demo project");
      return;
    }
    if (!QFile::copy(resource(), target)) {
      error_ = QObject::tr("cannot write '%1'").arg(target);
      return;
    }
    // Resources are read-only, and so is their copy: the explorer writes into its project.
    QFile::setPermissions(
        target, QFile::ReadOwner | QFile::WriteOwner | QFile::ReadGroup | QFile::ReadOther);
  }
  path_ = target;
}

DemoProject::~DemoProject() = default;

}  // namespace unity::explorer
