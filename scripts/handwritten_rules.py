#!/usr/bin/env python3
"""Writes Unity's hand-written substitution rules, rules/*.json, one file per family.

The rules are written by hand, as templates: one function per family states a rewrite once and
instantiates it for every operator and variant it holds for (with and without bias, every
activation, ...). The files are data the core loads at run time (docs/rules.md); this script is
how we keep them consistent. Run it after editing, then commit both:

    python3 scripts/handwritten_rules.py        # rewrites rules/*.json
    python3 scripts/handwritten_rules.py --check  # exit 1 when the files are out of date
"""
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
ACTIVATIONS = {"relu": "Relu", "gelu": "Gelu", "sigmoid": "Sigmoid", "tanh": "Tanh"}


# Every operator, in op_list.h's order.
LISTED = re.findall(r"X\((\w+)\)", (ROOT / "core/include/unity/core/pcg/op_list.h").read_text())


def defined_with(macro):
    """The operators a file of core/src/ops/ defines with `macro`."""
    found = set()
    for f in (ROOT / "core/src/ops").glob("*.cpp"):
        found.update(re.findall(macro + r"\(\s*(\w+)\s*,", f.read_text()))
    return found


# The element-wise unary operators: every point-wise one but Identity, and Dropout.
_POINTWISE = defined_with("UNITY_POINTWISE_OPERATOR")
UNARY = [op for op in LISTED if (op in _POINTWISE and op != "Identity") or op == "Dropout"]
# The operators along one axis.
_ALONG_AXIS = defined_with("UNITY_AXIS_OPERATOR")
AXIS_OPS = [op for op in LISTED if op in _ALONG_AXIS]
BINARY = ["Add", "Sub", "Mul", "Div"]


def node(name, op, inputs, attrs=None, copy=None, foreach=None):
    n = {"name": name, "op": op, "inputs": list(inputs)}
    if attrs:
        n["attrs"] = attrs
    if copy:
        n["copy_attrs_of"] = copy
    if foreach:
        n["foreach"] = foreach
    return n


def part(name, x, dim, degree="d", foreach=None):
    return node(name, "Partition", [x], {"dim": dim, "degree": degree}, foreach=foreach)


def comb(name, x, dim, degree="d"):
    return node(name, "Combine", [x], {"dim": dim, "degree": degree})


def repl(name, x, degree="d"):
    return node(name, "Replicate", [x], {"degree": degree})


def red(name, x, degree="d"):
    return node(name, "Reduce", [x], {"degree": degree})


def rule(name, kind, description, inputs, source, source_out, target, target_out,
         parameters=None, constraints=None, proved=None):
    r = {"name": name, "kind": kind, "description": description, "inputs": inputs,
         "source": {"nodes": source, "outputs": source_out},
         "target": {"nodes": target, "outputs": target_out}}
    if parameters:
        r["parameters"] = parameters
    if constraints:
        r["constraints"] = constraints
    if any(i.endswith("*") for i in inputs):
        # The verifier proves a variadic rule once per number of inputs, up to its bound; the
        # matcher applies the rule to no more inputs than that.
        r["verified"] = proved or VARIADIC_PROVED
    return r


VARIADIC_PROVED = "all degrees and shapes; 1 to 8 variadic inputs"
# The rules that cut a Concat into pieces: their proofs never unroll the Concat (a Concat in pieces
# is the Partition of the Concat, one axiom per number of inputs), so they close up to the theory's
# largest Concat, past DLRM's 27 features.
PIECES_PROVED = "all degrees and shapes; 1 to 32 variadic inputs"


def dim_of(tensor, name="k"):
    return {"name": name, "domain": "dim", "of": tensor}


def c(kind, a, b):
    return {"kind": kind, "a": a, "b": b}


# --- algebraic: fusion ------------------------------------------------------------------------

def fusion():
    out = []
    for act, op in ACTIVATIONS.items():
        for bias in (False, True):
            ins = ["x", "w", "b"] if bias else ["x", "w"]
            suffix = "_bias" if bias else ""
            out.append(rule(
                f"fuse_linear{suffix}_{act}", "algebraic",
                f"Linear{' with bias' if bias else ''} followed by {op} computes both in one kernel",
                ins,
                [node("lin", "Linear", ins, {"activation": "none"}), node("act", op, ["lin"])],
                ["act"],
                [node("fused", "Linear", ins, {"activation": act}, copy="lin")], ["fused"]))
            out.append(rule(
                f"unfuse_linear{suffix}_{act}", "algebraic",
                f"A fused Linear+{op} as two operators (lets reduction parallelism split the Linear)",
                ins,
                [node("fused", "Linear", ins, {"activation": act})], ["fused"],
                [node("lin", "Linear", ins, {"activation": "none"}, copy="fused"),
                 node("act", op, ["lin"])], ["act"]))
    for bias in (False, True):
        ins = ["x", "w", "b"] if bias else ["x", "w"]
        suffix = "_bias" if bias else ""
        out.append(rule(
            f"fuse_conv2d{suffix}_relu", "algebraic",
            "Conv2D followed by Relu in one kernel", ins,
            [node("conv", "Conv2D", ins, {"activation": "none"}), node("act", "Relu", ["conv"])],
            ["act"], [node("fused", "Conv2D", ins, {"activation": "relu"}, copy="conv")],
            ["fused"]))
        out.append(rule(
            f"unfuse_conv2d{suffix}_relu", "algebraic",
            "A fused Conv2D+Relu as two operators (lets input channels split the Conv2D)", ins,
            [node("fused", "Conv2D", ins, {"activation": "relu"})], ["fused"],
            [node("conv", "Conv2D", ins, {"activation": "none"}, copy="fused"),
             node("act", "Relu", ["conv"])], ["act"]))
    ins = ["x", "scale", "bias"]
    out.append(rule(
        "fuse_batchnorm_relu", "algebraic", "BatchNorm followed by Relu in one kernel", ins,
        [node("bn", "BatchNorm", ins, {"activation": "none"}), node("act", "Relu", ["bn"])],
        ["act"], [node("fused", "BatchNorm", ins, {"activation": "relu"}, copy="bn")], ["fused"]))
    out.append(rule(
        "unfuse_batchnorm_relu", "algebraic", "A fused BatchNorm+Relu as two operators", ins,
        [node("fused", "BatchNorm", ins, {"activation": "relu"})], ["fused"],
        [node("bn", "BatchNorm", ins, {"activation": "none"}, copy="fused"),
         node("act", "Relu", ["bn"])], ["act"]))
    return out


# --- parallel: dense algebra --------------------------------------------------------------------

def dense():
    out = []
    # Paper Fig. 16b: the Linear after a Concat of features (DLRM's and XDL's interaction), with
    # the Concat cut at its inputs, one run of whole inputs per device: each device multiplies the
    # inputs it already holds by their rows of the weight, and only the partial results move.
    # First in the family: the search tries successors alternately by its estimate and in rule
    # order, and the estimate places every serial operator on the same device, where cutting a
    # Concat only looks like more traffic.
    for bias in (False, True):
        s = "_bias" if bias else ""
        ins = ["w", "b", "xs*"] if bias else ["w", "xs*"]
        out.append(rule(
            f"linear{s}_concat_reduction_parallel", "parallel",
            "Reduction parallelism over a Concat of the features, cut where its inputs are: no "
            "device gathers the concatenation, the partial results are summed (paper Fig. 16b)",
            ins,
            [node("cat", "Concat", ["xs*"], {"axis": "$a"}),
             node("lin", "Linear", ["cat", "w"] + (["b"] if bias else []),
                  {"activation": "none"})], ["lin"],
            [node("cat2", "Concat", ["xs*"], {"axis": "$a", "pieces": "d"}), part("pw", "w", 0)] +
            ([repl("rb", "b")] if bias else []) +
            [node("lin2", "Linear", ["cat2", "pw"] + (["rb"] if bias else []), copy="lin"),
             red("out", "lin2")], ["out"], ["d"], [c("equal", "$a", "last(cat)")],
            PIECES_PROVED))
    for bias in (False, True):
        ins = ["x", "w", "b"] if bias else ["x", "w"]
        s = "_bias" if bias else ""
        src = [node("lin", "Linear", ins)]
        out.append(rule(
            f"linear{s}_sample_parallel", "parallel",
            "Split the samples (any leading dim), replicate the weight: data parallelism", ins,
            src, ["lin"],
            [part("px", "x", "k"), repl("rw", "w")] + ([repl("rb", "b")] if bias else []) +
            [node("lin2", "Linear", ["px", "rw"] + (["rb"] if bias else []), copy="lin"),
             comb("out", "lin2", "k")], ["out"],
            ["d", dim_of("x")], [c("less", "k", "last(x)")]))
        out.append(rule(
            f"linear{s}_output_parallel", "parallel",
            "Split the output features: each device computes some columns from the whole input", ins,
            src, ["lin"],
            [repl("rx", "x"), part("pw", "w", 1)] + ([part("pb", "b", 0)] if bias else []) +
            [node("lin2", "Linear", ["rx", "pw"] + (["pb"] if bias else []), copy="lin"),
             comb("out", "lin2", -1)], ["out"], ["d"]))
        out.append(rule(
            f"linear{s}_reduction_parallel", "parallel",
            "Reduction parallelism: split the input features and the weight's rows, sum the "
            "partial results", ins,
            [node("lin", "Linear", ins, {"activation": "none"})], ["lin"],
            [part("px", "x", -1), part("pw", "w", 0)] + ([repl("rb", "b")] if bias else []) +
            [node("lin2", "Linear", ["px", "pw"] + (["rb"] if bias else []), copy="lin"),
             red("out", "lin2")], ["out"], ["d"]))
    out.append(rule(
        "linear_sample_to_reduction_parallel", "parallel",
        "A data-parallel Linear recomputed with reduction parallelism: gathers the partial "
        "activations instead of synchronising the weight (paper Fig. 2b)", ["x", "w"],
        [part("px", "x", 0, "$d"), repl("rw", "w", "$d"),
         node("lin", "Linear", ["px", "rw"], {"activation": "none"})], ["lin"],
        [part("kx", "x", -1, "$d"), part("kw", "w", 0, "$d"),
         node("lin2", "Linear", ["kx", "kw"], copy="lin"), red("sum", "lin2", "$d"),
         part("out", "sum", 0, "$d")], ["out"]))
    # Two Linear layers with an activation between them, tensor-parallel as a pair (Megatron-LM's MLP
    # block, paper Fig. 10): the first splits its output features, the second its input features,
    # so the activation between them never moves and one sum of partial results ends the pair. The
    # same as output- then reduction-parallelism and cancelling the Combine/Partition between them,
    # in one step (the intermediate graphs cost more than either end).
    for act, op in ACTIVATIONS.items():
        for fused in (False, True):
            for bias in (False, True):
                s = "_bias" if bias else ""
                f = "_fused" if fused else ""
                ins = ["x", "w1", "b1", "w2", "b2"] if bias else ["x", "w1", "w2"]
                first_in = ["x", "w1"] + (["b1"] if bias else [])
                second_in = ["h", "w2"] + (["b2"] if bias else [])
                if fused:
                    src = [node("l1", "Linear", first_in, {"activation": act}),
                           node("l2", "Linear", ["l1"] + second_in[1:], {"activation": "none"})]
                else:
                    src = [node("l1", "Linear", first_in, {"activation": "none"}),
                           node("h", op, ["l1"]),
                           node("l2", "Linear", second_in, {"activation": "none"})]
                tgt = [repl("rx", "x"), part("pw1", "w1", 1)]
                if bias:
                    tgt.append(part("pb1", "b1", 0))
                tgt.append(node("t1", "Linear", ["rx", "pw1"] + (["pb1"] if bias else []), copy="l1"))
                mid = "t1"
                if not fused:
                    tgt.append(node("th", op, ["t1"], copy="h"))
                    mid = "th"
                tgt.append(part("pw2", "w2", 0))
                if bias:
                    tgt.append(repl("rb2", "b2"))
                tgt.append(node("t2", "Linear", [mid, "pw2"] + (["rb2"] if bias else []), copy="l2"))
                tgt.append(red("out", "t2"))
                out.append(rule(
                    f"mlp{f}{s}_{act}_tensor_parallel", "parallel",
                    f"Linear, {op}, Linear tensor-parallel as a pair (Megatron-LM MLP block): output "
                    "features split in the first, input features in the second, one sum at the end",
                    ins, src, ["l2"], tgt, ["out"], ["d"]))
    # The gated MLP of Llama-style models (SwiGLU: down(silu(gate(x)) * up(x)), SiLU written as
    # x * sigmoid(x)), tensor-parallel as Megatron-LM runs it: the gate and up projections split
    # their output features alike, so the SiLU and the product stay on each device's slice, the
    # down projection splits its input features, and one sum ends the block.
    out.append(rule(
        "mlp_swiglu_tensor_parallel", "parallel",
        "Gated MLP (SwiGLU: gate and up Linear, SiLU as x * Sigmoid(x), product, down Linear) "
        "tensor-parallel as Megatron-LM's: gate and up split their output features, down its "
        "input features, one sum at the end",
        ["x", "wg", "wu", "wd"],
        [node("g", "Linear", ["x", "wg"], {"activation": "none"}),
         node("s", "Sigmoid", ["g"]),
         node("a", "Mul", ["g", "s"]),
         node("u", "Linear", ["x", "wu"], {"activation": "none"}),
         node("h", "Mul", ["a", "u"]),
         node("o", "Linear", ["h", "wd"], {"activation": "none"})], ["o"],
        [repl("rx", "x"), part("pwg", "wg", 1), part("pwu", "wu", 1),
         node("tg", "Linear", ["rx", "pwg"], copy="g"),
         node("ts", "Sigmoid", ["tg"], copy="s"),
         node("ta", "Mul", ["tg", "ts"], copy="a"),
         node("tu", "Linear", ["rx", "pwu"], copy="u"),
         node("th", "Mul", ["ta", "tu"], copy="h"),
         part("pwd", "wd", 0),
         node("to", "Linear", ["th", "pwd"], copy="o"),
         red("out", "to")], ["out"], ["d"]))
    # MatMul and BatchMatMul: a [B..., m, k] x b [k, n] (shared) or [B..., k, n] (batched).
    for op in ("MatMul", "BatchMatMul"):
        low = op.lower()
        src = [node("mm", op, ["a", "b"])]
        out.append(rule(
            f"{low}_row_parallel", "parallel", f"{op}: split the rows (m) of a, replicate b",
            ["a", "b"], src, ["mm"],
            [part("pa", "a", -2), repl("rb", "b"), node("mm2", op, ["pa", "rb"], copy="mm"),
             comb("out", "mm2", -2)], ["out"], ["d"]))
        out.append(rule(
            f"{low}_column_parallel", "parallel", f"{op}: split the columns (n) of b, replicate a",
            ["a", "b"], src, ["mm"],
            [repl("ra", "a"), part("pb", "b", -1), node("mm2", op, ["ra", "pb"], copy="mm"),
             comb("out", "mm2", -1)], ["out"], ["d"]))
        out.append(rule(
            f"{low}_reduction_parallel", "parallel",
            f"{op}: split the inner dim (k) of both, sum the partial products",
            ["a", "b"], src, ["mm"],
            [part("pa", "a", -1), part("pb", "b", -2), node("mm2", op, ["pa", "pb"], copy="mm"),
             red("out", "mm2")], ["out"], ["d"]))
        out.append(rule(
            f"{low}_batch_parallel", "parallel",
            f"{op}: split a batch dim of both operands (attention heads, samples)",
            ["a", "b"], src, ["mm"],
            [part("pa", "a", "k"), part("pb", "b", "k"), node("mm2", op, ["pa", "pb"], copy="mm"),
             comb("out", "mm2", "k")], ["out"], ["d", dim_of("a")],
            [c("less", "k", "rank(a)-2"), c("equal", "rank(a)", "rank(b)")]))
    out.append(rule(
        "matmul_shared_batch_parallel", "parallel",
        "MatMul with a shared 2-D b: split a batch dim of a, replicate b", ["a", "b"],
        [node("mm", "MatMul", ["a", "b"])], ["mm"],
        [part("pa", "a", "k"), repl("rb", "b"), node("mm2", "MatMul", ["pa", "rb"], copy="mm"),
         comb("out", "mm2", "k")], ["out"], ["d", dim_of("a")],
        [c("less", "k", "rank(a)-2"), c("equal", "rank(b)", "2")]))
    return out


# --- parallel: convolution ----------------------------------------------------------------------

def convolution():
    out = []
    for bias in (False, True):
        ins = ["x", "w", "b"] if bias else ["x", "w"]
        s = "_bias" if bias else ""
        src = [node("conv", "Conv2D", ins)]
        rb = [repl("rb", "b")] if bias else []
        out.append(rule(
            f"conv2d{s}_sample_parallel", "parallel", "Conv2D: split the samples, replicate the "
            "weight (data parallelism)", ins, src, ["conv"],
            [part("px", "x", 0), repl("rw", "w")] + rb +
            [node("conv2", "Conv2D", ["px", "rw"] + (["rb"] if bias else []), copy="conv"),
             comb("out", "conv2", 0)], ["out"], ["d"]))
        out.append(rule(
            f"conv2d{s}_spatial_parallel", "parallel", "Conv2D: split the image rows (spatial "
            "parallelism; halos are exchanged at run time)", ins, src, ["conv"],
            [part("px", "x", 2), repl("rw", "w")] + rb +
            [node("conv2", "Conv2D", ["px", "rw"] + (["rb"] if bias else []), copy="conv"),
             comb("out", "conv2", 2)], ["out"], ["d"],
            [c("divides", "d", "size(conv,2)")]))
        out.append(rule(
            f"conv2d{s}_output_channel_parallel", "parallel", "Conv2D: split the output "
            "channels, every device reads the whole input", ins,
            [node("conv", "Conv2D", ins, {"groups": 1})], ["conv"],
            [repl("rx", "x"), part("pw", "w", 0)] + ([part("pb", "b", 0)] if bias else []) +
            [node("conv2", "Conv2D", ["rx", "pw"] + (["pb"] if bias else []), copy="conv"),
             comb("out", "conv2", 1)], ["out"], ["d"]))
        out.append(rule(
            f"conv2d{s}_input_channel_parallel", "parallel", "Conv2D: split the input channels "
            "(a reduction), sum the partial results", ins,
            [node("conv", "Conv2D", ins, {"groups": 1, "activation": "none"})], ["conv"],
            [part("px", "x", 1), part("pw", "w", 1)] + rb +
            [node("conv2", "Conv2D", ["px", "pw"] + (["rb"] if bias else []), copy="conv"),
             red("out", "conv2")], ["out"], ["d"]))
        out.append(rule(
            f"conv2d{s}_group_parallel", "parallel", "Grouped Conv2D: split whole groups of "
            "input and output channels", ins,
            [node("conv", "Conv2D", ins, {"groups": "$g"})], ["conv"],
            [part("px", "x", 1), part("pw", "w", 0)] + ([part("pb", "b", 0)] if bias else []) +
            [node("conv2", "Conv2D", ["px", "pw"] + (["pb"] if bias else []), copy="conv"),
             comb("out", "conv2", 1)], ["out"], ["d"],
            [c("not_equal", "$g", "1"), c("divides", "d", "$g")]))
    for bias in (False, True):
        ins = ["x", "w", "b"] if bias else ["x", "w"]
        s = "_bias" if bias else ""
        src = [node("ct", "ConvTranspose", ins)]
        rb = [repl("rb", "b")] if bias else []
        out.append(rule(
            f"conv_transpose{s}_sample_parallel", "parallel", "ConvTranspose: split the samples, "
            "replicate the weight (data parallelism)", ins, src, ["ct"],
            [part("px", "x", 0), repl("rw", "w")] + rb +
            [node("ct2", "ConvTranspose", ["px", "rw"] + (["rb"] if bias else []), copy="ct"),
             comb("out", "ct2", 0)], ["out"], ["d"]))
        out.append(rule(
            f"conv_transpose{s}_output_channel_parallel", "parallel", "ConvTranspose: split the "
            "output channels (the weight's dim 1), every device reads the whole input", ins,
            [node("ct", "ConvTranspose", ins, {"groups": 1})], ["ct"],
            [repl("rx", "x"), part("pw", "w", 1)] + ([part("pb", "b", 0)] if bias else []) +
            [node("ct2", "ConvTranspose", ["rx", "pw"] + (["pb"] if bias else []), copy="ct"),
             comb("out", "ct2", 1)], ["out"], ["d"]))
        out.append(rule(
            f"conv_transpose{s}_input_channel_parallel", "parallel", "ConvTranspose: split the "
            "input channels (a reduction), sum the partial results", ins,
            [node("ct", "ConvTranspose", ins, {"groups": 1})], ["ct"],
            [part("px", "x", 1), part("pw", "w", 0)] + rb +
            [node("ct2", "ConvTranspose", ["px", "pw"] + (["rb"] if bias else []), copy="ct"),
             red("out", "ct2")], ["out"], ["d"]))
    for dim, what in ((0, "sample"), (1, "channel")):
        out.append(rule(
            f"pool2d_{what}_parallel", "parallel", f"Pool2D: split the {what}s", ["x"],
            [node("pool", "Pool2D", ["x"])], ["pool"],
            [part("px", "x", dim), node("pool2", "Pool2D", ["px"], copy="pool"),
             comb("out", "pool2", dim)], ["out"], ["d"]))
    ins = ["x", "scale", "bias"]
    out.append(rule(
        "batchnorm_channel_parallel", "parallel", "BatchNorm: split the channels with their scale "
        "and bias (statistics stay exact)", ins, [node("bn", "BatchNorm", ins)], ["bn"],
        [part("px", "x", 1), part("ps", "scale", 0), part("pb", "bias", 0),
         node("bn2", "BatchNorm", ["px", "ps", "pb"], copy="bn"), comb("out", "bn2", 1)], ["out"],
        ["d"]))
    return out


# --- parallel: attention and normalisation ------------------------------------------------------

def attention():
    out = []
    weights = ["wq", "wk", "wv", "wo"]
    for self_attention in (True, False):
        qkv = ["x", "x", "x"] if self_attention else ["q", "k", "v"]
        ins = (["x"] if self_attention else ["q", "k", "v"]) + weights
        s = "self_" if self_attention else ""
        src = [node("mha", "MultiHeadAttention", qkv + weights)]
        sources = sorted(set(qkv), key=qkv.index)
        out.append(rule(
            f"{s}attention_sample_parallel", "parallel",
            "Attention: split the samples, replicate the projections", ins, src, ["mha"],
            [part("p" + t, t, 0) for t in sources] + [repl("r" + w, w) for w in weights] +
            [node("mha2", "MultiHeadAttention", ["p" + t for t in qkv] + ["r" + w for w in weights],
                  copy="mha"), comb("out", "mha2", 0)], ["out"], ["d"]))
        out.append(rule(
            f"{s}attention_head_parallel", "parallel",
            "Attention-head parallelism (Megatron): split the heads through the projections, "
            "every device reads the whole input, the output projection leaves partial sums", ins,
            src, ["mha"],
            [repl("r" + t, t) for t in sources] +
            [part("pwq", "wq", 1), part("pwk", "wk", 1), part("pwv", "wv", 1),
             part("pwo", "wo", 0),
             node("mha2", "MultiHeadAttention",
                  ["r" + t for t in qkv] + ["pwq", "pwk", "pwv", "pwo"], copy="mha"),
             red("out", "mha2")], ["out"], ["d"]))
    for affine in (False, True):
        ins = ["x", "gamma", "beta"] if affine else ["x"]
        s = "_affine" if affine else ""
        out.append(rule(
            f"layernorm{s}_sample_parallel", "parallel",
            "LayerNorm: split a leading (not normalised) dim", ins,
            [node("ln", "LayerNorm", ins, {"normalized_dims": "$nd"})], ["ln"],
            [part("px", "x", "k")] + ([repl("rg", "gamma"), repl("rb", "beta")] if affine else []) +
            [node("ln2", "LayerNorm", ["px"] + (["rg", "rb"] if affine else []), copy="ln"),
             comb("out", "ln2", "k")], ["out"], ["d", dim_of("x")],
            [c("less", "k", "rank(x)-$nd")]))
    out.append(rule(
        "softmax_partition", "parallel", "Softmax: split any dim but the normalised one", ["x"],
        [node("sm", "Softmax", ["x"], {"axis": "$a"})], ["sm"],
        [part("px", "x", "k"), node("sm2", "Softmax", ["px"], copy="sm"), comb("out", "sm2", "k")],
        ["out"], ["d", dim_of("x")], [c("not_equal", "k", "$a")]))
    for op in AXIS_OPS:
        out.append(rule(
            f"{op.lower()}_partition", "parallel", f"{op}: split any dim but its axis", ["x"],
            [node("f", op, ["x"], {"axis": "$a"})], ["f"],
            [part("px", "x", "k"), node("f2", op, ["px"], copy="f"), comb("out", "f2", "k")],
            ["out"], ["d", dim_of("x")], [c("not_equal", "k", "$a")]))
    # A kernel choice: the same function, the scores kept on chip (docs/cost-model.md).
    ins = ["q", "k", "v"] + weights
    out.append(rule(
        "fuse_attention", "algebraic",
        "Attention as one fused kernel (FlashAttention): the scores stay on chip, the backward "
        "pass recomputes them, a causal mask skips the blocks it hides", ins,
        [node("mha", "MultiHeadAttention", ins, {"fused": 0})], ["mha"],
        [node("fused", "MultiHeadAttention", ins, {"fused": 1}, copy="mha")], ["fused"]))
    # Megatron-LM's loss over a column-parallel head: no device gathers the logits.
    out.append(rule(
        "cross_entropy_vocab_parallel", "parallel",
        "Vocabulary-parallel cross-entropy (Megatron): split the classes of the logits, each "
        "device's loss is a partial sum over its classes, the labels are read whole",
        ["logits", "labels"],
        [node("loss", "SoftmaxCrossEntropy", ["logits", "labels"], {"vocab_parallel": 0})],
        ["loss"],
        [part("pl", "logits", -1), repl("ry", "labels"),
         node("loss2", "SoftmaxCrossEntropy", ["pl", "ry"], {"vocab_parallel": 1}),
         red("out", "loss2")], ["out"], ["d"]))
    return out


# --- parallel and algebraic: embeddings ---------------------------------------------------------

def embedding():
    out = []
    for op in ("Embedding", "EmbeddingBag"):
        low = "embedding" if op == "Embedding" else "embedding_bag"
        src = [node("emb", op, ["idx", "w"])]
        constraints = [c("less", "k", "rank(idx)")] if op == "Embedding" else [
            c("equal", "k", "0")]
        out.append(rule(
            f"{low}_sample_parallel", "parallel",
            f"{op}: split the samples, replicate the table", ["idx", "w"], src, ["emb"],
            [part("pi", "idx", "k"), repl("rw", "w"), node("emb2", op, ["pi", "rw"], copy="emb"),
             comb("out", "emb2", "k")], ["out"], ["d", dim_of("idx")], constraints))
        out.append(rule(
            f"{low}_column_parallel", "parallel",
            f"{op}: split the table's embedding columns, every device looks up all indices",
            ["idx", "w"], src, ["emb"],
            [repl("ri", "idx"), part("pw", "w", 1), node("emb2", op, ["ri", "pw"], copy="emb"),
             comb("out", "emb2", -1)], ["out"], ["d"]))
        out.append(rule(
            f"{low}_row_parallel", "parallel",
            f"{op}: split the table's rows (how recommendation tables are sharded); each shard "
            "looks up the indices it holds, the partial results are summed",
            ["idx", "w"], src, ["emb"],
            [repl("ri", "idx"), part("pw", "w", 0), node("emb2", op, ["ri", "pw"], copy="emb"),
             red("out", "emb2")], ["out"], ["d"]))
    for agg, reduce_op in (("sum", "ReduceSum"), ("mean", "ReduceMean")):
        attrs = {"num_entries": "$n", "embedding_dim": "$e"}
        out.append(rule(
            f"embedding_bag_{agg}_to_embedding", "algebraic",
            f"EmbeddingBag ({agg}) as Embedding then {reduce_op} over the bag (paper Fig. 16c: the "
            "bag dim becomes parallelisable)", ["idx", "w"],
            [node("bag", "EmbeddingBag", ["idx", "w"], dict(attrs, aggregate=agg))], ["bag"],
            [node("emb", "Embedding", ["idx", "w"], attrs),
             node("agg", reduce_op, ["emb"], {"axes": [1], "keepdims": 0})], ["agg"]))
        if agg == "sum":
            # The two steps as one: on one device the Embedding costs more than the bag (it writes
            # every looked-up row), so a search costing each step never keeps the first.
            out.append(rule(
                "embedding_bag_sum_bag_parallel", "joint",
                "EmbeddingBag (sum) as Embedding over a split bag, summed by ReduceSum and a "
                "Reduce (paper Fig. 16c as one joint step: only an Embedding can split the bag "
                "dim)", ["idx", "w"],
                [node("bag", "EmbeddingBag", ["idx", "w"], dict(attrs, aggregate=agg))], ["bag"],
                [part("pi", "idx", 1), repl("rw", "w"), node("emb", "Embedding", ["pi", "rw"], attrs),
                 node("agg", reduce_op, ["emb"], {"axes": [1], "keepdims": 0}), red("out", "agg")],
                ["out"], ["d"]))
        out.append(rule(
            f"embedding_to_embedding_bag_{agg}", "algebraic",
            f"Embedding then {reduce_op} over dim 1 as one EmbeddingBag", ["idx", "w"],
            [node("emb", "Embedding", ["idx", "w"], attrs),
             node("agg", reduce_op, ["emb"], {"axes": [1], "keepdims": 0})], ["agg"],
            [node("bag", "EmbeddingBag", ["idx", "w"], dict(attrs, aggregate=agg))], ["bag"],
            None, [c("equal", "rank(idx)", "2")]))
    return out


# --- parallel: element-wise operators -----------------------------------------------------------

def elementwise():
    out = []
    for op in UNARY:
        low = op.lower()
        out.append(rule(
            f"{low}_partition", "parallel", f"{op} is element-wise: split any dim", ["x"],
            [node("op", op, ["x"])], ["op"],
            [part("px", "x", "k"), node("op2", op, ["px"], copy="op"), comb("out", "op2", "k")],
            ["out"], ["d", dim_of("x")]))
        out.append(rule(
            f"{low}_after_combine", "parallel",
            f"{op} of a combined tensor: compute it on the pieces, combine after", ["x"],
            [comb("c", "x", "$k", "$d"), node("op", op, ["c"])], ["op"],
            [node("op2", op, ["x"], copy="op"), comb("out", "op2", "$k", "$d")], ["out"]))
    for op in BINARY:
        low = op.lower()
        out.append(rule(
            f"{low}_partition", "parallel", f"{op} of equal shapes: split any dim of both",
            ["a", "b"], [node("op", op, ["a", "b"])], ["op"],
            [part("pa", "a", "k"), part("pb", "b", "k"), node("op2", op, ["pa", "pb"], copy="op"),
             comb("out", "op2", "k")], ["out"], ["d", dim_of("a")],
            [c("equal", "rank(a)", "rank(b)"), c("equal", "size(a,k)", "size(b,k)")]))
        out.append(rule(
            f"{low}_broadcast_partition", "parallel",
            f"{op} with a lower-rank second operand (a bias): split a dim it is broadcast along",
            ["a", "b"], [node("op", op, ["a", "b"])], ["op"],
            [part("pa", "a", "k"), repl("rb", "b"), node("op2", op, ["pa", "rb"], copy="op"),
             comb("out", "op2", "k")], ["out"], ["d", dim_of("a")],
            [c("less", "k", "rank(a)-rank(b)")]))
        out.append(rule(
            f"{low}_after_combine", "parallel",
            f"{op} of two tensors combined alike: compute it on the pieces, combine after",
            ["a", "b"],
            [comb("ca", "a", "$k", "$d"), comb("cb", "b", "$k", "$d"),
             node("op", op, ["ca", "cb"])], ["op"],
            [node("op2", op, ["a", "b"], copy="op"), comb("out", "op2", "$k", "$d")], ["out"]))
    for op in ("Add", "Sub"):
        low = op.lower()
        out.append(rule(
            f"{low}_after_reduce", "parallel",
            f"{op} is linear: sum the partial results once, after the {op.lower()}",
            ["a", "b"],
            [red("ra", "a", "$d"), red("rb", "b", "$d"), node("op", op, ["ra", "rb"])], ["op"],
            [node("op2", op, ["a", "b"], copy="op"), red("out", "op2", "$d")], ["out"]))
    return out


# --- parallel: layout, reductions and losses ---------------------------------------------------

def layout():
    out = [
        rule("concat_partition", "parallel",
             "Concat: split any dim but the concatenated one, on every input", ["xs*"],
             [node("cat", "Concat", ["xs*"], {"axis": "$a"})], ["cat"],
             [part("px", "xs*", "k", foreach="xs*"), node("cat2", "Concat", ["px*"], copy="cat"),
              comb("out", "cat2", "k")], ["out"], ["d", dim_of("cat")],
             [c("not_equal", "k", "$a")]),
        rule("concat_pieces", "parallel",
             "A Concat split along its axis where its inputs meet: each piece is the Concat of "
             "the inputs in it, so no input moves to a device that does not read it", ["xs*"],
             [node("cat", "Concat", ["xs*"], {"axis": "$a"}), part("p", "cat", "$k", "$d")], ["p"],
             [node("cat2", "Concat", ["xs*"], {"axis": "$a", "pieces": "$d"})], ["cat2"], [],
             [c("equal", "$k", "$a")], PIECES_PROVED),
        rule("flatten_sample_parallel", "parallel", "Flatten keeps the leading dim: split it",
             ["x"], [node("fl", "Flatten", ["x"])], ["fl"],
             [part("px", "x", 0), node("fl2", "Flatten", ["px"], copy="fl"),
              comb("out", "fl2", 0)], ["out"], ["d"]),
        rule("reshape_sample_parallel", "parallel",
             "Reshape keeping the leading size: split the leading dim", ["x"],
             [node("rs", "Reshape", ["x"])], ["rs"],
             [part("px", "x", 0), node("rs2", "Reshape", ["px"], copy="rs"),
              comb("out", "rs2", 0)], ["out"], ["d"], [c("equal", "size(x,0)", "size(rs,0)")]),
        rule("softmax_cross_entropy_sample_parallel", "parallel",
             "Softmax cross-entropy per sample: split the samples of logits and labels",
             ["logits", "labels"],
             [node("loss", "SoftmaxCrossEntropy", ["logits", "labels"])], ["loss"],
             [part("pl", "logits", 0), part("py", "labels", 0),
              node("loss2", "SoftmaxCrossEntropy", ["pl", "py"], copy="loss"),
              comb("out", "loss2", 0)], ["out"], ["d"]),
        rule("mse_loss_sample_parallel", "parallel",
             "Mean squared error per sample: split the samples of prediction and target",
             ["p", "t"], [node("loss", "MSELoss", ["p", "t"])], ["loss"],
             [part("pp", "p", 0), part("pt", "t", 0),
              node("loss2", "MSELoss", ["pp", "pt"], copy="loss"), comb("out", "loss2", 0)],
             ["out"], ["d"]),
    ]
    return out


# --- parallel: index operators ------------------------------------------------------------------

def index():
    """TopK, GatherElements, ScatterElements, OneHot, ArgMax, ArgMin read their axis whole: split
    any other dim, alike on every input (core/src/shapes/shape_inference_index.cpp)."""
    out = [rule(
        "topk_partition", "parallel", "TopK: split any dim but its axis (values and indices)",
        ["x"], [node("t", "TopK", ["x"], {"k": "$kk", "axis": "$a"})], ["t", "t:1"],
        [part("px", "x", "k"), node("t2", "TopK", ["px"], copy="t"), comb("v", "t2", "k"),
         comb("i", "t2:1", "k")], ["v", "i"], ["d", dim_of("x")], [c("not_equal", "k", "$a")])]
    for op in ("ArgMax", "ArgMin"):
        out.append(rule(
            f"{op.lower()}_partition", "parallel", f"{op} (keepdims): split any dim but its axis",
            ["x"], [node("f", op, ["x"], {"axis": "$a"})], ["f"],
            [part("px", "x", "k"), node("f2", op, ["px"], copy="f"), comb("out", "f2", "k")],
            ["out"], ["d", dim_of("x")], [c("not_equal", "k", "$a")]))
    out.append(rule(
        "onehot_partition", "parallel", "OneHot: split a dim of the indices before the new axis",
        ["idx"], [node("f", "OneHot", ["idx"], {"depth": "$n", "axis": "$a"})], ["f"],
        [part("pi", "idx", "k"), node("f2", "OneHot", ["pi"], copy="f"), comb("out", "f2", "k")],
        ["out"], ["d", dim_of("idx")], [c("less", "k", "$a")]))
    out.append(rule(
        "gatherelements_partition", "parallel",
        "GatherElements: split a dim other than the axis on data and indices alike",
        ["data", "idx"], [node("f", "GatherElements", ["data", "idx"], {"axis": "$a"})], ["f"],
        [part("pd", "data", "k"), part("pi", "idx", "k"),
         node("f2", "GatherElements", ["pd", "pi"], copy="f"), comb("out", "f2", "k")],
        ["out"], ["d", dim_of("idx")],
        [c("not_equal", "k", "$a"), c("equal", "size(data,k)", "size(idx,k)")]))
    out.append(rule(
        "scatterelements_partition", "parallel",
        "ScatterElements: split a dim other than the axis on data, indices and updates alike",
        ["data", "idx", "upd"],
        [node("f", "ScatterElements", ["data", "idx", "upd"], {"axis": "$a"})], ["f"],
        [part("pd", "data", "k"), part("pi", "idx", "k"), part("pu", "upd", "k"),
         node("f2", "ScatterElements", ["pd", "pi", "pu"], copy="f"), comb("out", "f2", "k")],
        ["out"], ["d", dim_of("data")],
        [c("not_equal", "k", "$a"), c("equal", "size(data,k)", "size(idx,k)")]))
    return out


# --- parallel: algebra of the parallel operators ---------------------------------------------

def parallel_algebra():
    return [
        rule("cancel_combine_partition", "parallel", "Partition undoes the Combine before it",
             ["x"], [comb("c", "x", "$k", "$d"), part("p", "c", "$k", "$d")], ["p"], [], ["x"]),
        rule("cancel_partition_combine", "parallel", "Combine undoes the Partition before it",
             ["x"], [part("p", "x", "$k", "$d"), comb("c", "p", "$k", "$d")], ["c"], [], ["x"]),
        rule("reduce_replicate_allreduce", "parallel",
             "Reduce followed by Replicate is one AllReduce", ["x"],
             [red("r", "x", "$d"), repl("p", "r", "$d")], ["p"],
             [node("ar", "AllReduce", ["x"], {"degree": "$d"})], ["ar"]),
        rule("allreduce_as_reduce_replicate", "parallel",
             "An AllReduce as Reduce then Replicate (to move one of them elsewhere)", ["x"],
             [node("ar", "AllReduce", ["x"], {"degree": "$d"})], ["ar"],
             [red("r", "x", "$d"), repl("p", "r", "$d")], ["p"]),
    ]


# --- parallel: resampling --------------------------------------------------------------------------

def resize():
    out = []
    for dim, what in ((0, "sample"), (1, "channel")):
        out.append(rule(
            f"resize_{what}_parallel", "parallel", f"Resize: split the {what}s (a dim whose size "
            "it keeps; the resized dims stay whole)", ["x"],
            [node("rs", "Resize", ["x"])], ["rs"],
            [part("px", "x", dim), node("rs2", "Resize", ["px"], copy="rs"),
             comb("out", "rs2", dim)], ["out"], ["d"],
            [c("equal", f"size(x,{dim})", f"size(rs,{dim})")]))
    return out


# --- parallel: reductions --------------------------------------------------------------------------

def reduction():
    """Reduction (max, min, prod, l1, l2, sum_square, log_sum, log_sum_exp) keeping its dims: split
    the samples or the channels where it keeps their size (a reduced dim stays whole)."""
    out = []
    for dim, what in ((0, "sample"), (1, "channel")):
        out.append(rule(
            f"reduction_{what}_parallel", "parallel", f"Reduction (keepdims): split the {what}s "
            "(a dim it does not reduce)", ["x"],
            [node("r", "Reduction", ["x"], {"keepdims": 1})], ["r"],
            [part("px", "x", dim), node("r2", "Reduction", ["px"], copy="r"),
             comb("out", "r2", dim)], ["out"], ["d"],
            [c("equal", f"size(x,{dim})", f"size(r,{dim})")]))
    return out


# --- parallel: padding ------------------------------------------------------------------------------

def pad():
    # A dim whose pads are both 0 splits: the size constraint keeps the search from trying padded
    # dims, and Pad's shape inference refuses a split of a dim padded to its own size (pads -1, 1).
    out = []
    for dim, what in ((0, "sample"), (1, "channel")):
        out.append(rule(
            f"pad_{what}_parallel", "parallel", f"Pad: split the {what}s (a dim it does not pad; "
            "the padded dims stay whole)", ["x"],
            [node("pd", "Pad", ["x"])], ["pd"],
            [part("px", "x", dim), node("pd2", "Pad", ["px"], copy="pd"),
             comb("out", "pd2", dim)], ["out"], ["d"],
            [c("equal", f"size(x,{dim})", f"size(pd,{dim})")]))
    # GatherND with one batch dim: the samples split alike on data and indices.
    out.append(rule(
        "gathernd_batch_parallel", "parallel", "GatherND: split the batch dim (batch_dims 1) of "
        "data and indices alike", ["x", "i"],
        [node("g", "GatherND", ["x", "i"], {"batch_dims": 1})], ["g"],
        [part("px", "x", 0), part("pi", "i", 0), node("g2", "GatherND", ["px", "pi"], copy="g"),
         comb("out", "g2", 0)], ["out"], ["d"], []))
    return out


# --- parallel: mixture-of-experts ---------------------------------------------------------------

def experts():
    """The Experts operator (core/src/shapes/shape_inference_experts.cpp): tokens split with the
    experts copied (data parallelism), the experts split over devices with every token copied and
    the outputs summed (expert parallelism), the FFN width split (expert tensor parallelism)."""
    out = []
    for gated in (True, False):
        ws = ["w1", "w2", "w3"] if gated else ["w1", "w2"]
        ins = ["x", "g"] + ws
        s = "" if gated else "_gelu"
        attrs = {"mlp": "swiglu" if gated else "gelu"}
        src = [node("ex", "Experts", ins, attrs)]
        out.append(rule(
            f"experts{s}_token_parallel", "parallel", "Experts: split the tokens (dim 0 of x and "
            "the gates), copy the experts (data parallelism)", ins, src, ["ex"],
            [part("px", "x", 0), part("pg", "g", 0)] + [repl("r" + w, w) for w in ws] +
            [node("ex2", "Experts", ["px", "pg"] + ["r" + w for w in ws], copy="ex"),
             comb("out", "ex2", 0)], ["out"], ["d"]))
        out.append(rule(
            f"experts{s}_expert_parallel", "parallel", "Experts: split the experts over devices "
            "(the gates' last dim, every weight's dim 0), every device reads every token, the "
            "partial outputs summed (expert parallelism)", ins, src, ["ex"],
            [repl("rx", "x"), part("pg", "g", -1)] + [part("p" + w, w, 0) for w in ws] +
            [node("ex2", "Experts", ["rx", "pg"] + ["p" + w for w in ws], copy="ex"),
             red("out", "ex2")], ["out"], ["d"]))
        out.append(rule(
            f"experts{s}_ffn_parallel", "parallel", "Experts: split every expert's FFN width "
            "(w1 and w3 dim 2, w2 dim 1), the partial outputs summed (expert tensor parallelism)",
            ins, src, ["ex"],
            [repl("rx", "x"), repl("rg", "g")] +
            [part("p" + w, w, 1 if w == "w2" else 2) for w in ws] +
            [node("ex2", "Experts", ["rx", "rg"] + ["p" + w for w in ws], copy="ex"),
             red("out", "ex2")], ["out"], ["d"]))
    return out


# --- parallel: multi-head latent attention ---------------------------------------------------------

def latent_attention():
    """LatentAttention (core/src/ops/latent_attention.cpp): the samples split with every weight
    copied; the heads split through the up projections' columns and w_o's rows, the input, the down
    projections and the norms copied to every head block, the outputs summed (Megatron-Core's MLA
    tensor parallelism); one fused kernel for the attention. With query compression (8 inputs)
    and without it (6 inputs, DeepSeek-V2-Lite: "_direct_q")."""
    out = []
    for compressed in (True, False):
        ws = (["wdq", "qn", "wuq", "wdkv", "kvn", "wukv", "wo"] if compressed
              else ["wuq", "wdkv", "kvn", "wukv", "wo"])
        ins = ["x"] + ws
        s = "" if compressed else "_direct_q"
        src = [node("la", "LatentAttention", ins)]
        out.append(rule(
            f"latent_attention{s}_sample_parallel", "parallel",
            "LatentAttention: split the samples, copy every weight", ins, src, ["la"],
            [part("px", "x", 0)] + [repl("r" + w, w) for w in ws] +
            [node("la2", "LatentAttention", ["px"] + ["r" + w for w in ws], copy="la"),
             comb("out", "la2", 0)], ["out"], ["d"]))
        split = {"wuq": 1, "wukv": 1, "wo": 0}
        out.append(rule(
            f"latent_attention{s}_head_parallel", "parallel",
            "LatentAttention head parallelism (Megatron-Core's MLA): split the heads through the up "
            "projections' columns and w_o's rows, copy the input, the down projections and the "
            "norms to every device, the output projection leaves partial sums", ins, src, ["la"],
            [repl("rx", "x")] +
            [part("p" + w, w, split[w]) if w in split else repl("r" + w, w) for w in ws] +
            [node("la2", "LatentAttention",
                  ["rx"] + [("p" if w in split else "r") + w for w in ws], copy="la"),
             red("out", "la2")], ["out"], ["d"]))
        out.append(rule(
            f"fuse_latent_attention{s}", "algebraic",
            "LatentAttention as one fused kernel (FlashAttention): the scores stay on chip, the "
            "backward pass recomputes them, a causal mask skips the blocks it hides", ins,
            [node("la", "LatentAttention", ins, {"fused": 0})], ["la"],
            [node("fused", "LatentAttention", ins, {"fused": 1}, copy="la")], ["fused"]))
    return out


# --- parallel: masks (comparisons, logic, Where, Cast) ---------------------------------------------

def mask():
    """Compare, Logical, Where and Cast are element-wise: a dim every operand has at one size
    splits alike on all of them (core/src/shapes/shape_inference_mask.cpp). Where's masked-fill
    form (a scalar attribute for x or y) and Compare with a scalar have fewer inputs and no rule."""
    out = []
    for op, inputs in (("Compare", ["a", "b"]), ("Logical", ["a", "b"]),
                       ("Where", ["c", "a", "b"])):
        low = op.lower()
        parts = [part("p" + t, t, "k") for t in inputs]
        out.append(rule(
            f"{low}_partition", "parallel",
            f"{op} of operands of one shape: split any dim of all of them", inputs,
            [node("op", op, inputs)], ["op"],
            parts + [node("op2", op, ["p" + t for t in inputs], copy="op"),
                     comb("out", "op2", "k")], ["out"], ["d", dim_of(inputs[0])],
            [cc for t in inputs[1:] for cc in (c("equal", f"rank({t})", f"rank({inputs[0]})"),
                                               c("equal", f"size({t},k)",
                                                 f"size({inputs[0]},k)"))]))
    out.append(rule(
        "cast_partition", "parallel", "Cast is element-wise: split any dim", ["x"],
        [node("op", "Cast", ["x"])], ["op"],
        [part("px", "x", "k"), node("op2", "Cast", ["px"], copy="op"), comb("out", "op2", "k")],
        ["out"], ["d", dim_of("x")]))
    return out


def sliced_operators():
    """The operators of core/src/ops/ with a slice layout (SliceLayout{whole_dims, output_dims}),
    in op_list.h's order, with the number of trailing dims each reads whole."""
    found = {}
    for f in (ROOT / "core/src/ops").glob("*.cpp"):
        text = f.read_text()
        op = re.search(r"define_operator<OpType::(\w+)>", text)
        layout = re.search(r"SliceLayout\{(\d+), (\d+)\}", text)
        if op and layout:
            found[op.group(1)] = int(layout.group(1))
    return [(op, found[op]) for op in LISTED if op in found]


def slices():
    """An operator with a slice layout computes each slice over its input's last dims on its own
    (Random: each element, by its index in the whole tensor; Det: each matrix), so a split of a
    dim before them passes through it (the verifier's axioms say so: axioms_slice.cpp)."""
    out = []
    for op, whole in sliced_operators():
        guard = [c("less", "k", f"rank(x)-{whole}")] if whole else None
        what = "any dim" if not whole else f"any dim but the last {whole}, which it reads whole"
        out.append(rule(
            f"{op.lower()}_partition", "parallel",
            f"{op} computes each slice of its input on its own: split {what}", ["x"],
            [node("op", op, ["x"])], ["op"],
            [part("px", "x", "k"), node("op2", op, ["px"], copy="op"), comb("out", "op2", "k")],
            ["out"], ["d", dim_of("x")], guard))
    return out


def context_parallel():
    """Context parallelism (Llama 3's all-gathered keys and values): the query sequence splits,
    every block of queries attends to the whole keys and values, and the output is the same split
    of the whole attention. The kernels mask and rotate each block at its absolute positions."""
    out = []
    weights = ["wq", "wk", "wv", "wo"]
    for self_attention in (True, False):
        qkv = ["x", "x", "x"] if self_attention else ["q", "k", "v"]
        ins = (["x"] if self_attention else ["q", "k", "v"]) + weights
        s = "self_" if self_attention else ""
        kv = ["x"] if self_attention else ["k", "v"]
        query = "pq" if not self_attention else "px"
        out.append(rule(
            f"{s}attention_context_parallel", "parallel",
            "Context parallelism: split the query sequence, every block of queries attends to "
            "the whole keys and values (replicated, like the projections); causal masks and "
            "rotary embeddings take each block's absolute positions",
            ins, [node("mha", "MultiHeadAttention", qkv + weights)], ["mha"],
            [part(query, qkv[0], 1)] + [repl("r" + t, t) for t in kv] +
            [repl("r" + w, w) for w in weights] +
            [node("mha2", "MultiHeadAttention",
                  [query] + ["r" + t for t in qkv[1:]] + ["r" + w for w in weights], copy="mha"),
             comb("out", "mha2", 1)], ["out"], ["d"]))
    return out


# --- parallel: arithmetic (max, min, sum, mean, prelu, mod, fmod, pow) ------------------------------

def arithmetic():
    """Arithmetic is element-wise over broadcast operands (core/src/ops/arithmetic.cpp): a dim both
    operands have at one size splits alike on both; a dim the second lacks (PRelu's slope [C, 1, 1]
    against x [N, C, H, W]: the samples) splits the first and copies the second to every piece.
    Rules name two operands; a variadic Max, Min, Sum or Mean of three or more has none."""
    return [
        rule("arithmetic_partition", "parallel",
             "Arithmetic of operands of one shape: split any dim of both", ["a", "b"],
             [node("op", "Arithmetic", ["a", "b"])], ["op"],
             [part("pa", "a", "k"), part("pb", "b", "k"),
              node("op2", "Arithmetic", ["pa", "pb"], copy="op"), comb("out", "op2", "k")],
             ["out"], ["d", dim_of("a")],
             [c("equal", "rank(b)", "rank(a)"), c("equal", "size(b,k)", "size(a,k)")]),
        rule("arithmetic_broadcast_partition", "parallel",
             "Arithmetic with a lower-rank second operand (PRelu's slope): split a dim it is "
             "broadcast along, copy it to every piece", ["a", "b"],
             [node("op", "Arithmetic", ["a", "b"])], ["op"],
             [part("pa", "a", "k"), repl("rb", "b"),
              node("op2", "Arithmetic", ["pa", "rb"], copy="op"), comb("out", "op2", "k")],
             ["out"], ["d", dim_of("a")],
             [c("less", "k", "rank(a)-rank(b)")]),
    ]


FAMILIES = {
    "fusion": fusion,
    "dense": dense,
    "convolution": convolution,
    "attention": attention,
    "embedding": embedding,
    "elementwise": elementwise,
    "layout": layout,
    "index": index,
    "parallel_algebra": parallel_algebra,
    "resize": resize,
    "reduction": reduction,
    "pad": pad,
    "experts": experts,
    "latent_attention": latent_attention,
    "mask": mask,
    "arithmetic": arithmetic,
    "context_parallel": context_parallel,
    "slices": slices,
}


def render(rules):
    return json.dumps({"format": "unity-rules", "version": 1, "rules": rules}, indent=1) + "\n"


def main():
    check = "--check" in sys.argv[1:]
    stale = []
    names = set()
    for family, make in FAMILIES.items():
        rules = make()
        for r in rules:
            assert r["name"] not in names, r["name"]
            names.add(r["name"])
        path = ROOT / "rules" / f"{family}.json"
        text = render(rules)
        if check:
            if not path.exists() or path.read_text() != text:
                stale.append(str(path))
        else:
            path.write_text(text)
    if check and stale:
        print("out of date (run scripts/handwritten_rules.py):", *stale, file=sys.stderr)
        return 1
    if not check:
        print(f"wrote {len(names)} rules in {len(FAMILIES)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
