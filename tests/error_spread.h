#pragma once
// The spread of predicted against published figures over a table of published runs, and the check
// that a device family's stated record (published_accuracy.h) still holds over it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "unity/core/cost/published_accuracy.h"

namespace unity::published_runs {

struct ErrorSpread {
  int within_10_percent = 0;
  double lowest = 1e9, highest = -1e9;  // predicted / published - 1
  void add(double predicted, double published) {
    const double error = predicted / published - 1;
    within_10_percent += std::abs(error) <= 0.10;
    lowest = std::min(lowest, error);
    highest = std::max(highest, error);
  }
};

// The record states the spread to the tenth of a percent it prints.
inline void expect_record_holds(const PublishedAccuracy& record, const ErrorSpread& spread) {
  EXPECT_EQ(record.within_10_percent, spread.within_10_percent);
  EXPECT_NEAR(record.lowest_error, spread.lowest, 0.0005);
  EXPECT_NEAR(record.highest_error, spread.highest, 0.0005);
}

}  // namespace unity::published_runs
