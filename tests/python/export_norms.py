#!/usr/bin/python3
"""Exports small models with the normalisation layers users write to ONNX, for the importer tests
(tests/core/test_onnx_norm_import.cpp).

usage: export_norms.py OUTPUT_DIR [--opset N] [--only NAME ...]

--opset 18 (which torch 1.13's exporter does not reach) exports at 17 and rewrites the file as
opset 18 changed it for these models: the reductions take their axes as an input, not an
attribute.

Writes OUTPUT_DIR/NAME.onnx for each model below and prints one line per model, "NAME PARAMETERS",
the number of trained parameters torch counts.
  groupnorm_cnn     Conv, nn.GroupNorm(4, 16), ReLU, Conv, nn.GroupNorm(8, 16), pooling, Linear
                    (torch exports GroupNorm as Reshape, InstanceNormalization, Reshape, Mul, Add)
  instancenorm_cnn  Conv, nn.InstanceNorm2d(16, affine=True), ReLU, pooling, Linear
  rmsnorm_mlp       Llama's RMSNorm (x * rsqrt(mean(x^2) + eps) * weight) before each of two
                    Linear layers of a [n, 8, 32] sequence, SiLU between them
  rmsnorm_div       the same with x / sqrt(mean(x^2) + eps) and no weight (T5-style without scale)
A dynamic batch, random weights, eval mode, as torch.onnx.export users do.
Exit status 77 when torch cannot be imported, so callers can skip.
"""
import argparse
import os
import sys
import warnings

warnings.filterwarnings("ignore")  # the exporter warns about every traced shape

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as error:
    print(f"torch is not available: {error}", file=sys.stderr)
    sys.exit(77)


class GroupNormCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.norm1 = nn.GroupNorm(4, 16)
        self.conv2 = nn.Conv2d(16, 16, 3, padding=1)
        self.norm2 = nn.GroupNorm(8, 16)
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        x = F.relu(self.norm1(self.conv1(x)))
        x = F.relu(self.norm2(self.conv2(x)))
        return self.head(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class InstanceNormCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, padding=1)
        self.norm = nn.InstanceNorm2d(16, affine=True)
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        x = F.relu(self.norm(self.conv(x)))
        return self.head(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class RmsNorm(nn.Module):
    """Llama's RMSNorm, as its reference code writes it."""

    def __init__(self, dim, eps=1e-6, scaled=True, divide=False):
        super().__init__()
        self.eps = eps
        self.divide = divide
        self.weight = nn.Parameter(torch.ones(dim)) if scaled else None

    def forward(self, x):
        if self.divide:
            y = x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        else:
            y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return y * self.weight if self.weight is not None else y


class RmsNormMlp(nn.Module):
    def __init__(self, scaled=True, divide=False):
        super().__init__()
        self.norm1 = RmsNorm(32, scaled=scaled, divide=divide)
        self.up = nn.Linear(32, 64)
        self.down = nn.Linear(64, 32)
        self.norm2 = RmsNorm(32, scaled=scaled, divide=divide)
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        x = x + self.down(F.silu(self.up(self.norm1(x))))
        return self.head(self.norm2(x))


MODELS = {
    "groupnorm_cnn": (GroupNormCnn, (2, 3, 16, 16)),
    "instancenorm_cnn": (InstanceNormCnn, (2, 3, 16, 16)),
    "rmsnorm_mlp": (lambda: RmsNormMlp(), (2, 8, 32)),
    "rmsnorm_div": (lambda: RmsNormMlp(scaled=False, divide=True), (2, 8, 32)),
}


def as_opset18(path):
    """Rewrites an opset-17 file as opset 18: Reduce* axes move from the attribute to an input."""
    import onnx
    from onnx import helper, numpy_helper
    import numpy as np

    model = onnx.load(path)
    for imp in model.opset_import:
        if imp.domain in ("", "ai.onnx"):
            imp.version = 18
    for node in model.graph.node:
        if not node.op_type.startswith("Reduce") or node.op_type == "ReduceSum":
            continue  # ReduceSum took its axes as an input from opset 13
        for attr in list(node.attribute):
            if attr.name == "axes":
                name = node.output[0] + "_axes"
                model.graph.initializer.append(
                    numpy_helper.from_array(np.array(list(attr.ints), dtype=np.int64), name))
                node.input.append(name)
                node.attribute.remove(attr)
    onnx.save(model, path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("output_dir")
    parser.add_argument("--opset", type=int, default=13, choices=range(13, 19))
    parser.add_argument("--only", nargs="+", choices=sorted(MODELS), help="export only these")
    args = parser.parse_args()
    os.makedirs(args.output_dir, exist_ok=True)
    torch.manual_seed(0)
    for name, (make, shape) in MODELS.items():
        if args.only and name not in args.only:
            continue
        model = make().eval()
        path = os.path.join(args.output_dir, name + ".onnx")
        torch.onnx.export(model, torch.randn(*shape), path, opset_version=min(args.opset, 17),
                          input_names=["x"], output_names=["y"],
                          dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
        if args.opset == 18:
            as_opset18(path)
        print(name, sum(p.numel() for p in model.parameters()))


if __name__ == "__main__":
    main()
