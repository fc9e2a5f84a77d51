#pragma once
// The verifier's theory: operator specifications in first-order logic, as in TASO, extended with
// the parallel operators of Unity (paper section 4). Tensors are an uninterpreted sort; every
// operator is an uninterpreted function of its attributes and inputs; ok(t) says a term is defined
// (its shapes infer and its replicas are read meaningfully, the evaluator's notion of defined).
//
// An axiom states lhs = rhs under a guard, universally quantified over its variables:
//   Forward: wherever lhs is defined          (instantiated on lhs terms)
//   Both:    wherever lhs or rhs is defined   (instantiated on either)
//   Joint:   wherever both are defined        (instantiated where both occur)
//   Trigger: wherever `trigger` is defined    (on trigger terms; lhs and rhs mention it)
// A fact is a formula instantiated on every term matching its trigger (ranks and degrees of defined
// applications, mostly).
// tests/rules/test_axioms.cpp checks every axiom and fact on random concrete values.
#include <string>
#include <vector>

#include "spec_expr.h"
#include "unity/core/ops/operator_definition.h"

namespace unity::rules::spec {

struct Axiom {
  enum class Mode { Forward, Both, Joint, Trigger };
  std::string name;
  Mode mode = Mode::Forward;
  E lhs;
  E rhs;
  E guard;    // may be empty: always
  E trigger;  // Trigger mode only
};

struct Fact {
  std::string name;
  E trigger;   // a term over every variable of `holds` (with trigger2, together)
  E holds;     // true for every instance
  E trigger2;  // optional second term of a multi-pattern
};

struct Theory {
  std::vector<Axiom> axioms;
  std::vector<Fact> facts;
};

const Theory& theory();

// A Concat of n inputs is the Concat of its first n - 1 and the last (n = 3..kMaxConcatInputs, in
// order): with them a rule over any number of inputs unrolls to the 2-input facts, so variadic
// rules are proved once per number of inputs. They are not part of theory(): a query gets those up
// to the largest Concat it holds, so the proofs of other rules see the same context as before.
constexpr int kMaxConcatInputs = 32;
const std::vector<Axiom>& concat_peel_axioms();
// A Concat whose axis is cut into `pieces` (each a run of whole inputs) is the Partition of the
// Concat: one axiom per number of inputs (1..kMaxConcatInputs, in order), added like the peel
// axioms to the queries that hold such a Concat.
const std::vector<Axiom>& concat_pieces_axioms();

// The axioms and facts of a unary operator registered after the first theory (a point-wise or
// along-axis operator of core/src/ops/): its shape, its commuting with the parallel operators
// (along an axis: on the other dims) and, point-wise, with data movement. They are not part of
// theory(): a query gets them when its rule names the operator, so that adding an operator leaves
// every other proof as it was. Empty for the operators theory() covers, but for those of
// declared_with_first_theory().
const Theory& operator_theory(OpType op);
// Operators of the first theory with axioms added since (MultiHeadAttention's query-sequence
// split): given to the queries that name them like an added operator's, while their functions
// stay declared with the first theory, so that the proofs of other rules see what they saw.
bool declared_with_first_theory(OpType op);
// The unary element-wise operators of the first theory, whose axioms every proof has.
const std::vector<OpType>& first_theory_unary_ops();
// The operators whose axioms the query's terms call for (operator_theory), in enum order.
std::vector<OpType> operators_named(const std::vector<const E*>& terms);

// Pieces of the theory, one file each.
void add_parallel_axioms(Theory& t);
void add_compute_axioms(Theory& t);
void add_algebraic_axioms(Theory& t);
void add_typing_facts(Theory& t);
// One operator's part of each piece, for operator_theory.
void add_shape_keeping_facts(Theory& t, OpType op);
void add_unary_compute_axioms(Theory& t, OpType op);
void add_unary_layout_axioms(Theory& t, OpType op);
// Resize's facts and axioms (axioms_resize.cpp).
void add_resize_theory(Theory& t);
// ConvTranspose's facts and axioms (axioms_conv_transpose.cpp).
void add_conv_transpose_theory(Theory& t);
// The Experts operator's (axioms_experts.cpp).
void add_experts_theory(Theory& t);
// LatentAttention's (axioms_latent_attention.cpp).
void add_latent_attention_theory(Theory& t);
// MultiHeadAttention split along the query sequence (axioms_context_parallel.cpp).
void add_attention_context_parallel_theory(Theory& t);
// TopK, GatherElements, ScatterElements, OneHot, ArgMax, ArgMin (axioms_index.cpp).
// Pad's facts and axioms (axioms_pad.cpp).
void add_pad_theory(Theory& t);
void add_gather_nd_theory(Theory& t);
// Reduction's facts and axioms (axioms_reduction.cpp).
void add_reduction_theory(Theory& t);
void add_index_axioms(Theory& t, OpType op);
// Compare, Logical, Where, Cast (axioms_mask.cpp).
void add_mask_axioms(Theory& t, OpType op);
// An operator with a slice layout (axioms_slice.cpp).
void add_slice_axioms(Theory& t, OpType op, const SliceLayout& layout);
// Arithmetic (axioms_arithmetic.cpp): the mask operators' axioms and a split of a dim the second
// operand broadcasts along.
void add_arithmetic_theory(Theory& t);

// Builders shared by those files.
E P(const E& k, const E& d, const E& x);  // Partition
E C(const E& k, const E& d, const E& x);  // Combine
E R(const E& d, const E& x);              // Replicate
E Red(const E& d, const E& x);            // Reduce
E AR(const E& d, const E& x);             // AllReduce
E Pipe(const E& k, const E& d, const E& x);
E Bat(const E& k, const E& d, const E& x);
// An application of `op` whose attributes are variables named prefix + slot name, with the given
// arguments; the attribute variables are returned in `attrs` (slot name -> variable).
E with_attr_vars(OpType op, const std::vector<E>& args, const std::string& prefix,
                 std::map<std::string, E>& attrs, int output = 0);

}  // namespace unity::rules::spec
