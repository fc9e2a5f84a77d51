#pragma once
// Enumerates every PCG of a family up to its limits (depth-first, each graph once: graphs equal up
// to the order their operators were added are one), evaluates it on the family's inputs and records
// the graphs with one output under their fingerprint: a hash of the output's parallel shape (the
// degree of every dim and the replicas), replica layout and values.
#include <cstdint>
#include <string>
#include <vector>

#include "families.h"
#include "unity/core/pcg/operator.h"

namespace unity::rules::gen {

struct GenOp {
  std::uint16_t tmpl = 0;  // index into Enumeration::templates
  std::uint8_t arity = 0;
  std::uint8_t in[7] = {0, 0, 0, 0,
                        0, 0, 0};  // tensor indices: inputs first, then operator outputs
};

struct GenGraph {
  std::vector<GenOp> ops;
  int output = 0;  // tensor index of the single output
  std::uint64_t fingerprint = 0;
  std::uint32_t inputs_used = 0;  // bit mask over the family's inputs
  int compute_ops = 0;
};

struct Enumeration {
  const Family* family = nullptr;
  std::vector<Operator> templates;  // compute templates (one per arity), then parallel ones
  std::vector<int> template_outputs;
  std::vector<GenGraph> graphs;
  std::int64_t visited = 0;  // graphs evaluated, single-output or not
};

Enumeration enumerate(const Family& family, int max_ops);

// Per tensor of a graph (inputs first): its node hash, and its value recomputed from the family's
// inputs.
std::vector<std::uint64_t> tensor_hashes(const Enumeration& e, const GenGraph& g);
std::vector<ParallelValue> tensor_values(const Enumeration& e, const GenGraph& g);
std::string describe(const Enumeration& e, const GenGraph& g);

}  // namespace unity::rules::gen
