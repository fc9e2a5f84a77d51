#include "unity/core/shapes/replica_layout.h"

#include <fmt/format.h>

namespace unity {

ReplicaLayout ReplicaLayout::copies(int n) { return ReplicaLayout{}.with_inner({n, false}); }
ReplicaLayout ReplicaLayout::partials(int n) { return ReplicaLayout{}.with_inner({n, true}); }

int ReplicaLayout::size() const {
  int n = 1;
  for (const auto& f : factors_) n *= f.size;
  return n;
}

bool ReplicaLayout::has_partial() const {
  for (const auto& f : factors_)
    if (f.partial) return true;
  return false;
}

int ReplicaLayout::partial_count() const {
  int n = 1;
  for (const auto& f : factors_)
    if (f.partial) n *= f.size;
  return n;
}

ReplicaLayout ReplicaLayout::with_inner(ReplicaFactor f) const {
  ReplicaLayout out = *this;
  if (f.size <= 1) return out;
  if (!out.factors_.empty() && out.factors_.back().partial == f.partial)
    out.factors_.back().size *= f.size;
  else
    out.factors_.push_back(f);
  return out;
}

ReplicaLayout ReplicaLayout::with_outer(ReplicaFactor f) const {
  ReplicaLayout out;
  out = out.with_inner(f);
  for (const auto& g : factors_) out = out.with_inner(g);
  return out;
}

std::optional<std::pair<ReplicaLayout, ReplicaLayout>> ReplicaLayout::split_inner(int k) const {
  ReplicaLayout outer, inner;
  int need = k;
  for (int i = static_cast<int>(factors_.size()) - 1; i >= 0; --i) {
    const ReplicaFactor& f = factors_[i];
    if (need == 1) {
      outer = outer.with_outer(f);
    } else if (f.size <= need) {
      if (need % f.size != 0) return std::nullopt;
      inner = inner.with_outer(f);
      need /= f.size;
    } else {
      if (f.size % need != 0) return std::nullopt;
      inner = inner.with_outer({need, f.partial});
      outer = outer.with_outer({f.size / need, f.partial});
      need = 1;
    }
  }
  if (need != 1) return std::nullopt;
  return std::make_pair(outer, inner);
}

int ReplicaLayout::partial_key(int r) const {
  // Digits from the innermost factor outwards; keep those of partial factors.
  int key = 0, scale = 1;
  for (int i = static_cast<int>(factors_.size()) - 1; i >= 0; --i) {
    const int digit = r % factors_[i].size;
    r /= factors_[i].size;
    if (factors_[i].partial) {
      key += digit * scale;
      scale *= factors_[i].size;
    }
  }
  return key;
}

int ReplicaLayout::copy_key(int r) const {
  int key = 0, scale = 1;
  for (int i = static_cast<int>(factors_.size()) - 1; i >= 0; --i) {
    const int digit = r % factors_[i].size;
    r /= factors_[i].size;
    if (!factors_[i].partial) {
      key += digit * scale;
      scale *= factors_[i].size;
    }
  }
  return key;
}

std::string ReplicaLayout::to_string() const {
  if (factors_.empty()) return "1";
  std::string s;
  for (const auto& f : factors_)
    s += fmt::format("{}{} {}", s.empty() ? "" : " x ", f.size, f.partial ? "partial" : "copies");
  return s;
}

}  // namespace unity
