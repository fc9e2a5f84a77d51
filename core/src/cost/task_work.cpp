// FLOPs and bytes of one task (one output piece) of each operator, forward pass. Backward passes of
// operators with weights compute two products (input and weight gradients), hence a ratio of 2.
#include "unity/core/cost/cost_model.h"
#include "unity/core/ops/attention_core.h"
#include "unity/core/ops/mask_kernels.h"
#include "unity/core/ops/operator_definition.h"
#include "unity/core/ops/reduction.h"
#include "unity/core/ops/resize.h"
#include "unity/core/ops/window_attrs.h"
#include "unity/core/pcg/compute_dtype.h"

#include <algorithm>
#include <cmath>

namespace unity {
namespace {

double piece_bytes(const ParallelTensorShape& s) { return static_cast<double>(s.piece_bytes()); }

double piece_elems(const ParallelTensorShape& s) { return static_cast<double>(s.piece_elements()); }

double inputs_bytes(const Graph& g, const Node& n) {
  double b = 0;
  for (const auto& in : n.inputs) b += piece_bytes(g.shape(in));
  return b;
}

// Elements of the columns matrix a convolution lowered through memory builds (im2col): for each
// of `positions` positions (samples x spatial) of the side it sums into, `channels` x window
// values of the other side. None where the kernel is 1 x 1 and the spatial sizes match (stride 1,
// no padding): the GEMM reads the tensor as it is.
double conv_columns(const ParallelTensorShape& reads, const ParallelTensorShape& writes,
                    double positions, double channels, double window) {
  bool same_positions = window == 1;
  for (int i = 2; i < reads.rank() && i < writes.rank(); ++i)
    same_positions = same_positions && reads.dims[i].size / reads.dims[i].degree ==
                                           writes.dims[i].size / writes.dims[i].degree;
  return same_positions ? 0.0 : positions * channels * window;
}

}  // namespace

bool runs_fused_attention(const Node& n, const DeviceSpec& device) {
  return is_attention(n.op.type) && device.fused_attention && n.op.attrs.get_int("fused", 0) != 0;
}

bool runs_fp8_gemms(const Node& n, const DeviceSpec& device) {
  return device.peak_flops_fp8 > 0 && has_fp8_gemms(n);
}

TaskWork task_work(const Graph& g, NodeId id, bool fused_kernels) {
  const Node& n = g.node(id);
  TaskWork w;
  if (is_source_op(n.op.type) || n.outputs.empty()) return {0, 0, 0};
  const auto& out = n.outputs[0];
  const double out_elems = piece_elems(out);
  double out_bytes = 0;
  for (const auto& o : n.outputs) out_bytes += piece_bytes(o);
  w.bytes = inputs_bytes(g, n) + out_bytes;
  auto in_shape = [&](int slot) -> const ParallelTensorShape& {
    return g.shape(n.inputs.at(slot));
  };

  switch (n.op.type) {
    case OpType::Linear:
    case OpType::MatMul:
    case OpType::BatchMatMul: {
      const auto& a = in_shape(0);
      const auto& k = a.dims.back();
      w.flops = 2.0 * out_elems * static_cast<double>(k.size / k.degree);
      w.backward_ratio = 2;
      // Rows x columns of the product; a batched product's leading dims are its count.
      const double n_out = static_cast<double>(out.dims.back().size / out.dims.back().degree);
      double rows = out_elems / std::max(1.0, n_out), count = 1;
      if (n.op.type == OpType::BatchMatMul && out.dims.size() >= 3) {
        const auto& r = out.dims[out.dims.size() - 2];
        const double m_out = static_cast<double>(r.size / r.degree);
        count = rows / std::max(1.0, m_out);
        rows = m_out;
      }
      w.add_gemm(rows, n_out, count, w.flops);
      // A fused activation evaluated per output element (fuse_linear_relu's relu is not).
      if (n.op.type == OpType::Linear) {
        const std::string act = n.op.attrs.get_string("activation", "");
        if (act == "gelu") w.erfs = out_elems;
        if (act == "sigmoid" || act == "tanh") w.transcendentals = out_elems;
      }
      if (n.op.type == OpType::Linear && has_fp8_gemms(n)) {
        w.fp8_flops = w.flops;
        w.gemms[static_cast<std::size_t>(w.gemm_count - 1)].fp8 = true;
        w.fp8_cast_bytes = 4.0 * piece_elems(a);
      }
      break;
    }
    case OpType::Experts: {
      // A dropless grouped GEMM: of this task's tokens, each runs through top_k experts, and the
      // task holds experts/d(E) of them (routing assumed balanced: each expert gets its share);
      // per picked expert up (and gate) [H -> F/d(F)] and down [F/d(F) -> H].
      // Expert parallelism as the pipeline planner costs it ("expert_parallel" = f): the task's
      // experts are spread f times thinner, each device holding 1/f of them and receiving the
      // tokens of f replicas for them: the same routed tokens, 1/f of the weights read, f times
      // the rows per expert.
      const double f = static_cast<double>(n.op.attrs.get_int("expert_parallel", 1));
      const auto& x = in_shape(0);
      const auto& w1 = in_shape(2);
      const double hidden = static_cast<double>(x.dims.back().size);
      const double tokens = piece_elems(x) / hidden * f;
      const double experts = static_cast<double>(w1.dims[0].size);
      const double local_experts = experts / w1.dims[0].degree / f;
      if (f > 1)
        for (std::size_t slot = 2; slot < n.inputs.size(); ++slot)
          w.bytes -= piece_bytes(in_shape(static_cast<int>(slot))) * (1 - 1 / f);
      const double ffn = static_cast<double>(w1.dims[2].size / w1.dims[2].degree);
      // The planner's "expert_load" (expert_load.h): the busiest device's tokens over an even
      // share, from a router's imbalance or a capacity factor's padding.
      const double even =
          tokens * static_cast<double>(n.op.attrs.get_int("top_k")) * local_experts / experts;
      const double routed = even * n.op.attrs.get_double("expert_load", 1.0);
      const bool gated = n.inputs.size() == 5;
      const double up = 2.0 * routed * hidden * ffn * (gated ? 2 : 1);
      const double down = 2.0 * routed * ffn * hidden;
      w.flops = up + down;
      w.backward_ratio = 2;
      w.expert_routed_input = even * hidden;
      w.expert_up_output = even * ffn * (gated ? 2 : 1);
      w.expert_act_output = even * ffn;
      const double rows = routed / std::max(1.0, local_experts);
      // Transformer Engine's grouped linear, which Megatron-Core's grouped MLP runs, is one cuBLAS
      // GEMM an expert dealt round-robin to four compute streams (TE 2.8-2.9's
      // multi_stream_cublas_gemm; its CUTLASS grouped kernel is opt-in): the tiles of at most four
      // products share the SMs at a time, and each product is a launch of its own (the up and
      // gate projections one product of 2F columns).
      constexpr double kGroupedGemmStreams = 4;
      const double concurrent = std::clamp(local_experts, 1.0, kGroupedGemmStreams);
      w.add_gemm(rows, ffn * (gated ? 2 : 1), concurrent, up, local_experts * (gated ? 2 : 1));
      w.add_gemm(rows, hidden, concurrent, down, local_experts);
      w.launches = 2 * std::max(1.0, local_experts) + 1;  // the products, and the activation
      // SwiGLU's sigmoid (an exp a value; its derivative reuses it), or GELU's erf (its
      // derivative: an erf and an exp).
      if (gated) {
        w.transcendentals = routed * ffn;
        w.backward_transcendentals = 0;
      } else {
        w.erfs = w.backward_erfs = w.backward_transcendentals = routed * ffn;
      }
      // The routed copies of the tokens are permuted into expert order before the grouped GEMM
      // and back (weighted by the gates) after it (Megatron-Core's moe_permute and
      // moe_unpermute): each a read and a write of routed x H, memory-bound kernels between the
      // GEMMs, not hidden under them.
      w.serial_bytes = 4.0 * routed * hidden * static_cast<double>(size_of(x.dtype));
      if (has_fp8_gemms(n)) {
        w.fp8_flops = w.flops;
        for (int i = 0; i < w.gemm_count; ++i) w.gemms[static_cast<std::size_t>(i)].fp8 = true;
        w.fp8_cast_bytes = 4.0 * (routed * hidden + routed * ffn);
      }
      break;
    }
    case OpType::Conv2D: {
      const auto& x = in_shape(0);
      const auto& wt = in_shape(1);
      const std::int64_t groups = n.op.attrs.get_int("groups", 1);
      // Input channels each output channel reads, in this task's share of the reduction.
      const double cin = groups == 1 ? static_cast<double>(x.dims[1].size / x.dims[1].degree)
                                     : static_cast<double>(x.dims[1].size / groups);
      double window = 1;
      for (int i = 2; i < wt.rank(); ++i) window *= static_cast<double>(wt.dims[i].size);
      w.flops = 2.0 * out_elems * cin * window;
      w.backward_ratio = 2;
      // Lowered: each output position's window over all the task's input channels (its groups'
      // together); a depthwise convolution (a group a channel) is weighted directly, no columns.
      const double cout_piece = static_cast<double>(out.dims[1].size / out.dims[1].degree);
      const bool depthwise = groups > 1 && x.dims[1].size == groups && out.dims[1].size == groups;
      if (depthwise) w.depthwise_macs = out_elems * window;
      w.conv_lowering_bytes =
          (depthwise
               ? 0.0
               : 2.0 * static_cast<double>(size_of(x.dtype)) *
                     conv_columns(x, out, out_elems / std::max(1.0, cout_piece),
                                  static_cast<double>(x.dims[1].size / x.dims[1].degree), window)) +
          (n.inputs.size() == 3 ? 2.0 * out_bytes : 0.0);
      if (groups == 1)  // an implicit GEMM: output pixels x output channels
        w.add_gemm(out_elems / std::max(1.0, cout_piece), cout_piece, 1, w.flops);
      break;
    }
    case OpType::Pool2D: {
      double window = 1;
      for (auto k : window_attr(n.op, "kernel", out.rank() - 2, {}))
        window *= static_cast<double>(k);
      w.flops = out_elems * window;
      break;
    }
    case OpType::ConvTranspose: {
      // Every input element scatters into a window of each output channel it feeds: the
      // product of x's piece ([N, C/d(C), spatial...], partial sums over C) by the weight's.
      const auto& x = in_shape(0);
      const auto& wt = in_shape(1);
      const double x_elems = piece_elems(x);
      const double cin = static_cast<double>(x.dims[1].size / x.dims[1].degree);
      // Output channels per input channel: those of its group (weight [C, O/groups, k...]).
      const double cout = static_cast<double>(wt.dims[1].size / wt.dims[1].degree);
      double window = 1;
      for (int i = 2; i < wt.rank(); ++i) window *= static_cast<double>(wt.dims[i].size);
      w.flops = 2.0 * x_elems * cout * window;
      w.backward_ratio = 2;
      // Lowered as a convolution's backward-data: the GEMM writes, for each input position, the
      // window of every output channel of the task, which col2im then adds into the output.
      w.conv_lowering_bytes =
          2.0 * static_cast<double>(size_of(x.dtype)) *
              conv_columns(x, out, x_elems / std::max(1.0, cin),
                           static_cast<double>(out.dims[1].size / out.dims[1].degree), window) +
          (n.inputs.size() == 3 ? 2.0 * out_bytes : 0.0);
      if (n.op.attrs.get_int("groups", 1) == 1)
        w.add_gemm(x_elems / std::max(1.0, cin), cout * window, 1, w.flops);
      break;
    }
    case OpType::Resize: {
      // Each output element a weighted sum of taps^(resized axes) inputs (a multiply and an add
      // each; nearest copies one), as a direct N-d kernel computes it. The backward scatters the
      // same products.
      const double taps = resize_spec(n.op, out.rank()).taps();
      const double resized = static_cast<double>(n.op.attrs.get_ints("axes").size());
      w.flops = taps == 1 ? out_elems : 2.0 * out_elems * std::pow(taps, resized);
      break;
    }
    case OpType::MultiHeadAttention: {
      const auto& q = in_shape(0);
      const auto& kv = in_shape(1);
      const double batch = static_cast<double>(q.dims[0].size / q.dims[0].degree);
      // This task's block of queries (context parallelism splits them), against every key.
      const double sq = static_cast<double>(q.dims[1].size / q.dims[1].degree);
      const double sk = static_cast<double>(kv.dims[1].size);
      const double e = static_cast<double>(q.dims[2].size);
      // Context parallelism (as the pipeline planner costs it): the queries, keys and values here
      // are one of `context_parallel` sequence shards, and the queries attend to the keys of
      // every shard, gathered or ringed (context_exchange.h). Each shard's causal work is an equal
      // share (the sequence is dealt out in 2 x cp chunks).
      const double sk_all = sk * static_cast<double>(n.op.attrs.get_int("context_parallel", 1));
      // The projections' widths from the weights' own sizes: w_q [E, heads x head size], w_k and
      // w_v [E, kv heads x head size] (grouped-query attention shrinks them), this task's share of
      // the heads a 1/degree of each. The head size need not be E / heads.
      const auto& wq = in_shape(3);
      const auto& wk = in_shape(4);
      const int d_heads = wq.dims[1].degree;
      const double q_part = static_cast<double>(wq.dims[1].size) / d_heads;
      const double kv_part = static_cast<double>(wk.dims[1].size) / d_heads;
      const std::int64_t heads = n.op.attrs.get_int("num_heads");
      const double heads_part = static_cast<double>(heads) / d_heads;
      const double head_dim = static_cast<double>(wq.dims[1].size) / static_cast<double>(heads);
      const double projections =
          2.0 * batch * (sq * e * q_part + 2 * sk * e * kv_part + sq * q_part * e);
      // Rotary embeddings rotate each query and key element (x cos + x' sin).
      const double rotary =
          n.op.attrs.get_int("rotary", 0) != 0 ? 3.0 * batch * (sq * q_part + sk * kv_part) : 0.0;
      // The two batched products, each 2 b heads sq sk head_dim: scores q k^T and context p v.
      const double attention = 2.0 * 2.0 * batch * sq * sk_all * q_part;
      w.add_gemm(batch * sq, q_part, 1, 2.0 * batch * sq * e * q_part);
      w.add_gemm(batch * sk, kv_part, 2, 2.0 * 2 * batch * sk * e * kv_part);
      w.add_gemm(batch * sq, e, 1, 2.0 * batch * sq * q_part * e);
      if (has_fp8_gemms(n)) {
        // The projections in fp8 (the input and the context cast); the scores stay bf16.
        w.fp8_flops = projections;
        for (int i = 0; i < w.gemm_count; ++i) w.gemms[static_cast<std::size_t>(i)].fp8 = true;
        w.fp8_cast_bytes = 4.0 * batch * (sq * e + sq * q_part);
      }
      if (fused_kernels && n.op.attrs.get_int("fused", 0) != 0) {
        // One kernel (FlashAttention, Dao et al. 2022): the scores stay in on-chip memory, a causal
        // mask skips the blocks above the diagonal (half the products, as a token attends to the
        // ones before it), and the backward pass recomputes the scores from q and k: five products
        // (s, dv, dp, dq, dk) against the forward's two. With the queries split by sequence
        // (context parallelism, a block of sq queries against all sk keys) the blocks' shares
        // differ: query p sees the keys up to p, so the last block, rows [sk - sq, sk), is the
        // busiest, with the sq (sk - sq / 2) scores left of the diagonal; it is the one costed,
        // as the others wait for it. Whole (sq = sk), that is the half above.
        // A sliding window of w keys skips the blocks left of it too: query p sees min(p, w) keys
        // (on the sequence's continuum), so the block of rows [a, b) runs the integral of min(p, w)
        // over it of its sq x sk_all products; a context-parallel shard, balanced, runs the whole
        // sequence's share.
        const bool causal = n.op.attrs.get_int("causal", 0) != 0;
        const double window = static_cast<double>(n.op.attrs.get_int("window", 0));
        const int cp = static_cast<int>(n.op.attrs.get_int("context_parallel", 1));
        double run = attention;
        if (causal && window > 0 && window < sk_all) {
          auto seen = [&](double a, double b) {  // the integral of min(p, window) over [a, b]
            if (b <= window) return (b * b - a * a) / 2;
            if (a >= window) return window * (b - a);
            return (window * window - a * a) / 2 + window * (b - window);
          };
          run = cp > 1 ? attention * seen(0, sk_all) / (sk_all * sk_all)
                       : attention * seen(sk - sq, sk) / (sq * sk);
        } else if (causal && q.dims[1].size == kv.dims[1].size) {
          run = attention * (1.0 - sq / (2.0 * sk));
        }
        w.set_attention(projections + rotary, attention, run, true);
        break;
      }
      // Unfused, like Megatron-LM's FLOP formula, a causal mask changes nothing: the full score
      // matrix is computed. The scores [b, heads, sq, sk] are written by the first product, read
      // and written by the softmax and read by the second: four passes between the two
      // compute-bound products.
      w.set_attention(projections + rotary, attention, attention, false);
      // The softmax's exp over the scores [b, heads, sq, sk] of this task's heads; its backward
      // reads the probabilities kept, not their exp.
      w.transcendentals = batch * sq * sk_all * heads_part;
      w.backward_transcendentals = 0;
      // Per head: scores [sq, sk] over the head size, context [sq, head size] over sk.
      w.add_gemm(sq, sk_all, batch * heads_part, attention / 2);
      w.add_gemm(sq, head_dim, batch * heads_part, attention / 2);
      w.serial_bytes =
          4.0 * batch * sq * sk_all * heads_part * static_cast<double>(size_of(q.dtype));
      break;
    }
    case OpType::Embedding:
    case OpType::EmbeddingBag: {
      // A gather: the rows read equal the indices looked up, not the table.
      const auto& idx = in_shape(0);
      const double dim_part = static_cast<double>(out.dims.back().size / out.dims.back().degree);
      const double lookups = piece_elems(idx) / std::max(1, idx.replica);
      w.bytes = piece_bytes(idx) + lookups * dim_part * 4.0 + piece_bytes(out);
      w.flops = lookups * dim_part;
      w.backward_ratio = 1;
      break;
    }
    case OpType::SoftmaxCrossEntropy:
      w.flops = 8.0 * piece_elems(in_shape(0));
      w.backward_ratio = 2;
      // An exp per logit, and again backward, which recomputes the probabilities from the
      // logits.
      w.transcendentals = piece_elems(in_shape(0));
      w.backward_transcendentals = w.transcendentals;
      if (size_of(in_shape(0).dtype) == 2) {
        // Half-precision logits: Megatron-LM's (vocabulary-parallel) cross-entropy and
        // torchtitan's make them fp32 and pass over them apart (docs/cost-model.md): forward the
        // cast (2 read, 4 written), the max (4), subtracting it (8), exp (8), the sum (4) and the
        // softmax kept for the backward (8): 38 bytes an element; backward the gradient scaled in
        // place (8) and cast back for the head's GEMM (6): 14.
        const double elems = piece_elems(in_shape(0));
        w.bytes = w.bytes - piece_bytes(in_shape(0)) + kCrossEntropyForwardBytes * elems;
        w.backward_ratio = kCrossEntropyBackwardBytes / kCrossEntropyForwardBytes;
      }
      break;
    case OpType::LayerNorm:
      if (n.op.attrs.get_int("rms", 0) != 0) {
        // RMSNorm: square, sum, scale by the reciprocal root and by gamma; no mean, no beta.
        w.flops = 4.0 * piece_elems(in_shape(0));
        w.backward_ratio = 2;
        break;
      }
      [[fallthrough]];
    case OpType::BatchNorm:
    case OpType::Softmax:
    case OpType::MSELoss:
      w.flops = 8.0 * piece_elems(in_shape(0));
      w.backward_ratio = 2;
      // An exp per element; the backward reads the softmax's output, not its exp.
      if (n.op.type == OpType::Softmax) {
        w.transcendentals = piece_elems(in_shape(0));
        w.backward_transcendentals = 0;
      }
      break;
    case OpType::Reshape:
    case OpType::Flatten:
    case OpType::Identity:
      // Views of the same memory: nothing moves.
      w.flops = 0;
      w.bytes = 0;
      break;
    case OpType::TopK:
    case OpType::ArgMax:
    case OpType::ArgMin: {
      // A comparison per element and step of a k-element heap; the backward scatters k values
      // per slice into a zeroed gradient (none for the arg operators: their output is integer).
      const double k =
          n.op.type == OpType::TopK ? static_cast<double>(n.op.attrs.get_int("k", 1)) : 1.0;
      w.flops = piece_elems(in_shape(0)) * (1.0 + std::log2(k + 1.0));
      w.backward_ratio = n.op.type == OpType::TopK ? out_elems / w.flops : 0;
      break;
    }
    case OpType::GatherElements:
    case OpType::ScatterElements:
    case OpType::OneHot:
      // An address computation and a copy per element picked or placed; the backward scatters or
      // gathers as many (OneHot has none: its input is integer).
      w.flops =
          n.op.type == OpType::ScatterElements ? out_elems + piece_elems(in_shape(2)) : out_elems;
      w.backward_ratio = n.op.type == OpType::OneHot ? 0 : 1;
      break;
    case OpType::Pad:
    case OpType::GatherND:
    case OpType::ScatterND:
      // Memory-bound copies: an address computation and a copy per output element (ScatterND
      // copies data, then places the updates); the backward moves as many.
      w.flops = n.op.type == OpType::ScatterND ? out_elems + piece_elems(in_shape(2)) : out_elems;
      w.backward_ratio = 1;
      break;
    case OpType::Reduction: {
      // A combine per input element (log_sum_exp: a max pass first); the backward reads x, y and
      // dy per element. An exp (log_sum_exp), or a log or root per output element.
      const ReductionKind k = reduction_kind(n.op);
      const double x_elems = piece_elems(in_shape(0));
      w.flops = (k == ReductionKind::LogSumExp ? 3.0 : 1.0) * x_elems;
      w.backward_ratio = 2;
      if (reduction_transcendental(k))
        w.transcendentals = k == ReductionKind::LogSumExp ? x_elems : out_elems;
      break;
    }
    case OpType::Concat:
      // A task copies its inputs into its piece: with `pieces`, only the inputs of its block.
      w.flops = out_elems;
      w.bytes = 2 * out_bytes;
      break;
    default:
      if (const auto work = operator_definition(n.op.type).work) {
        work(g, n, fused_kernels, w);  // an operator described in its own file (core/src/ops/)
        break;
      }
      if (const AxisFunction* f = axis_function(n.op.type)) {
        w.flops = f->flops_per_element * piece_elems(in_shape(0));
        w.backward_ratio = 2;
        if (f->transcendental) w.transcendentals = piece_elems(in_shape(0));
        break;
      }
      if (is_mask_operator(n.op.type)) {
        // A comparison, logic step, selection or conversion per output element; only Where has a
        // backward (dy routed to x or y), the masks and integer casts have no gradient.
        w.flops = out_elems;
        w.backward_ratio = n.op.type == OpType::Where ? 1 : 0;
        break;
      }
      // Element-wise, splits, reductions and parallel operators' local work; a point-wise
      // function with a transcendental per element pays for it forward and backward alike.
      w.flops = out_elems;
      if (const PointwiseFunction* f = pointwise_function(n.op.type); f && f->transcendental) {
        (f->erf ? w.erfs : w.transcendentals) = out_elems;
        if (f->backward_transcendentals >= 0) {
          w.backward_transcendentals = f->backward_transcendentals * out_elems;
          w.backward_erfs = f->backward_erfs * out_elems;
        }
      }
      break;
  }
  return w;
}

}  // namespace unity
