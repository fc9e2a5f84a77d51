// Context parallelism in the theory (operator_theory: asserted only in proofs of rules that name
// MultiHeadAttention, so that every other proof keeps its context). The query sequence (dim 1 of
// q [N, Sq, E]) splits with the keys, the values and the projections copied: each block of
// queries attends to every key, so the output is the same split of the whole attention. The
// function symbol is the whole operator; that a block's mask and rotary embeddings take its
// queries' absolute positions is the kernels' side of this axiom (the executor offsets each task
// by its block; the evaluator computes on whole tensors).
#include "theory.h"

namespace unity::rules::spec {

void add_attention_context_parallel_theory(Theory& th) {
  std::vector<E> in;
  for (const char* n : {"q", "k", "v", "wq", "wk", "wv", "wo"}) in.push_back(tvar(n));
  const E kq = ivar("kq"), d = ivar("d");
  std::map<std::string, E> attrs;
  auto mha = [&](const std::vector<E>& args) {
    return with_attr_vars(OpType::MultiHeadAttention, args, "a_", attrs);
  };
  std::vector<E> split = {P(kq, d, in[0])};
  for (std::size_t i = 1; i < in.size(); ++i) split.push_back(R(d, in[i]));
  th.axioms.push_back({"attention_query_sequence_partition", Axiom::Mode::Forward, mha(split),
                       P(kq, d, mha(in)), norm(kq, rank(in[0])) == 1, E()});
}

}  // namespace unity::rules::spec
