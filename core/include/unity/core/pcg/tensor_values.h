#pragma once
// The values of a Constant node: a tensor the model computes from nothing it trains (positions,
// masks, identity grids, DFT matrices, index lists). Held behind a shared pointer because the
// search copies a graph for every candidate; two value sets are the same when their contents are.
#include <cstdint>
#include <memory>
#include <vector>

namespace unity {

class TensorValues {
 public:
  static std::shared_ptr<const TensorValues> of_floats(std::vector<float> values);
  static std::shared_ptr<const TensorValues> of_integers(std::vector<std::int64_t> values);

  // Integer and boolean tensors hold int64 values (bool as 0/1), floating tensors float32.
  bool is_integer() const { return integer_; }
  std::int64_t size() const;
  const std::vector<float>& floats() const { return floats_; }
  const std::vector<std::int64_t>& integers() const { return integers_; }
  // A hash of the contents, for the structural hash of a graph.
  std::uint64_t digest() const { return digest_; }

  bool operator==(const TensorValues& other) const;

 private:
  TensorValues() = default;
  bool integer_ = false;
  std::vector<float> floats_;
  std::vector<std::int64_t> integers_;
  std::uint64_t digest_ = 0;
};

// Null equals null; otherwise the contents decide.
bool same_values(const std::shared_ptr<const TensorValues>& a,
                 const std::shared_ptr<const TensorValues>& b);

}  // namespace unity
