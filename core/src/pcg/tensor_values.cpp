#include "unity/core/pcg/tensor_values.h"

#include <algorithm>
#include <cstring>

#include "hashing.h"

namespace unity {

std::shared_ptr<const TensorValues> TensorValues::of_floats(std::vector<float> values) {
  std::shared_ptr<TensorValues> v(new TensorValues());
  detail::Hasher h;
  h.u64(0);
  h.bytes(values.data(), values.size() * sizeof(float));
  v->digest_ = h.value();
  v->floats_ = std::move(values);
  return v;
}

std::shared_ptr<const TensorValues> TensorValues::of_integers(std::vector<std::int64_t> values) {
  std::shared_ptr<TensorValues> v(new TensorValues());
  v->integer_ = true;
  detail::Hasher h;
  h.u64(1);
  h.bytes(values.data(), values.size() * sizeof(std::int64_t));
  v->digest_ = h.value();
  v->integers_ = std::move(values);
  return v;
}

std::int64_t TensorValues::size() const {
  return static_cast<std::int64_t>(integer_ ? integers_.size() : floats_.size());
}

bool TensorValues::operator==(const TensorValues& other) const {
  if (this == &other) return true;
  // Bitwise for floats, so that a NaN table equals itself as the digest says.
  return integer_ == other.integer_ && digest_ == other.digest_ && integers_ == other.integers_ &&
         floats_.size() == other.floats_.size() &&
         std::equal(floats_.begin(), floats_.end(), other.floats_.begin(),
                    [](float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; });
}

bool same_values(const std::shared_ptr<const TensorValues>& a,
                 const std::shared_ptr<const TensorValues>& b) {
  if (a == b) return true;
  if (!a || !b) return false;
  return *a == *b;
}

}  // namespace unity
