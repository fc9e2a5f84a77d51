#pragma once
// The executor's name for core's replica layout (copies and partial sums of a tensor's replicas).
#include "unity/core/shapes/replica_layout.h"

namespace unity::executor {

using unity::ReplicaFactor;
using unity::ReplicaLayout;

}  // namespace unity::executor
