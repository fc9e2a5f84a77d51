#pragma once
// How the views write numbers, shapes and device sets, so every view reads the same way.
#include <QString>

#include <vector>

#include "unity/core/shapes/parallel_tensor_shape.h"

namespace unity::views {

// "0.085 ms", "12.3 ms", "1.25 s"
QString formatMs(double milliseconds);
// "2.3 MiB", "11.53 GiB", "512 B"
QString formatBytes(double bytes);
// "1.2 GB/s", "25 GB/s" (decimal units, as link data sheets give them)
QString formatBandwidth(double bytesPerSecond);
// "[64/12, 256, 56, 56]", with " r2" for replicas and the type unless it is float32: the edge
// labels.
QString formatShape(const ParallelTensorShape& shape);
// "0–11", "0, 2, 4", "3" (sorted, runs collapsed)
QString formatDevices(std::vector<int> devices);

}  // namespace unity::views
