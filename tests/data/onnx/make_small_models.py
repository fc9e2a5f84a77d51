#!/usr/bin/python3
"""Writes the small ONNX models the importer tests read (tests/core/test_onnx_import.cpp).

Run with Debian's python3-torch and python3-onnx:  /usr/bin/python3 make_small_models.py
The files are committed, so the tests do not need torch; rerun this only to change them.
"""
import os
import warnings

import onnx
import torch
import torch.nn as nn
from onnx import TensorProto, helper

warnings.filterwarnings("ignore")  # torch's exporter warns about every traced shape
HERE = os.path.dirname(os.path.abspath(__file__))


def export(model, args, name, opset=13, **kwargs):
    path = os.path.join(HERE, name)
    torch.onnx.export(model.eval(), args, path, opset_version=opset, **kwargs)
    print(f"{name}: {os.path.getsize(path)} bytes")


def mlp():
    # Two nn.Linear on a 2-D input: Gemm (transB=1) + Relu + Gemm.
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    export(model, (torch.randn(4, 8),), "mlp.onnx", input_names=["x"], output_names=["y"])


def cnn():
    # TrainingMode.PRESERVE keeps BatchNormalization nodes (the default eval export folds them
    # itself), so the importer's own Conv+BN folding is exercised.
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))
    export(model, (torch.randn(2, 3, 16, 16),), "cnn.onnx", input_names=["image"],
           output_names=["logits"], training=torch.onnx.TrainingMode.PRESERVE)


def transformer(opset):
    # Opset 13 decomposes LayerNorm (ReduceMean, Sub, Pow, ...) and GELU (Div, Erf, Add, Mul, Mul);
    # opset 17 emits LayerNormalization. The batch is dynamic, so the attention reshapes are
    # Shape/Gather/Concat arithmetic that the importer must fold.
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32,
                                       activation="gelu", batch_first=True)
    export(layer, (torch.randn(2, 5, 16),), f"transformer_opset{opset}.onnx", opset=opset,
           input_names=["x"], output_names=["y"], dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})


class Bag(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(50, 8)
        self.fc = nn.Linear(8, 4)

    def forward(self, ids):
        return self.fc(self.embedding(ids).mean(dim=1))


def embedding():
    # int64 token ids -> Gather on a weight (Embedding) -> ReduceMean -> Gemm.
    export(Bag(), (torch.randint(0, 50, (2, 6)),), "embedding.onnx", input_names=["ids"],
           output_names=["y"])


def save(graph, name, opset=13):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(model)
    path = os.path.join(HERE, name)
    onnx.save(model, path)
    print(f"{name}: {os.path.getsize(path)} bytes")


def unsupported():
    # Two operator types we do not support, TopK twice: the error must list both types.
    nodes = [
        helper.make_node("Relu", ["scores"], ["relu_out"], name="relu_0"),
        helper.make_node("TopK", ["relu_out", "k"], ["top_values", "top_indices"], name="topk_3"),
        helper.make_node("TopK", ["relu_out", "k"], ["top_values2", "top_indices2"], name="topk_4"),
        helper.make_node("NonMaxSuppression", ["boxes", "scores3"], ["selected"], name="nms_1"),
    ]
    graph = helper.make_graph(
        nodes, "unsupported",
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 10]),
         helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [1, 10, 4]),
         helper.make_tensor_value_info("scores3", TensorProto.FLOAT, [1, 1, 10])],
        [helper.make_tensor_value_info("top_values", TensorProto.FLOAT, [1, 3]),
         helper.make_tensor_value_info("top_values2", TensorProto.FLOAT, [1, 3]),
         helper.make_tensor_value_info("selected", TensorProto.INT64, [3, 3])],
        initializer=[helper.make_tensor("k", TensorProto.INT64, [1], [3])])
    save(graph, "unsupported_ops.onnx")


def data_dependent_op():
    # NonZero: how many indices it returns depends on the values, so Unity refuses it as out of
    # scope, with the reason (core/src/onnx/onnx_operator_scope.cpp).
    nodes = [
        helper.make_node("Relu", ["x"], ["relu_out"], name="relu_0"),
        helper.make_node("NonZero", ["relu_out"], ["indices"], name="nonzero_1"),
    ]
    graph = helper.make_graph(
        nodes, "data_dependent",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("indices", TensorProto.INT64, [2, None])])
    save(graph, "data_dependent_op.onnx")


def asymmetric_padding():
    # pads = [top, left, bottom, right] = [0, 0, 1, 1]: TF-style SAME padding we cannot express.
    weight = helper.make_tensor("w", TensorProto.FLOAT, [4, 3, 3, 3], [0.0] * 108)
    conv = helper.make_node("Conv", ["x", "w"], ["y"], name="conv_same", pads=[0, 0, 1, 1],
                            strides=[2, 2])
    graph = helper.make_graph(
        [conv], "asymmetric",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 4, 4])], initializer=[weight])
    save(graph, "asymmetric_padding.onnx")


def pooling_variants():
    # Opset 11: a zero Pad folded into AveragePool, a ceil_mode MaxPool, Clip(min=0) as Relu.
    zero = helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0])
    pads = helper.make_tensor("pads", TensorProto.INT64, [8], [0, 0, 1, 1, 0, 0, 1, 1])
    nodes = [
        helper.make_node("Pad", ["x", "pads"], ["padded"], name="pad", mode="constant"),
        helper.make_node("AveragePool", ["padded"], ["avg"], name="avg_pool", kernel_shape=[3, 3]),
        helper.make_node("MaxPool", ["avg"], ["max"], name="max_pool", kernel_shape=[2, 2],
                         strides=[2, 2], ceil_mode=1),
        helper.make_node("Clip", ["max", "zero"], ["clipped"], name="clip"),
        helper.make_node("Flatten", ["clipped"], ["flat"], name="flatten", axis=1),
        helper.make_node("Softmax", ["flat"], ["y"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes, "pooling_variants",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 9, 9])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 100])], initializer=[zero, pads])
    save(graph, "pooling_variants.onnx", opset=11)


def layout_ops():
    # Opset 13 layout and arithmetic: Split (sizes input), Unsqueeze/Squeeze, Slice and Gather of an
    # activation, Reshape with 0 and -1, Transpose, scalar Sub/Div with the constant first, Pow, Neg,
    # and a Shape -> Gather -> Unsqueeze -> Concat chain feeding a Reshape.
    ints = lambda name, values: helper.make_tensor(name, TensorProto.INT64, [len(values)], values)
    scalar = lambda name, value: helper.make_tensor(name, TensorProto.FLOAT, [], [value])
    nodes = [
        helper.make_node("Split", ["x", "split_sizes"], ["a", "b"], name="split", axis=1),
        helper.make_node("Unsqueeze", ["a", "axis0"], ["a4"], name="unsqueeze"),
        helper.make_node("Squeeze", ["a4", "axis0"], ["a3"], name="squeeze"),
        helper.make_node("Slice", ["b", "starts", "ends", "axes1"], ["b_mid"], name="slice"),
        helper.make_node("Concat", ["a3", "b_mid"], ["ab"], name="concat", axis=1),
        helper.make_node("Gather", ["ab", "index0"], ["first"], name="gather_first", axis=2),
        helper.make_node("Sub", ["one", "first"], ["one_minus"], name="one_minus"),
        helper.make_node("Div", ["two", "one_minus"], ["ratio"], name="ratio"),
        helper.make_node("Pow", ["ratio", "two"], ["squared"], name="square"),
        helper.make_node("Neg", ["squared"], ["negated"], name="negate"),
        helper.make_node("Shape", ["negated"], ["shape"], name="shape"),
        helper.make_node("Gather", ["shape", "index0"], ["batch"], name="batch_dim", axis=0),
        helper.make_node("Unsqueeze", ["batch", "axis0"], ["batch1"], name="batch_1d"),
        helper.make_node("Concat", ["batch1", "minus_one"], ["target"], name="target", axis=0),
        helper.make_node("Reshape", ["negated", "target"], ["flat"], name="reshape"),
        helper.make_node("Reshape", ["flat", "zero_two"], ["pairs"], name="reshape_pairs"),
        helper.make_node("Transpose", ["pairs"], ["y"], name="transpose", perm=[0, 2, 1]),
    ]
    graph = helper.make_graph(
        nodes, "layout_ops",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2, 2])],
        initializer=[ints("split_sizes", [2, 4]), ints("axis0", [0]), ints("starts", [1]),
                     ints("ends", [3]), ints("axes1", [1]),
                     helper.make_tensor("index0", TensorProto.INT64, [], [0]),
                     scalar("one", 1.0), scalar("two", 2.0), ints("minus_one", [-1]),
                     ints("zero_two", [0, 2, -1])])
    save(graph, "layout_ops.onnx")


def activations():
    # The activations of torch.nn between two Linear layers, each as torch exports it: most are
    # one ONNX operator (LeakyRelu, Elu, Selu, Celu, HardSigmoid, HardSwish, Softplus, Sin),
    # Mish is Softplus, Tanh and Mul, Softsign is Abs, Add and Div.
    class Activations(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(8, 16)
            self.b = nn.Linear(16, 4)

        def forward(self, x):
            h = self.a(x)
            f = nn.functional
            h = (f.leaky_relu(h, 0.1) + f.elu(h) + f.selu(h) + f.celu(h, 0.5) + f.hardsigmoid(h)
                 + f.hardswish(h) + f.softplus(h) + f.mish(h) + torch.sin(h) + f.softsign(h))
            return self.b(h)

    export(Activations(), (torch.randn(4, 8),), "activations.onnx", opset=17, input_names=["x"],
           output_names=["y"])


def unrolled_control_flow():
    # torch.repeat_interleave as torch exports it where it does not know the repeated dim's size:
    # the pieces of x along axis 1 in a sequence, a Loop that expands each and inserts it into
    # another sequence, the sequence concatenated; an If on a constant; a scan output of the Loop.
    # Unity unrolls the Loop and inlines the branch (onnx_ops_control_flow.cpp):
    #   y = relu(repeat_interleave(x, 2, dim=1)) [2, 6, 4],  z = x + stack(x's pieces) = 2x.
    def const(name, values, dtype=TensorProto.INT64, dims=None):
        dims = [len(values)] if dims is None else dims
        return helper.make_node("Constant", [], [name], name=name,
                                value=helper.make_tensor(name + "_t", dtype, dims, values))

    body = helper.make_graph(
        [helper.make_node("SequenceAt", ["r_seq", "i"], ["r"]),
         helper.make_node("SequenceAt", ["x_seq", "i"], ["xi"]),
         const("axis2", [2]),
         helper.make_node("Unsqueeze", ["xi", "axis2"], ["xu"]),
         const("head", [2, 1]),
         const("tail", [4]),
         helper.make_node("Concat", ["head", "r", "tail"], ["target"], axis=0),
         helper.make_node("Expand", ["xu", "target"], ["expanded"]),
         const("merged", [0, -1, 4]),
         helper.make_node("Reshape", ["expanded", "merged"], ["piece"]),
         helper.make_node("SequenceInsert", ["acc", "piece"], ["acc_out"]),
         helper.make_node("Identity", ["cond"], ["cond_out"]),
         helper.make_node("Identity", ["xi"], ["scanned"])],
        "repeat_body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
         helper.make_tensor_sequence_value_info("acc", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_sequence_value_info("acc_out", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("scanned", TensorProto.FLOAT, None)])
    then_branch = helper.make_graph(
        [helper.make_node("Relu", ["repeated"], ["then_out"])], "then",
        [], [helper.make_tensor_value_info("then_out", TensorProto.FLOAT, None)])
    else_branch = helper.make_graph(
        [helper.make_node("Neg", ["repeated"], ["else_out"])], "else",
        [], [helper.make_tensor_value_info("else_out", TensorProto.FLOAT, None)])
    nodes = [
        const("trips", [3]),
        const("repeats", [2, 2, 2]),
        const("ones", [1, 1, 1]),
        helper.make_node("SplitToSequence", ["repeats", "ones"], ["r_seq"], axis=0),
        helper.make_node("SplitToSequence", ["x", "ones"], ["x_seq"], axis=1),
        const("true", [1], TensorProto.BOOL, []),
        helper.make_node("SequenceEmpty", [], ["empty"], dtype=TensorProto.FLOAT),
        helper.make_node("Loop", ["trips", "true", "empty"], ["pieces", "stacked"], name="repeat",
                         body=body),
        helper.make_node("ConcatFromSequence", ["pieces"], ["repeated"], axis=1),
        helper.make_node("If", ["true"], ["y"], name="branch", then_branch=then_branch,
                         else_branch=else_branch),
        const("perm_shape", [2, 3, 4]),
        helper.make_node("Transpose", ["stacked"], ["stacked_t"], perm=[1, 0, 2, 3]),
        helper.make_node("Reshape", ["stacked_t", "perm_shape"], ["again"]),
        helper.make_node("Add", ["x", "again"], ["z"]),
    ]
    graph = helper.make_graph(
        nodes, "unrolled_control_flow",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 6, 4]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 3, 4])])
    save(graph, "unrolled_control_flow.onnx", opset=14)


def llama_attention():
    # Llama's attention in plain PyTorch: grouped-query (4 query heads over 2 key/value heads,
    # repeated with Hugging Face's repeat_kv), rotary embeddings of base 500000 (Llama 3's) in
    # the rotate_half form, a causal mask added to the scores. The importer makes it one
    # MultiHeadAttention (attention_fusion.cpp). With interleaved=True the rotation pairs
    # neighbouring elements (GPT-J's form), which MultiHeadAttention's rotary is not: it stays in
    # pieces.
    class Attention(nn.Module):
        def __init__(self, interleaved):
            super().__init__()
            self.interleaved = interleaved
            self.wq = nn.Linear(16, 16, bias=False)
            self.wk = nn.Linear(16, 8, bias=False)
            self.wv = nn.Linear(16, 8, bias=False)
            self.wo = nn.Linear(16, 16, bias=False)
            inv = 1.0 / (500000 ** (torch.arange(0, 4, 2).float() / 4))
            angles = torch.outer(torch.arange(6).float(), inv)
            angles = (torch.repeat_interleave(angles, 2, dim=-1) if interleaved
                      else torch.cat((angles, angles), dim=-1))
            self.register_buffer("cos", angles.cos())
            self.register_buffer("sin", angles.sin())

        def rotate(self, x):
            x1, x2 = x.chunk(2, dim=-1)
            return torch.cat((-x2, x1), dim=-1)

        def forward(self, x):
            b, s = x.shape[0], 6
            q = self.wq(x).view(b, s, 4, 4).transpose(1, 2)
            k = self.wk(x).view(b, s, 2, 4).transpose(1, 2)
            v = self.wv(x).view(b, s, 2, 4).transpose(1, 2)
            q = q * self.cos + self.rotate(q) * self.sin
            k = k * self.cos + self.rotate(k) * self.sin
            k = k[:, :, None, :, :].expand(b, 2, 2, s, 4).reshape(b, 4, s, 4)
            v = v[:, :, None, :, :].expand(b, 2, 2, s, 4).reshape(b, 4, s, 4)
            mask = torch.full((s, s), float("-inf")).triu(1)
            p = torch.softmax(q @ k.transpose(-2, -1) / 2.0 + mask, dim=-1)
            return self.wo((p @ v).transpose(1, 2).reshape(b, s, 16))

    for interleaved in (False, True):
        name = "llama_attention_interleaved.onnx" if interleaved else "llama_attention.onnx"
        export(Attention(interleaved), (torch.randn(2, 6, 16),), name, opset=14,
               input_names=["x"], output_names=["y"], dynamic_axes={"x": {0: "batch"}})
def resize_variants():
    # F.interpolate(size=...) as torchvision's segmentation heads export it: the sizes computed from
    # the input's shape (Shape, Gather, Cast, Mul, Concat), then a nearest upsampling by scales, and
    # a Resize of every dim to its own size (nothing).
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4, 5])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 16, 30])
    c = lambda name, values, t=TensorProto.INT64: helper.make_tensor(name, t, [len(values)], values)
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "hw_index"], ["hw"], axis=0),
        helper.make_node("Cast", ["hw"], ["hw_f"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["hw_f", "two"], ["hw2_f"]),
        helper.make_node("Cast", ["hw2_f"], ["hw2"], to=TensorProto.INT64),
        helper.make_node("Slice", ["shape", "zero", "two_i"], ["nc"]),
        helper.make_node("Concat", ["nc", "hw2"], ["sizes"], axis=0),
        helper.make_node("Resize", ["x", "", "", "sizes"], ["up"], name="bilinear", mode="linear",
                         coordinate_transformation_mode="pytorch_half_pixel"),
        helper.make_node("Resize", ["up", "", "scales"], ["up2"], name="nearest", mode="nearest",
                         coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
        helper.make_node("Resize", ["up2", "", "ones"], ["y"], name="same"),
    ]
    graph = helper.make_graph(nodes, "resize_variants", [x], [y], initializer=[
        c("hw_index", [2, 3]), c("two", [2.0], TensorProto.FLOAT), c("zero", [0]),
        c("two_i", [2]), c("scales", [1.0, 1.0, 2.0, 3.0], TensorProto.FLOAT),
        c("ones", [1.0, 1.0, 1.0, 1.0], TensorProto.FLOAT)])
    save(graph, "resize_variants.onnx")
    # tf_crop_and_resize reads a region of interest: refused, naming the node.
    nodes = [helper.make_node("Resize", ["x", "roi", "", "sizes"], ["y"], name="crop",
                              mode="linear", coordinate_transformation_mode="tf_crop_and_resize")]
    graph = helper.make_graph(nodes, "resize_crop", [x], [y], initializer=[
        c("roi", [0, 0, 0.2, 0.2, 1, 1, 0.8, 0.8], TensorProto.FLOAT), c("sizes", [2, 3, 3, 3])])
    save(graph, "resize_crop.onnx")


def pad_variants():
    # Pads that are operators of their own: reflect, a constant 0.5 that crops W by one at the end
    # (negative pads), edge; then an edge Pad that crops, refused (cropping is constant mode only).
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4, 5])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 9, 9])
    c = lambda name, values, t=TensorProto.INT64: helper.make_tensor(name, t, [len(values)], values)
    nodes = [
        helper.make_node("Pad", ["x", "p1"], ["a"], name="reflect", mode="reflect"),
        helper.make_node("Pad", ["a", "p2", "half"], ["b"], name="crop"),
        helper.make_node("Pad", ["b", "p3"], ["y"], name="edge", mode="edge"),
    ]
    graph = helper.make_graph(nodes, "pad_variants", [x], [y], initializer=[
        c("p1", [0, 0, 1, 2, 0, 0, 1, 2]), c("p2", [0, 0, 1, 0, 0, 0, 0, -1]),
        c("half", [0.5], TensorProto.FLOAT), c("p3", [0, 0, 0, 0, 0, 0, 2, 1])])
    save(graph, "pad_variants.onnx")
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 4, 4])
    nodes = [helper.make_node("Pad", ["x", "p"], ["y"], name="edge_crop", mode="edge")]
    graph = helper.make_graph(nodes, "pad_edge_crop", [x], [y],
                              initializer=[c("p", [0, 0, 0, 0, 0, 0, 0, -1])])
    save(graph, "pad_edge_crop.onnx")


class PaddingMaskAttention(nn.Module):
    """A classifier over token ids whose attention mask is computed from the ids: positions holding
    the padding id 0 are hidden from every query (masked_fill of the scores) and left out of the
    pooled sum. The mask is an activation (Equal/Not of the input, Where, Cast), not a constant."""

    def __init__(self, vocab=20, hidden=16, heads=2, classes=3):
        super().__init__()
        self.heads = heads
        self.embedding = nn.Embedding(vocab, hidden)
        self.q = nn.Linear(hidden, hidden)
        self.k = nn.Linear(hidden, hidden)
        self.v = nn.Linear(hidden, hidden)
        self.o = nn.Linear(hidden, hidden)
        self.head = nn.Linear(hidden, classes)

    def forward(self, ids):
        n, s = ids.shape
        keep = ids != 0
        x = self.embedding(ids)
        d = x.shape[-1] // self.heads
        q = self.q(x).view(n, s, self.heads, d).transpose(1, 2)
        k = self.k(x).view(n, s, self.heads, d).transpose(1, 2)
        v = self.v(x).view(n, s, self.heads, d).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / d ** 0.5
        scores = scores.masked_fill(~keep[:, None, None, :], float("-inf"))
        context = (scores.softmax(-1) @ v).transpose(1, 2).reshape(n, s, -1)
        y = x + self.o(context)
        pooled = (y * keep.unsqueeze(-1).float()).sum(1)
        return self.head(pooled)


def padding_mask_attention():
    torch.manual_seed(0)
    ids = torch.randint(0, 20, (4, 8))
    export(PaddingMaskAttention(), (ids,), "padding_mask_attention.onnx", opset=14,
           input_names=["input_ids"], output_names=["logits"])


class SuperResolution(nn.Module):
    """ESPCN (Shi et al. 2016) at toy size, with the other layout operators of its kind: the image
    folded into channels (PixelUnshuffle), a convolution, AlexNet's LocalResponseNorm, a
    sub-pixel convolution out to 2 x 2 channels per pixel and PixelShuffle back to the image. A
    tiled skip adds the input's mean image to every output channel, and the triangle of each image
    is kept (torch.triu). torch exports PixelShuffle as DepthToSpace (CRD), PixelUnshuffle as a
    Reshape/Transpose/Reshape, LocalResponseNorm as its pieces (the model's own LRN node is in
    lrn_espcn below), repeat as Tile and triu as Trilu."""

    def __init__(self, lrn=False):
        super().__init__()
        self.unshuffle = nn.PixelUnshuffle(2)
        self.conv1 = nn.Conv2d(4, 8, 3, padding=1)
        self.norm = nn.LocalResponseNorm(3) if lrn else nn.Identity()
        self.conv2 = nn.Conv2d(8, 4, 3, padding=1)
        self.shuffle = nn.PixelShuffle(2)

    def forward(self, x):
        h = torch.tanh(self.conv1(self.unshuffle(x)))
        y = self.shuffle(self.conv2(self.norm(h)))
        skip = x.mean(1, keepdim=True).repeat(1, 2, 1, 1)
        return torch.triu(y + skip, 1)


def super_resolution():
    torch.manual_seed(0)
    export(SuperResolution(), (torch.randn(2, 1, 8, 8),), "pixel_shuffle.onnx", opset=14,
           input_names=["image"], output_names=["y"])
    # nn.LocalResponseNorm exports as Pow/Pad/AvgPool pieces; ONNX's own LRN node instead, as
    # Caffe2 and TensorFlow converters write it for AlexNet and GoogLeNet.
    torch.manual_seed(0)
    path = os.path.join(HERE, "pixel_shuffle.onnx")
    model = onnx.load(path)
    graph = model.graph
    conv = next(n for n in graph.node if n.op_type == "Tanh")
    lrn = helper.make_node("LRN", [conv.output[0]], ["lrn_out"], name="lrn", size=3,
                           alpha=1e-2, beta=0.75, bias=1.0)
    for n in graph.node:
        for i, name in enumerate(n.input):
            if name == conv.output[0]:
                n.input[i] = "lrn_out"
    index = list(graph.node).index(conv)
    graph.node.insert(index + 1, lrn)
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(HERE, "lrn_espcn.onnx"))
    print(f"lrn_espcn.onnx: {os.path.getsize(os.path.join(HERE, 'lrn_espcn.onnx'))} bytes")


def arithmetic():
    # nn.PReLU (a slope per channel, exported [C, 1, 1]), torch.maximum and torch.minimum of two
    # activations, and torch.pow with a computed exponent: PRelu, Max, Min and Pow, each one
    # Arithmetic node (core/src/ops/arithmetic.cpp).
    class Arithmetic(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, padding=1)
            self.prelu = nn.PReLU(4, init=0.2)
            self.gate = nn.Conv2d(3, 4, 1)
            self.fc = nn.Linear(4 * 6 * 6, 5)

        def forward(self, x):
            h = self.prelu(self.conv(x))
            g = self.gate(x)
            h = torch.maximum(h, g) + torch.minimum(h, 0.5 * g)
            h = torch.pow(torch.sigmoid(g) + 0.5, torch.tanh(h))
            return self.fc(h.flatten(1))

    torch.manual_seed(0)
    export(Arithmetic(), (torch.randn(2, 3, 6, 6),), "arithmetic.onnx", opset=13,
           input_names=["x"], output_names=["y"])


def own_loss():
    # Training exports that end in their own loss, a 0-d value: torch's cross_entropy with
    # ignore_index over a small CNN (ONNX SoftmaxCrossEntropyLoss, mean over the labels it does not
    # ignore) and a regression's mean squared error written out ((y - t) ** 2).mean(). Unity
    # trains that value as it is, attaching no loss of its own.
    import torch.nn.functional as F

    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            self.fc = nn.Linear(8, 5)

        def forward(self, image, label):
            h = torch.relu(self.conv(image)).mean((2, 3))
            return F.cross_entropy(self.fc(h), label, ignore_index=2)

    class Regression(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(16, 32)
            self.fc2 = nn.Linear(32, 4)

        def forward(self, x, target):
            return ((self.fc2(torch.tanh(self.fc1(x))) - target) ** 2).mean()

    torch.manual_seed(0)
    export(Classifier(), (torch.randn(4, 3, 8, 8), torch.randint(0, 5, (4,))), "cnn_own_loss.onnx",
           opset=17, input_names=["image", "label"], output_names=["loss"])
    export(Regression(), (torch.randn(4, 16), torch.randn(4, 4)), "mlp_own_loss.onnx", opset=17,
           input_names=["x", "target"], output_names=["loss"])


def grid_sample_warp():
    # A warp as optical-flow and spatial-transformer networks train one: a convolution predicts a
    # displacement per pixel, added to the identity grid, and F.grid_sample (bilinear, border
    # padding) resamples the image there; a convolution after it. torch exports grid_sample at
    # opset 16 as one GridSample node, which Unity imports as GatherElements and arithmetic.
    import torch.nn.functional as F

    class Warp(nn.Module):
        def __init__(self):
            super().__init__()
            self.flow = nn.Conv2d(3, 2, 3, padding=1)
            self.head = nn.Conv2d(3, 4, 3, padding=1)
            ys, xs = torch.meshgrid(torch.linspace(-1, 1, 8), torch.linspace(-1, 1, 8),
                                    indexing="ij")
            self.register_buffer("identity", torch.stack([xs, ys], -1)[None])

        def forward(self, image):
            flow = 0.25 * torch.tanh(self.flow(image)).permute(0, 2, 3, 1)
            warped = F.grid_sample(image, self.identity + flow, mode="bilinear",
                                   padding_mode="border", align_corners=False)
            return self.head(warped)

    torch.manual_seed(0)
    export(Warp(), (torch.randn(2, 3, 8, 8),), "grid_sample_warp.onnx", opset=16,
           input_names=["image"], output_names=["y"])


def save_node_test(name, model, inputs, outputs):
    # One node test in ONNX's layout: node/NAME/model.onnx and test_data_set_0/input_K.pb and
    # output_K.pb, each (tensor name, numpy value).
    from onnx import numpy_helper

    folder = os.path.join(HERE, "node", name)
    data = os.path.join(folder, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(folder, "model.onnx"))
    for kind, values in (("input", inputs), ("output", outputs)):
        for index, (tensor, value) in enumerate(values):
            with open(os.path.join(data, f"{kind}_{index}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(value, tensor).SerializeToString())
    print(f"node/{name}: {os.path.getsize(os.path.join(folder, 'model.onnx'))} bytes")


def node_tests():
    # Unity's own node tests, in the layout of ONNX's (node/NAME/model.onnx and test_data_set_0 with
    # the inputs and expected outputs, computed here with numpy): operators and forms that ONNX's
    # suite feeds only as inputs or constants, or does not test. test_unity_masks_and_casts: NaN and
    # infinity masks (IsNaN, IsInf), a masked fill, CastLike to int64 and back (truncation), and a
    # Reshape to the width of a product computed only for its Shape (which then must not stay in
    # the graph as an extra output).
    import numpy as np
    from onnx import numpy_helper

    name = "test_unity_masks_and_casts"
    x = np.array([[1.5, -2.25, np.nan, 4.0, np.inf, 0.5],
                  [-np.inf, 3.75, -1.5, 2.0, 7.25, -0.75],
                  [0.25, np.nan, 5.5, -3.25, 1.0, 2.5],
                  [6.0, -4.5, np.inf, 0.75, -2.0, 3.0]], dtype=np.float32)
    nodes = [
        helper.make_node("IsNaN", ["x"], ["nan"]),
        helper.make_node("IsInf", ["x"], ["inf"]),
        helper.make_node("Or", ["nan", "inf"], ["bad"]),
        helper.make_node("Where", ["bad", "zero", "x"], ["clean"]),
        helper.make_node("CastLike", ["clean", "like_int"], ["whole"]),
        helper.make_node("CastLike", ["whole", "clean"], ["truncated"]),
        helper.make_node("Add", ["truncated", "clean"], ["sum"]),
        helper.make_node("Transpose", ["clean"], ["clean_t"]),
        helper.make_node("MatMul", ["clean", "clean_t"], ["gram"]),
        helper.make_node("Shape", ["gram"], ["gram_shape"]),
        helper.make_node("Slice", ["gram_shape", "one", "two"], ["rows"]),
        helper.make_node("Concat", ["rows", "minus_one"], ["target"], axis=0),
        helper.make_node("Reshape", ["sum", "target"], ["y"]),
        helper.make_node("IsInf", ["x"], ["positive"], detect_negative=0),
    ]
    constants = [numpy_helper.from_array(np.array(0.0, dtype=np.float32), "zero"),
                 numpy_helper.from_array(np.array(0, dtype=np.int64), "like_int"),
                 numpy_helper.from_array(np.array([1], dtype=np.int64), "one"),
                 numpy_helper.from_array(np.array([2], dtype=np.int64), "two"),
                 numpy_helper.from_array(np.array([-1], dtype=np.int64), "minus_one")]
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 6]),
         helper.make_tensor_value_info("positive", TensorProto.BOOL, [4, 6])], constants)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    clean = np.where(np.isnan(x) | np.isinf(x), np.float32(0), x)
    y = (np.trunc(clean) + clean).reshape(4, -1)
    save_node_test(name, model, [("x", x)], [("y", y), ("positive", np.isposinf(x))])

    # test_unity_einsum_ellipsis: attention scores written with an ellipsis over the batch and
    # head dims, and the context by probabilities with an implicit output whose ellipsis dims lead
    # ("...ij,...jk" is "...ik").
    name = "test_unity_einsum_ellipsis"
    rng = np.random.default_rng(0)
    q = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    k = rng.standard_normal((2, 3, 6, 5)).astype(np.float32)
    p = rng.standard_normal((2, 3, 4, 6)).astype(np.float32)
    nodes = [helper.make_node("Einsum", ["q", "k"], ["scores"], equation="...id,...jd->...ij"),
             helper.make_node("Einsum", ["p", "k"], ["context"], equation="...ij,...jk")]
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("q", TensorProto.FLOAT, [2, 3, 4, 5]),
                      helper.make_tensor_value_info("k", TensorProto.FLOAT, [2, 3, 6, 5]),
                      helper.make_tensor_value_info("p", TensorProto.FLOAT, [2, 3, 4, 6])],
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [2, 3, 4, 6]),
         helper.make_tensor_value_info("context", TensorProto.FLOAT, [2, 3, 4, 5])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    save_node_test(name, model, [("q", q), ("k", k), ("p", p)],
                   [("scores", np.einsum("...id,...jd->...ij", q, k)),
                    ("context", np.einsum("...ij,...jk", p, k))])

    # test_unity_grid_sample_padding: GridSample with a grid reaching past the input, in every mode
    # and padding against torch.nn.functional.grid_sample (ONNX's own tests cover the paddings
    # with bilinear sampling only, and print bicubic's values to 4 decimals).
    import torch
    name = "test_unity_grid_sample_padding"
    x = rng.standard_normal((2, 2, 4, 5)).astype(np.float32)
    grid = rng.uniform(-1.4, 1.4, (2, 3, 6, 2)).astype(np.float32)
    variants = [(mode, padding, corners) for mode in ("bicubic", "bilinear", "nearest")
                for padding in ("zeros", "border", "reflection") for corners in (0, 1)]
    nodes, outputs, expected = [], [], []
    for mode, padding, corners in variants:
        out = f"{mode}_{padding}_{corners}"
        nodes.append(helper.make_node("GridSample", ["x", "grid"], [out], mode=mode,
                                      padding_mode=padding, align_corners=corners))
        outputs.append(helper.make_tensor_value_info(out, TensorProto.FLOAT, [2, 2, 3, 6]))
        expected.append((out, torch.nn.functional.grid_sample(
            torch.from_numpy(x), torch.from_numpy(grid), mode=mode, padding_mode=padding,
            align_corners=bool(corners)).numpy()))
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2, 4, 5]),
                      helper.make_tensor_value_info("grid", TensorProto.FLOAT, [2, 3, 6, 2])],
        outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
    save_node_test(name, model, [("x", x), ("grid", grid)], expected)


def uint8_image_classifier():
    # A classifier that takes its images as uint8, as a data loader hands them over, and scales
    # them itself (x.float() / 255): a UINT8 input, Cast, Div, then Conv, ReLU, pooling and a
    # Linear.
    class Uint8Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            self.head = nn.Linear(8, 5)

        def forward(self, image):
            x = image.float() / 255.0
            x = torch.relu(self.conv(x))
            return self.head(x.mean(dim=(2, 3)))

    torch.manual_seed(0)
    image = torch.randint(0, 256, (4, 3, 12, 12), dtype=torch.uint8)
    export(Uint8Classifier(), (image,), "uint8_image_classifier.onnx", opset=13,
           input_names=["image"], output_names=["logits"])


def integer_arithmetic():
    # test_unity_integer_arithmetic: Add, Sub, Mul and Div of computed int64 tensors (index
    # arithmetic in exports: a flat index from a row and a column, an offset per expert), Div
    # truncating toward zero as C and ONNX Runtime do, and the same in uint8 with numpy's
    # wraparound (a product past 255).
    import numpy as np

    name = "test_unity_integer_arithmetic"
    rng = np.random.default_rng(5)
    a = rng.integers(-50, 50, size=(3, 4)).astype(np.int64)
    b = rng.integers(1, 9, size=(3, 4)).astype(np.int64) * rng.choice([-1, 1], size=(3, 4))
    u = rng.integers(0, 64, size=(3, 4)).astype(np.uint8)
    v = rng.integers(0, 64, size=(3, 4)).astype(np.uint8)
    nodes = [
        helper.make_node("Mul", ["a", "b"], ["ab"]),
        helper.make_node("Add", ["ab", "a"], ["sum"]),
        helper.make_node("Sub", ["sum", "b"], ["difference"]),
        helper.make_node("Div", ["difference", "b"], ["quotient"]),
        helper.make_node("Mul", ["u", "v"], ["uv"]),
        helper.make_node("Add", ["uv", "v"], ["wrapped"]),
    ]
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info("a", TensorProto.INT64, [3, 4]),
         helper.make_tensor_value_info("b", TensorProto.INT64, [3, 4]),
         helper.make_tensor_value_info("u", TensorProto.UINT8, [3, 4]),
         helper.make_tensor_value_info("v", TensorProto.UINT8, [3, 4])],
        [helper.make_tensor_value_info("quotient", TensorProto.INT64, [3, 4]),
         helper.make_tensor_value_info("wrapped", TensorProto.UINT8, [3, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    difference = a * b + a - b
    quotient = (np.sign(difference) * np.sign(b) * (np.abs(difference) // np.abs(b))).astype(np.int64)
    wrapped = (u * v + v).astype(np.uint8)  # numpy wraps uint8 arithmetic
    save_node_test(name, model, [("a", a), ("b", b), ("u", u), ("v", v)],
                   [("quotient", quotient), ("wrapped", wrapped)])


def constants_in_forward():
    # test_unity_constants_in_forward: a model without parameters whose forward builds its own
    # constants, as positional encodings, masks and warps do. torch folds them into Constant nodes;
    # Unity must keep their values (not train them as Weights): a sinusoidal table added to x, a
    # causal mask filled into the scores, rows of a constant table picked by constant indices, and
    # an identity sampling grid that a flow moves (RAFT's coords_grid). Expected values from torch.
    import math
    import numpy as np

    class ConstantsInForward(torch.nn.Module):
        def forward(self, x, scores, image, flow):
            t, d = x.shape[1], x.shape[2]
            position = torch.arange(t, dtype=torch.float32).unsqueeze(1)
            rate = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * (-math.log(1e4) / d))
            angle = position * rate
            table = torch.stack([torch.sin(angle), torch.cos(angle)], -1).reshape(t, d)
            y = x + table
            mask = torch.triu(torch.ones(t, t, dtype=torch.bool), 1)
            attended = scores.masked_fill(mask, float("-inf")).softmax(-1) @ y
            picked = y[:, 1:4] * table[torch.tensor([5, 0, 2])]
            h, w = image.shape[2], image.shape[3]
            ys, xs = torch.meshgrid(torch.linspace(-1, 1, h), torch.linspace(-1, 1, w),
                                    indexing="ij")
            grid = torch.stack([xs, ys], -1).unsqueeze(0)
            warped = torch.nn.functional.grid_sample(image, grid + flow, align_corners=True)
            return attended, picked, warped

    name = "test_unity_constants_in_forward"
    generator = torch.Generator().manual_seed(3)
    x = torch.randn(2, 6, 8, generator=generator)
    scores = torch.randn(2, 6, 6, generator=generator)
    image = torch.randn(1, 2, 5, 7, generator=generator)
    flow = 0.2 * torch.randn(1, 5, 7, 2, generator=generator)
    inputs = (x, scores, image, flow)
    names = ["x", "scores", "image", "flow"]
    path = os.path.join(HERE, name + ".tmp.onnx")
    torch.onnx.export(ConstantsInForward(), inputs, path, opset_version=16, input_names=names,
                      output_names=["attended", "picked", "warped"])
    model = onnx.load(path)
    os.remove(path)
    outputs = ConstantsInForward()(*inputs)
    save_node_test(name, model, [(n, v.numpy()) for n, v in zip(names, inputs)],
                   [(n, v.detach().numpy()) for n, v in
                    zip(["attended", "picked", "warped"], outputs)])


def mel_spectrogram():
    # test_unity_mel_spectrogram: an audio front end as ONNX writes it (opset 17): a Hann window,
    # STFT, the power spectrum, a MelWeightMatrix and a log. Expected values from numpy's FFT and
    # ONNX's definition of the mel filters (checked against ONNX's own test_melweightmatrix).
    import numpy as np

    name = "test_unity_mel_spectrogram"
    frame, step, mel_bins, rate, low, high = 64, 16, 10, 16000, 20.0, 8000.0
    rng = np.random.default_rng(5)
    signal = rng.standard_normal((2, 256, 1)).astype(np.float32)

    def const(value, name, dtype):
        return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(
            np.array(value, dtype=dtype), name))

    from onnx import numpy_helper
    nodes = [
        const(frame, "frame", np.int64), const(step, "step", np.int64),
        const(mel_bins, "mel_bins", np.int64), const(rate, "rate", np.int64),
        const(low, "low", np.float32), const(high, "high", np.float32),
        const([-1], "last", np.int64), const(1e-6, "floor", np.float32),
        helper.make_node("HannWindow", ["frame"], ["window"]),
        helper.make_node("STFT", ["signal", "step", "window"], ["spectrum"]),
        helper.make_node("Mul", ["spectrum", "spectrum"], ["squares"]),
        helper.make_node("ReduceSum", ["squares", "last"], ["power"], keepdims=0),
        helper.make_node("MelWeightMatrix", ["mel_bins", "frame", "rate", "low", "high"],
                         ["filters"]),
        helper.make_node("MatMul", ["power", "filters"], ["mel"]),
        helper.make_node("Add", ["mel", "floor"], ["floored"]),
        helper.make_node("Log", ["floored"], ["log_mel"]),
    ]
    frames = (256 - frame) // step + 1
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("signal", TensorProto.FLOAT, [2, 256, 1])],
        [helper.make_tensor_value_info("log_mel", TensorProto.FLOAT, [2, frames, mel_bins])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])

    window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(frame) / frame)  # periodic
    pieces = np.stack([signal[:, f * step:f * step + frame, 0] for f in range(frames)], 1)
    power = np.abs(np.fft.rfft(pieces * window, axis=-1)) ** 2
    mel = lambda hz: 2595 * np.log10(1 + hz / 700)
    spacing = (mel(high) - mel(low)) / (mel_bins + 2)
    edges = [int(np.floor((frame + 1) * 700 * (10 ** ((i * spacing + mel(low)) / 2595) - 1) / rate))
             for i in range(mel_bins + 2)]
    filters = np.zeros((frame // 2 + 1, mel_bins))
    for f in range(mel_bins):
        left, centre, right = edges[f:f + 3]
        if centre == left:
            filters[centre, f] = 1
        for b in range(left, centre + 1):
            if centre > left:
                filters[b, f] = (b - left) / (centre - left)
        for b in range(centre, right):
            filters[b, f] = (right - b) / (right - centre)
    expected = np.log(power @ filters + 1e-6).astype(np.float32)
    save_node_test(name, model, [("signal", signal)], [("log_mel", expected)])


def spectral_classifier():
    # An audio classifier on a spectral front end, written with ONNX's operators (torch 1.13 does
    # not export torch.stft): a Hann-windowed STFT of the wave, the log power spectrum, a Linear
    # per frame, the DFT of those features over time (a modulation spectrum), the log of its
    # mean power, and a Gemm to 4 classes. STFT and DFT import as a convolution and a product
    # with Constant matrices; only the two layers are trained.
    import numpy as np
    from onnx import numpy_helper

    rng = np.random.default_rng(11)

    def const(value, name, dtype):
        return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(
            np.array(value, dtype=dtype), name))

    def init(name, shape):
        return numpy_helper.from_array((0.1 * rng.standard_normal(shape)).astype(np.float32), name)

    nodes = [
        const(64, "frame", np.int64), const(16, "step", np.int64), const([2], "last", np.int64),
        const([-1], "minus_one", np.int64),
        const(1e-6, "floor", np.float32),
        helper.make_node("HannWindow", ["frame"], ["window"]),
        helper.make_node("Unsqueeze", ["wave", "last"], ["signal"]),
        helper.make_node("STFT", ["signal", "step", "window"], ["spectrum"]),
        helper.make_node("Mul", ["spectrum", "spectrum"], ["squares"]),
        helper.make_node("ReduceSum", ["squares", "minus_one"], ["power"], keepdims=0),
        helper.make_node("Add", ["power", "floor"], ["floored"]),
        helper.make_node("Log", ["floored"], ["log_power"]),
        helper.make_node("MatMul", ["log_power", "frame_weight"], ["projected"]),
        helper.make_node("Add", ["projected", "frame_bias"], ["features"]),
        helper.make_node("Tanh", ["features"], ["bounded"]),
        helper.make_node("Unsqueeze", ["bounded", "minus_one"], ["real"]),
        helper.make_node("DFT", ["real"], ["modulation"], axis=1, onesided=1),
        helper.make_node("Mul", ["modulation", "modulation"], ["modulation_squares"]),
        helper.make_node("ReduceMean", ["modulation_squares"], ["pooled"], axes=[1, 3],
                         keepdims=0),
        const(1.0, "one", np.float32),
        helper.make_node("Add", ["pooled", "one"], ["pooled_one"]),
        helper.make_node("Log", ["pooled_one"], ["log_pooled"]),
        helper.make_node("Gemm", ["log_pooled", "class_weight", "class_bias"], ["logits"],
                         transB=1),
    ]
    graph = helper.make_graph(
        nodes, "spectral_classifier",
        [helper.make_tensor_value_info("wave", TensorProto.FLOAT, [4, 512])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [4, 4])],
        initializer=[init("frame_weight", (33, 16)), init("frame_bias", (16,)),
                     init("class_weight", (4, 16)), init("class_bias", (4,))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(HERE, "spectral_classifier.onnx"))


def vae():
    # A variational autoencoder that returns its own loss: the encoder gives a mean and a log
    # variance, the reparameterisation draws z = mean + exp(log_var / 2) * torch.randn_like(...)
    # (RandomNormalLike), the decoder reconstructs x, and the loss is the reconstruction's squared
    # error plus the KL divergence, a 0-d output. Unity imports the draw as its Random operator.
    class Vae(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = nn.Sequential(nn.Linear(32, 24), nn.Tanh())
            self.mean = nn.Linear(24, 6)
            self.log_var = nn.Linear(24, 6)
            self.decoder = nn.Sequential(nn.Linear(6, 24), nn.Tanh(), nn.Linear(24, 32))

        def forward(self, x):
            h = self.encoder(x)
            mean, log_var = self.mean(h), self.log_var(h)
            z = mean + torch.exp(0.5 * log_var) * torch.randn_like(mean)
            reconstruction = self.decoder(z)
            kl = -0.5 * torch.sum(1 + log_var - mean ** 2 - torch.exp(log_var))
            return ((reconstruction - x) ** 2).sum() / x.shape[0] + kl / x.shape[0]

    torch.manual_seed(0)
    export(Vae(), (torch.randn(8, 32),), "vae_own_loss.onnx", opset=13, input_names=["x"],
           output_names=["loss"])


def det_flow():
    # A flow-style layer: a Linear makes a 3 x 3 matrix per sample (around the identity), torch.det
    # exports ONNX's Det, and the log of its square (a log-volume) joins the features for the head.
    class DetFlow(nn.Module):
        def __init__(self):
            super().__init__()
            self.matrix = nn.Linear(6, 9)
            self.head = nn.Linear(7, 2)

        def forward(self, x):
            m = self.matrix(x).view(-1, 3, 3) + torch.eye(3)
            log_volume = torch.log(torch.det(m) ** 2 + 1e-3).unsqueeze(1)
            return self.head(torch.cat([x, log_volume], dim=1))

    torch.manual_seed(0)
    export(DetFlow(), (torch.randn(8, 6),), "det_flow.onnx", opset=13, input_names=["x"],
           output_names=["y"])


def crop_and_resize():
    # test_unity_crop_and_resize: Resize's tf_crop_and_resize in nearest mode (ONNX's own test is
    # linear): a region of each spatial axis, one output column (the region's middle), samples
    # outside the input set to the extrapolation value. Expected values from the definition.
    import numpy as np

    name = "test_unity_crop_and_resize"
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 3, 5, 6)).astype(np.float32)
    roi = np.array([0, 0, 0.1, -0.2, 1, 1, 1.3, 1.3], dtype=np.float32)
    sizes = np.array([2, 3, 4, 1], dtype=np.int64)
    from onnx import numpy_helper
    nodes = [
        helper.make_node("Constant", [], ["roi"], value=numpy_helper.from_array(roi, "roi")),
        helper.make_node("Constant", [], ["sizes"], value=numpy_helper.from_array(sizes, "sizes")),
        helper.make_node("Resize", ["x", "roi", "", "sizes"], ["y"], mode="nearest",
                         coordinate_transformation_mode="tf_crop_and_resize",
                         extrapolation_value=-1.0),
    ]
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [int(v) for v in sizes])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])

    def sample(n, m, start, end):
        if m == 1:
            return [0.5 * (start + end) * (n - 1)]
        return [start * (n - 1) + i * (end - start) * (n - 1) / (m - 1) for i in range(m)]

    def nearest(at):  # round_prefer_floor
        low = np.floor(at)
        return int(low + 1) if at - low > 0.5 else int(low)

    rows = sample(5, 4, float(roi[2]), float(roi[6]))
    cols = sample(6, 1, float(roi[3]), float(roi[7]))
    y = np.full((2, 3, 4, 1), -1.0, dtype=np.float32)
    for i, r in enumerate(rows):
        for j, c in enumerate(cols):
            if 0 <= r <= 4 and 0 <= c <= 5:
                y[:, :, i, j] = x[:, :, nearest(r), nearest(c)]
    save_node_test(name, model, [("x", x)], [("y", y)])


def computed_if():
    # An If whose condition is computed from the activations (a scripted model's `if h.sum() > 0`):
    # Unity runs both branches and selects with a Where. x -> Gemm -> h; if sum(h) > 0 then
    # relu(h) else 2 sigmoid(h); -> Gemm -> logits.
    import numpy as np
    from onnx import numpy_helper

    rng = np.random.default_rng(13)

    def init(name, shape):
        return numpy_helper.from_array((0.3 * rng.standard_normal(shape)).astype(np.float32), name)

    then_graph = helper.make_graph(
        [helper.make_node("Relu", ["h"], ["then_out"])], "then", [],
        [helper.make_tensor_value_info("then_out", TensorProto.FLOAT, [8, 16])])
    two = numpy_helper.from_array(np.array(2.0, dtype=np.float32), "two")
    else_graph = helper.make_graph(
        [helper.make_node("Sigmoid", ["h"], ["squashed"]),
         helper.make_node("Mul", ["squashed", "two"], ["else_out"])], "else", [],
        [helper.make_tensor_value_info("else_out", TensorProto.FLOAT, [8, 16])],
        initializer=[two])
    zero = numpy_helper.from_array(np.array(0.0, dtype=np.float32), "zero")
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], transB=1),
        helper.make_node("ReduceSum", ["h"], ["total"], keepdims=0),
        helper.make_node("Greater", ["total", "zero"], ["cond"]),
        helper.make_node("If", ["cond"], ["chosen"], then_branch=then_graph,
                         else_branch=else_graph),
        helper.make_node("Gemm", ["chosen", "w2", "b2"], ["logits"], transB=1),
    ]
    graph = helper.make_graph(
        nodes, "computed_if", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 12])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [8, 4])],
        initializer=[init("w1", (16, 12)), init("b1", (16,)), init("w2", (4, 16)),
                     init("b2", (4,)), zero])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(HERE, "computed_if.onnx"))


def switch_moe():
    # A GShard/Switch-style mixture of experts: top-2 routing with a capacity of 8 tokens an
    # expert, each token's place in its expert's buffer counted by CumSum over the batch's tokens,
    # dispatch and combine as one-hot masks applied by einsum, the experts' weights stacked.
    import torch.nn.functional as F

    class SwitchMoe(nn.Module):
        def __init__(self, dim, ffn, experts, k, capacity):
            super().__init__()
            self.experts, self.k, self.capacity = experts, k, capacity
            self.inp = nn.Linear(dim, dim)
            self.gate = nn.Linear(dim, experts, bias=False)
            self.w1 = nn.Parameter(torch.randn(experts, dim, ffn) * 0.2)
            self.w2 = nn.Parameter(torch.randn(experts, ffn, dim) * 0.2)
            self.out = nn.Linear(dim, 10)

        def forward(self, x):
            b, t, d = x.shape
            h = self.inp(x).reshape(b * t, d)
            weights, chosen = F.softmax(self.gate(h), dim=-1).topk(self.k, dim=-1)
            combine = torch.zeros(b * t, self.experts, self.capacity)
            for i in range(self.k):
                mask = F.one_hot(chosen[:, i], self.experts).float()
                place = (torch.cumsum(mask, dim=0) - 1) * mask
                kept = mask * (place < self.capacity).float()
                slot = F.one_hot(place.long().clamp(max=self.capacity - 1), self.capacity).float()
                combine = combine + (weights[:, i:i + 1] * kept).unsqueeze(-1) * slot
            dispatch = (combine > 0).float()
            routed = torch.einsum("sec,sd->ecd", dispatch, h)
            hidden = F.gelu(torch.einsum("ecd,edf->ecf", routed, self.w1))
            y = torch.einsum("sec,ecd->sd", combine, torch.einsum("ecf,efd->ecd", hidden, self.w2))
            return self.out((h + y).reshape(b, t, d).mean(1))

    export(SwitchMoe(16, 32, 4, 2, 8), (torch.randn(4, 8, 16),), "switch_moe.onnx", opset=17,
           input_names=["x"])


if __name__ == "__main__":
    torch.manual_seed(0)
    mlp()
    cnn()
    transformer(13)
    transformer(17)
    embedding()
    unsupported()
    data_dependent_op()
    asymmetric_padding()
    pooling_variants()
    layout_ops()
    activations()
    unrolled_control_flow()
    llama_attention()
    resize_variants()
    pad_variants()
    padding_mask_attention()
    super_resolution()
    arithmetic()
    own_loss()
    grid_sample_warp()
    node_tests()
    integer_arithmetic()
    constants_in_forward()
    mel_spectrogram()
    spectral_classifier()
    vae()
    crop_and_resize()
    computed_if()
    switch_moe()
