#!/usr/bin/python3
"""Exports a PyTorch model to ONNX for the importer tests (tests/core/test_onnx_import.cpp).

usage: export_torchvision.py MODEL OUTPUT.onnx [--batch N]
MODEL: resnext50_32x4d        torchvision ResNeXt-50 (32x4d), random weights, 224x224 images,
                              BatchNormalization kept (TrainingMode.PRESERVE) and a dynamic batch
       transformer_encoder    nn.TransformerEncoder: 2 layers, d_model 64, 4 heads, sequence 32,
                              opset 13 (decomposed LayerNorm), dynamic batch
Exit status 77 when torch or torchvision cannot be imported, so callers can skip.
"""
import argparse
import sys
import warnings

warnings.filterwarnings("ignore")  # the exporter warns about every traced shape

try:
    import torch
    import torch.nn as nn
except ImportError as error:
    print(f"torch is not available: {error}", file=sys.stderr)
    sys.exit(77)


def resnext50(batch):
    try:
        import torchvision
    except ImportError as error:
        print(f"torchvision is not available: {error}", file=sys.stderr)
        sys.exit(77)
    model = torchvision.models.resnext50_32x4d(weights=None)
    return model, torch.randn(batch, 3, 224, 224), {"training": torch.onnx.TrainingMode.PRESERVE}


def transformer_encoder(batch):
    layer = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=256, batch_first=True)
    model = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
    return model, torch.randn(batch, 32, 64), {}


MODELS = {"resnext50_32x4d": resnext50, "transformer_encoder": transformer_encoder}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", choices=sorted(MODELS))
    parser.add_argument("output")
    parser.add_argument("--batch", type=int, default=2)
    args = parser.parse_args()
    torch.manual_seed(0)
    model, example, options = MODELS[args.model](args.batch)
    model.eval()
    # Not under torch.no_grad(): in inference mode nn.TransformerEncoderLayer takes its fused
    # fast path, which has no ONNX export.
    torch.onnx.export(model, (example,), args.output, opset_version=13, input_names=["input"],
                      output_names=["output"],
                      dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}}, **options)
    print(f"exported {args.model} to {args.output}")


if __name__ == "__main__":
    main()
