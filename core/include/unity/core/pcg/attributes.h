#pragma once
// Operator attributes as plain data (name -> value) so that rules, JSON and the hash treat every
// operator the same way. Typed getters throw ShapeError naming the missing or mistyped attribute.
#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace unity {

using AttrValue = std::variant<std::int64_t, double, std::string, std::vector<std::int64_t>>;

class Attributes {
 public:
  Attributes() = default;
  Attributes(std::initializer_list<std::pair<const std::string, AttrValue>> init) : values_(init) {}

  void set(const std::string& name, AttrValue value) { values_[name] = std::move(value); }
  void erase(const std::string& name) { values_.erase(name); }
  bool has(const std::string& name) const { return values_.count(name) != 0; }

  std::int64_t get_int(const std::string& name) const;
  std::int64_t get_int(const std::string& name, std::int64_t fallback) const;
  double get_double(const std::string& name) const;
  double get_double(const std::string& name, double fallback) const;
  const std::string& get_string(const std::string& name) const;
  std::string get_string(const std::string& name, const std::string& fallback) const;
  const std::vector<std::int64_t>& get_ints(const std::string& name) const;
  std::vector<std::int64_t> get_ints(const std::string& name,
                                     const std::vector<std::int64_t>& fallback) const;

  const std::map<std::string, AttrValue>& items() const { return values_; }
  bool operator==(const Attributes&) const = default;

 private:
  std::map<std::string, AttrValue> values_;
};

std::string to_string(const AttrValue& value);

}  // namespace unity
