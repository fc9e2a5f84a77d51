// Linear, MatMul, BatchMatMul and MultiHeadAttention. These share one parallel scheme: sample-like
// dims pass their degrees through, the output-feature degree requires the activation to be
// replicated, and a partitioned reduction dim leaves partial sums (output replica degree) for a
// later Reduce.
#include "shape_rules.h"

namespace unity::shape_rules {
namespace {

Shapes infer_linear(const Operator& op, const Shapes& in) {
  const auto& x = in[0];
  const auto& w = in[1];
  check_activation(op);
  expect_min_rank(x, 1, "input 0 (x)");
  expect_floating(x, "input 0 (x)");
  expect_rank(w, 2, "input 1 (weight)");
  const int r = x.rank();
  const std::int64_t out = op.attrs.get_int("out_features");
  expect_positive(out, "out_features");
  expect_size(w, 0, x.dims[r - 1].size, "input 1 (weight [in, out])");
  expect_size(w, 1, out, "input 1 (weight [in, out])");

  const int d_in = x.dims[r - 1].degree;
  const int d_out = w.dims[1].degree;
  const int d_sample = degree_product(x, 0, r - 1);
  expect_degree(w, 0, d_in, "input 1 (weight)", "reduction dim must match the input's last dim");
  expect_replica(x, d_out, "input 0 (x)", "each output-channel partition reads the whole input");
  expect_replica(w, d_sample, "input 1 (weight)",
                 "each sample partition needs its own copy of the weight");
  if (in.size() == 3) {
    const auto& b = in[2];
    expect_rank(b, 1, "input 2 (bias)");
    expect_size(b, 0, out, "input 2 (bias)");
    expect_degree(b, 0, d_out, "input 2 (bias)", "must match the output-channel degree");
    expect_replica(b, d_sample * d_in, "input 2 (bias)", "one copy per sample and reduction task");
  }
  ParallelTensorShape y = x;
  y.dims[r - 1] = {out, d_out};
  y.replica = d_in;
  return {y};
}

// MatMul: a [b..., m, k] x b [k, n] (shared, like a weight) or [b..., k, n] (batched).
Shapes infer_matmul(const Operator& op, const Shapes& in, bool require_batched) {
  const auto& a = in[0];
  const auto& b = in[1];
  expect_min_rank(a, 2, "input 0 (a)");
  expect_min_rank(b, 2, "input 1 (b)");
  expect_floating(a, "input 0 (a)");
  const int ra = a.rank();
  const int rb = b.rank();
  const bool shared = rb == 2 && ra > 2;
  if (require_batched && (ra != rb || ra < 3))
    fail("{} needs inputs of equal rank >= 3, got {} and {}", to_string(op.type), a.to_string(),
         b.to_string());
  if (!shared && ra != rb)
    fail("inputs must have equal rank or b must be 2-D, got {} and {}", a.to_string(),
         b.to_string());
  const auto& k_a = a.dims[ra - 1];
  const auto& k_b = b.dims[rb - 2];
  if (k_a.size != k_b.size)
    fail("inner dimensions differ: a {} and b {}", a.to_string(), b.to_string());
  if (k_a.degree != k_b.degree)
    fail("reduction dim has degree {} in a but {} in b", k_a.degree, k_b.degree);
  const int d_m = a.dims[ra - 2].degree;
  const int d_n = b.dims[rb - 1].degree;
  int d_batch = 1;
  if (!shared) {
    for (int i = 0; i < ra - 2; ++i) {
      if (a.dims[i] != b.dims[i])
        fail("batch dim {} differs: a {} and b {}", i, a.to_string(), b.to_string());
    }
  } else {
    d_batch = degree_product(a, 0, ra - 2);
  }
  expect_replica(a, d_n, "input 0 (a)", "each column partition of b reads all of a");
  expect_replica(b, d_m * d_batch, "input 1 (b)", "each row/batch partition of a reads all of b");
  ParallelTensorShape y = a;
  y.dims[ra - 1] = b.dims[rb - 1];
  y.replica = k_a.degree;
  return {y};
}

// q [N, Sq, E], k and v [N, Sk, E]; with H = "num_heads", G = "num_kv_heads" (grouped-query
// attention, default H: each key/value head serves H / G query heads) and D = "head_dim" (each
// head's size, default E / H, which then must divide): w_q [E, H * D], w_k/w_v [E, G * D], w_o
// [H * D, E]. The output is [N, Sq, E] whatever D is. Heads are partitioned through the weights:
// w_q/w_k/w_v split their output dim, w_o its input dim, which leaves partial sums in the output.
// Context parallelism splits the query sequence (dim 1 of input 0, degree d_s): each task attends
// its block of queries to every key, so the key, the value and the weights are read whole by every
// block (one more replica factor d_s each) and the output is partitioned like the query, not
// summed. The executor masks and rotates each block at its absolute positions.
// "rotary", "causal" and "fused" (0/1: one kernel that never writes the scores to memory,
// FlashAttention-style) change no shape; nor does "window" (a causal attention's sliding window:
// each query attends to itself and the window - 1 keys before it; 0: the whole sequence).
Shapes infer_attention(const Operator& op, const Shapes& in) {
  const std::int64_t heads = op.attrs.get_int("num_heads");
  expect_positive(heads, "num_heads");
  // The planner's context-parallel shard of an attention (task_work.cpp); 1 everywhere else.
  expect_positive(op.attrs.get_int("context_parallel", 1), "context_parallel");
  const std::int64_t kv_heads = op.attrs.get_int("num_kv_heads", heads);
  expect_positive(kv_heads, "num_kv_heads");
  if (heads % kv_heads != 0)
    fail("num_heads {} is not a multiple of num_kv_heads {}", heads, kv_heads);
  for (const char* flag : {"rotary", "causal", "fused"}) {
    const std::int64_t v = op.attrs.get_int(flag, 0);
    if (v != 0 && v != 1) fail("attribute '{}' must be 0 or 1, got {}", flag, v);
  }
  if (const std::int64_t window = op.attrs.get_int("window", 0); window != 0) {
    expect_positive(window, "window");
    if (op.attrs.get_int("causal", 0) == 0)
      fail("a sliding window ({} keys) needs a causal attention (causal = 1)", window);
  }
  const char* names[] = {"input 0 (query)", "input 1 (key)", "input 2 (value)"};
  for (int i = 0; i < 3; ++i) {
    expect_rank(in[i], 3, names[i]);
    expect_floating(in[i], names[i]);
  }
  const auto& q = in[0];
  const std::int64_t e = q.dims[2].size;
  std::int64_t head_dim = 0;
  if (op.attrs.has("head_dim")) {
    head_dim = op.attrs.get_int("head_dim");
    expect_positive(head_dim, "head_dim");
  } else if (e % heads != 0) {
    fail("embedding size {} is not divisible by num_heads {} (set head_dim for another head size)",
         e, heads);
  } else {
    head_dim = e / heads;
  }
  if (op.attrs.get_int("rotary", 0) != 0 && head_dim % 2 != 0)
    fail("rotary embeddings rotate pairs of each head's elements: head size {} must be even",
         head_dim);
  if (in[1].sizes() != in[2].sizes())
    fail("key {} and value {} differ", in[1].to_string(), in[2].to_string());
  if (in[1].dims[0].size != q.dims[0].size || in[1].dims[2].size != e)
    fail("key {} does not match query {}", in[1].to_string(), q.to_string());

  const char* wnames[] = {
      "input 3 (w_q [E, num_heads x head_dim])", "input 4 (w_k [E, num_kv_heads x head_dim])",
      "input 5 (w_v [E, num_kv_heads x head_dim])", "input 6 (w_o [num_heads x head_dim, E])"};
  const std::int64_t q_width = heads * head_dim, kv_width = kv_heads * head_dim;
  for (int i = 3; i < 7; ++i) expect_rank(in[i], 2, wnames[i - 3]);
  for (int i = 3; i < 6; ++i) {
    expect_size(in[i], 0, e, wnames[i - 3]);
    expect_size(in[i], 1, i == 3 ? q_width : kv_width, wnames[i - 3]);
  }
  expect_size(in[6], 0, q_width, wnames[3]);
  expect_size(in[6], 1, e, wnames[3]);
  const int d_heads = in[3].dims[1].degree;
  const int d_n = q.dims[0].degree;
  const int d_s = q.dims[1].degree;  // the query sequence's blocks (context parallelism)
  if (heads % d_heads != 0) fail("head degree {} does not divide num_heads {}", d_heads, heads);
  if (kv_heads % d_heads != 0)
    fail("head degree {} does not divide num_kv_heads {}", d_heads, kv_heads);
  for (int i = 0; i < 3; ++i) {
    expect_degree(in[i], 0, d_n, names[i], "query, key and value share the sample degree");
    if (i > 0) expect_degree(in[i], 1, 1, names[i], "attention reads the whole sequence");
    expect_degree(in[i], 2, 1, names[i], "heads are split through the weights");
    expect_replica(in[i], i == 0 ? d_heads : d_heads * d_s, names[i],
                   i == 0 || d_s == 1
                       ? "each head partition reads the whole input"
                       : "each head partition and query block reads the whole input");
  }
  const char* weight_copies =
      d_s == 1 ? "one copy per sample partition" : "one copy per sample partition and query block";
  for (int i = 3; i < 6; ++i) {
    expect_degree(in[i], 0, 1, wnames[i - 3], "projections read the whole embedding");
    expect_degree(in[i], 1, d_heads, wnames[i - 3], "split by heads like w_q");
    expect_replica(in[i], d_n * d_s, wnames[i - 3], weight_copies);
  }
  expect_degree(in[6], 0, d_heads, wnames[3], "the output projection is split by heads");
  expect_degree(in[6], 1, 1, wnames[3], "the output projection writes the whole embedding");
  expect_replica(in[6], d_n * d_s, wnames[3], weight_copies);
  ParallelTensorShape y = q;
  y.replica = d_heads;
  return {y};
}

}  // namespace

Shapes infer_dense(const Operator& op, const Shapes& in) {
  switch (op.type) {
    case OpType::Linear:
      return infer_linear(op, in);
    case OpType::MatMul:
      return infer_matmul(op, in, false);
    case OpType::BatchMatMul:
      return infer_matmul(op, in, true);
    default:
      return infer_attention(op, in);
  }
}

}  // namespace unity::shape_rules
