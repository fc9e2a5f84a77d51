#pragma once
// Content signatures of the parts of a series-parallel decomposition, so that the mapping DP can
// share solved subproblems between candidate PCGs whose node ids differ (paper 5.2, "cache of the
// selected machine mappings for all subgraphs"). Two parts get equal signatures when they hold the
// same operators on the same shapes wired the same way, attached to boundary operators of the same
// kind in the same places; their boundary operators are listed in a canonical order so that the
// views fixed on them can be compared.
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "unity/core/mapping/sp_decomposition.h"

namespace unity::detail {

struct PartSignature {
  std::uint64_t content = 0;
  std::vector<NodeId> boundary;              // the part's boundary operators in canonical order
  std::vector<std::uint64_t> boundary_keys;  // their signatures, same order (equal keys: symmetric)
};

// Each placed operator's own content: its operator, output shapes, and the shapes and kinds (placed
// operator, weight, data input) of what it reads. Equal hashes: equal costs on equal views.
std::unordered_map<NodeId, std::uint64_t> operator_signatures(const PlacementGraph& pg);

std::vector<PartSignature> part_signatures(const SpDecomposition& sp, const PlacementGraph& pg,
                                           const std::unordered_map<NodeId, std::uint64_t>& local);

}  // namespace unity::detail
