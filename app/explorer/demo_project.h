#pragma once
// The demo project a first launch opens: resources/demo/mnist-mlp-demo.unity, built into the
// program as a Qt resource (libunity_views) and unpacked to a writable file, since the explorer
// records into the project it has open. A user's copy lives in the application data folder and is
// unpacked once (their own searches and runs stay in it); --screenshot runs get a temporary copy
// that goes away with this object.
#include <QString>

#include <memory>

class QTemporaryDir;

namespace unity::explorer {

class DemoProject {
 public:
  explicit DemoProject(bool temporary);
  ~DemoProject();
  QString path() const { return path_; }    // empty when it could not be unpacked
  QString error() const { return error_; }  // why

  static QString resource();  // the embedded original

 private:
  std::unique_ptr<QTemporaryDir> dir_;
  QString path_;
  QString error_;
};

}  // namespace unity::explorer
