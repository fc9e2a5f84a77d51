#!/usr/bin/python3
"""Writes causal self-attention blocks in the form torch >= 2.0 exports
F.scaled_dot_product_attention (opset 14+, torch/onnx/symbolic_opset14.py), built by hand with the
onnx package because the installed torch (1.13) predates that exporter. The GPT importer tests
(tests/core/test_onnx_gpt_import.cpp) read them.

Run with Debian's python3-onnx:  /usr/bin/python3 make_sdpa_attention.py
The files are committed; rerun this only to change them.

Each model: x [batch, 16, 32] (batch symbolic) -> q/k/v MatMul by [32, 32] weights -> Reshape
[b, 16, 4, 8] -> Transpose to heads -> SDPA -> Transpose -> Reshape [b, 16, 32] -> MatMul w_o ->
Add x (a residual, so the output is read by something other than the graph output).
  sdpa_causal_opset14.onnx     is_causal=True: the scale from Shape(q) (1/sqrt(d)), Sqrt of it
                               multiplying q and k^T each, the causal mask from
                               Expand(1, [Lq, Lk]) -> Trilu(upper=0) -> Where(Equal 0, -inf, 0),
                               Add, Softmax, MatMul v.
  sdpa_bool_mask_opset17.onnx  a boolean attn_mask (a tril initializer [16, 16]) turned into a float
                               mask by Where(mask, 0, -inf), explicit scale 1/sqrt(8), and biases on
                               the projections.
  causal_mask_folding.onnx     the constant ops masks are built from (Range, comparisons, Xor,
                               And, Trilu with k, Tile, ScatterND) and two masked fills.
"""
import math
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
SEQ, EMBED, HEADS = 16, 32, 4
HEAD = EMBED // HEADS
INT64_MAX = 2**63 - 1


class Builder:
    def __init__(self):
        self.nodes, self.inits = [], []
        self.count = 0
        self.rng = np.random.default_rng(0)

    def name(self, op):
        self.count += 1
        return f"/attn/{op}_{self.count}"

    def op(self, op_type, inputs, **attrs):
        name = self.name(op_type)
        out = name + "_output_0"
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=name, **attrs))
        return out

    def const(self, value, dtype=np.int64):
        name = self.name("Constant")
        out = name + "_output_0"
        tensor = numpy_helper.from_array(np.array(value, dtype=dtype), out)
        self.nodes.append(helper.make_node("Constant", [], [out], name=name, value=tensor))
        return out

    def weight(self, name, shape):
        self.inits.append(numpy_helper.from_array(
            (self.rng.standard_normal(shape) * 0.02).astype(np.float32), name))
        return name

    def heads(self, x, perm):
        shape = self.const([0, SEQ, HEADS, HEAD])
        return self.op("Transpose", [self.op("Reshape", [x, shape])], perm=perm)


def sdpa(b, query, key, value, attn_mask=None, is_causal=False, scale=None):
    """symbolic_opset14.scaled_dot_product_attention, op for op."""
    if scale is None:
        # _attention_scale: 1 / sqrt(q.size(-1)) from the query's shape
        shape = b.op("Shape", [query])
        last = b.op("Slice", [shape, b.const([-1]), b.const([INT64_MAX])])
        size = b.op("Cast", [last], to=TensorProto.FLOAT)
        scale = b.op("Div", [b.const([1.0], np.float32), b.op("Sqrt", [size])])
        scale = b.op("Cast", [scale], to=TensorProto.FLOAT)
    else:
        scale = b.const(scale, np.float32)
    if is_causal:
        # _causal_attention_mask
        q_shape, k_shape = b.op("Shape", [query]), b.op("Shape", [key])
        target = b.op("Slice", [q_shape, b.const([-2]), b.const([-1])])
        source = b.op("Slice", [k_shape, b.const([-2]), b.const([-1])])
        size = b.op("Concat", [target, source], axis=0)
        ones = b.op("Expand", [b.const([1.0], np.float32), size])
        lower = b.op("Trilu", [ones], upper=0)
        zero, neg_inf = b.const([0.0], np.float32), b.const([-np.inf], np.float32)
        attn_mask = b.op("Where", [b.op("Equal", [lower, zero]), neg_inf, zero])
    key_t = b.op("Transpose", [key], perm=[0, 1, 3, 2])
    root = b.op("Sqrt", [scale])
    scores = b.op("MatMul", [b.op("Mul", [query, root]), b.op("Mul", [key_t, root])])
    if attn_mask is not None:
        if attn_mask.endswith("bool"):
            attn_mask = b.op("Where", [attn_mask, b.const([0.0], np.float32),
                                       b.const([-np.inf], np.float32)])
        scores = b.op("Add", [scores, attn_mask])
    return b.op("MatMul", [b.op("Softmax", [scores], axis=-1), value])


def block(path, opset, causal, bias):
    b = Builder()
    x = "x"

    def project(which):
        y = b.op("MatMul", [x, b.weight(f"w_{which}", [EMBED, EMBED])])
        if bias:
            y = b.op("Add", [b.weight(f"b_{which}", [EMBED]), y])
        return y

    q = b.heads(project("q"), [0, 2, 1, 3])
    k = b.heads(project("k"), [0, 2, 1, 3])
    v = b.heads(project("v"), [0, 2, 1, 3])
    if causal:
        attended = sdpa(b, q, k, v, is_causal=True)
    else:
        mask = "causal_mask_bool"
        b.inits.append(numpy_helper.from_array(np.tril(np.ones((SEQ, SEQ), dtype=bool)), mask))
        attended = sdpa(b, q, k, v, attn_mask=mask, scale=1.0 / math.sqrt(HEAD))
    merged = b.op("Reshape", [b.op("Transpose", [attended], perm=[0, 2, 1, 3]),
                              b.const([0, SEQ, EMBED])])
    y = project_out = b.op("MatMul", [merged, b.weight("w_o", [EMBED, EMBED])])
    if bias:
        y = b.op("Add", [project_out, b.weight("b_o", [EMBED])])
    y = b.op("Add", [x, y])
    graph = helper.make_graph(
        b.nodes, "attention",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", SEQ, EMBED])],
        [helper.make_tensor_value_info(y, TensorProto.FLOAT, ["batch", SEQ, EMBED])], b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="make_sdpa_attention.py")
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, os.path.join(HERE, path))
    print(f"{path}: {os.path.getsize(os.path.join(HERE, path))} bytes")


def mask_folding(path):
    """A causal mask from arange comparisons, Trilu with k, Xor/And, Tile and ScatterND (all
    folded), used by two masked fills of x: Where(mask, -inf, x) -> Softmax (an additive mask) and
    Where(mask, 0.5, x) (x * keep + 0.5 * mask)."""
    b = Builder()
    r = b.op("Range", [b.const(0), b.const(4), b.const(1)])
    rows = b.op("Unsqueeze", [r, b.const([1])])
    cols = b.op("Unsqueeze", [r, b.const([0])])
    future = b.op("Greater", [cols, rows])
    check = b.op("Xor", [future, b.op("LessOrEqual", [cols, rows])])  # all true
    ones = b.op("ConstantOfShape", [b.const([4, 4])],
                value=numpy_helper.from_array(np.array([1.0], dtype=np.float32)))
    upper = b.op("Cast", [b.op("Trilu", [ones, b.const(1)], upper=1)], to=TensorProto.BOOL)
    both = b.op("And", [b.op("And", [future, check]), upper])
    as_float = b.op("Unsqueeze", [b.op("Cast", [both], to=TensorProto.FLOAT), b.const([0])])
    tiled = b.op("Tile", [as_float, b.const([2, 1, 1])])
    # Writes a 1 where there is one already: the mask stays causal.
    scattered = b.op("ScatterND", [tiled, b.const([[1, 0, 3]]), b.const([1.0], np.float32)])
    mask = b.op("Cast", [scattered], to=TensorProto.BOOL)
    probs = b.op("Softmax", [b.op("Where", [mask, b.const(-np.inf, np.float32), "x"])], axis=-1)
    filled = b.op("Where", [mask, b.const(0.5, np.float32), "x"])
    graph = helper.make_graph(
        b.nodes, "mask_folding",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 4])],
        [helper.make_tensor_value_info(probs, TensorProto.FLOAT, [2, 4, 4]),
         helper.make_tensor_value_info(filled, TensorProto.FLOAT, [2, 4, 4])], b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)],
                              producer_name="make_sdpa_attention.py")
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, os.path.join(HERE, path))
    print(f"{path}: {os.path.getsize(os.path.join(HERE, path))} bytes")


if __name__ == "__main__":
    block("sdpa_causal_opset14.onnx", 14, causal=True, bias=False)
    block("sdpa_bool_mask_opset17.onnx", 17, causal=False, bias=True)
    mask_folding("causal_mask_folding.onnx")
