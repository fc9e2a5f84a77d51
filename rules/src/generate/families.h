#pragma once
// The enumeration is split into families: each names its input tensors (with fixed random values,
// and the partitioned, replicated and partial-sum variants of them that rules starting from a
// parallel tensor need), the compute operators it combines, and how many compute and parallel
// operators a graph may hold. Within a family every PCG up to the limits is enumerated; families
// keep the number of operator combinations (and the run time) bounded, the way TASO enumerates its
// operator set.
#include <string>
#include <vector>

#include "unity/core/pcg/operator.h"
#include "unity/rules/parallel_value.h"

namespace unity::rules::gen {

struct FamilyInput {
  std::string name;  // unique in the family: "x", "x.p0", "x.r"
  std::string base;  // the rule input it becomes: "x"
  ParallelValue value;
};

// A compute operator of a fixed skeleton: a compute template (index into Family::compute) and its
// arguments, family input names or "#i" for the output of skeleton operator i.
struct SkeletonOp {
  int tmpl = 0;
  std::vector<std::string> args;
};

struct Family {
  std::string name;
  std::vector<FamilyInput> inputs;
  std::vector<Operator> compute;  // templates, attributes fixed
  int max_compute = 1;
  int max_parallel = 3;
  int max_chain = 2;      // consecutive parallel operators on one edge
  bool temporal = false;  // Pipeline and Batch too
  std::vector<int> dims;  // dims parallel operators may use (empty: every dim)
  // Which family inputs (by name, variants included) may feed each argument slot of the compute
  // operators (empty: any tensor), and slots that read the same tensor as an earlier one (-1:
  // free): self-attention reads one tensor as query, key and value.
  std::vector<std::vector<std::string>> slot_inputs;
  std::vector<int> tied;
  int extra_ops = 0;  // operators beyond --max-ops (an operator reading many weights)
  // Blocks: when set, the compute operators are exactly one of these skeletons, in order, and only
  // the parallel operators around them are enumerated (a Transformer MLP block split as Megatron-LM
  // does is one rule, where the search would need several steps through worse plans; a fused and an
  // unfused form of one computation pair up).
  std::vector<std::vector<SkeletonOp>> skeletons;
};

// Every family, limited to graphs of at most `max_ops` operators.
std::vector<Family> families(int max_ops, std::uint64_t seed);

}  // namespace unity::rules::gen
