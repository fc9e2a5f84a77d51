#!/usr/bin/python3
"""Exports the models of the import sweep (issue 20) to ONNX, as a user would with torch.onnx.export:
the inference graph, random weights, eval mode, a dynamic batch.

usage: export_sweep.py OUTPUT_DIR [--small] [--only NAME ...] [--opset N] [--batch N] [--list]

Every torchvision classification family, and torch.nn's building blocks as users assemble them:
  torchvision   alexnet vgg11 resnet18 resnext50_32x4d wide_resnet50_2 densenet121 inception_v3
                googlenet squeezenet1_1 shufflenet_v2_x1_0 mnasnet0_5 mobilenet_v2 mobilenet_v3_small
                efficientnet_b0 regnet_y_400mf convnext_tiny vit_b_16 swin_t maxvit_t
  torch.nn      transformer (nn.Transformer), transformer_encoder, lstm_lm and gru_lm (2-layer language
                models), gpt_decoder (a causal decoder that builds its mask in forward())

--small builds each family's own classes at a small size (fewer blocks, narrower layers, smaller
images), so that a test exports, imports and plans the whole sweep in seconds; without it the models
are the published configurations (the benchmark's sweep). Writes OUTPUT_DIR/NAME.onnx and prints one
line per model. Exit status 77 when torch or torchvision cannot be imported, so callers can skip.
"""
import argparse
import math
import os
import sys
import warnings

warnings.filterwarnings("ignore")  # the exporter warns about every traced shape

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    import torchvision
    from torchvision import models
except ImportError as error:
    print(f"torch or torchvision is not available: {error}", file=sys.stderr)
    sys.exit(77)


def images(batch, size):
    return torch.randn(batch, 3, size, size)


# --- torchvision ---------------------------------------------------------------------------------
# Each entry: (full builder, small builder, image size full, image size small). A small builder uses
# the family's own classes, so the exported graph has the family's structure (blocks, branches,
# attention windows), only fewer and narrower.


def small_resnet(block, **kwargs):
    return models.resnet.ResNet(block, [1, 1, 1, 1], num_classes=10, **kwargs)


def small_vgg():
    # Three pools take 56x56 images to VGG's 7x7 pooled map; the classifier is narrowed to match.
    model = models.vgg.VGG(models.vgg.make_layers([16, "M", 32, "M", 32, "M"]), init_weights=False)
    model.classifier = nn.Sequential(nn.Linear(32 * 7 * 7, 64), nn.ReLU(True), nn.Dropout(),
                                     nn.Linear(64, 10))
    return model


def small_alexnet():
    # AlexNet's adaptive pool is exported only where it is the identity (224x224 images); the
    # classifier is narrowed instead.
    model = models.alexnet()
    model.classifier = nn.Sequential(nn.Dropout(), nn.Linear(256 * 6 * 6, 64), nn.ReLU(True),
                                     nn.Linear(64, 10))
    return model


def small_densenet():
    return models.densenet.DenseNet(growth_rate=8, block_config=(3, 3), num_init_features=16,
                                    num_classes=10)


def small_efficientnet():
    config = models.efficientnet.MBConvConfig
    settings = [config(1, 3, 1, 16, 8, 1), config(6, 3, 2, 8, 16, 2), config(6, 5, 2, 16, 24, 1)]
    return models.efficientnet.EfficientNet(settings, dropout=0.2, num_classes=10)


def small_mobilenet_v3():
    config = models.mobilenetv3.InvertedResidualConfig
    settings = [config(16, 3, 16, 16, True, "RE", 2, 1, 1.0), config(16, 3, 32, 24, False, "HS", 2, 1, 1.0),
                config(24, 5, 48, 24, True, "HS", 1, 1, 1.0)]
    return models.mobilenetv3.MobileNetV3(settings, last_channel=64, num_classes=10)


def small_regnet():
    params = models.regnet.BlockParams.from_init_params(depth=4, w_0=16, w_a=8.0, w_m=2.0,
                                                        group_width=8, se_ratio=0.25)
    return models.regnet.RegNet(params, num_classes=10)


def small_convnext():
    config = models.convnext.CNBlockConfig
    return models.convnext.ConvNeXt([config(16, 32, 1), config(32, None, 1)], num_classes=10)


def small_vit():
    return models.vision_transformer.VisionTransformer(image_size=32, patch_size=8, num_layers=2,
                                                       num_heads=4, hidden_dim=32, mlp_dim=64,
                                                       num_classes=10)


def small_swin():
    return models.swin_transformer.SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2],
                                                   num_heads=[2, 4], window_size=[4, 4],
                                                   num_classes=10)


def small_maxvit():
    return models.maxvit.MaxVit(input_size=(32, 32), stem_channels=16, partition_size=2,
                                block_channels=[16, 32], block_layers=[1, 1], head_dim=8,
                                stochastic_depth_prob=0.0, num_classes=10)


TORCHVISION = {
    "alexnet": (lambda: models.alexnet(), small_alexnet, 224, 224),
    "vgg11": (lambda: models.vgg11(), small_vgg, 224, 56),
    "resnet18": (lambda: models.resnet18(), lambda: small_resnet(models.resnet.BasicBlock), 224, 32),
    "resnext50_32x4d": (lambda: models.resnext50_32x4d(),
                        lambda: small_resnet(models.resnet.Bottleneck, groups=4, width_per_group=4),
                        224, 32),
    "wide_resnet50_2": (lambda: models.wide_resnet50_2(),
                        lambda: small_resnet(models.resnet.Bottleneck, width_per_group=128), 224, 32),
    "densenet121": (lambda: models.densenet121(), small_densenet, 224, 32),
    "inception_v3": (lambda: models.inception_v3(aux_logits=False, init_weights=False),
                     lambda: models.inception_v3(aux_logits=False, init_weights=False,
                                                 num_classes=10), 299, 75),
    "googlenet": (lambda: models.googlenet(aux_logits=False, init_weights=False),
                  lambda: models.googlenet(aux_logits=False, init_weights=False, num_classes=10),
                  224, 32),
    "squeezenet1_1": (lambda: models.squeezenet1_1(), lambda: models.squeezenet1_1(num_classes=10),
                      224, 48),
    "shufflenet_v2_x1_0": (lambda: models.shufflenet_v2_x1_0(),
                           lambda: models.shufflenetv2.ShuffleNetV2([1, 1, 1], [8, 16, 32, 64, 128],
                                                                    num_classes=10), 224, 32),
    "mnasnet0_5": (lambda: models.mnasnet0_5(), lambda: models.mnasnet0_5(num_classes=10), 224, 32),
    "mobilenet_v2": (lambda: models.mobilenet_v2(),
                     lambda: models.mobilenet_v2(width_mult=0.25, num_classes=10), 224, 32),
    "mobilenet_v3_small": (lambda: models.mobilenet_v3_small(), small_mobilenet_v3, 224, 32),
    "efficientnet_b0": (lambda: models.efficientnet_b0(), small_efficientnet, 224, 32),
    "regnet_y_400mf": (lambda: models.regnet_y_400mf(), small_regnet, 224, 32),
    "convnext_tiny": (lambda: models.convnext_tiny(), small_convnext, 224, 32),
    "vit_b_16": (lambda: models.vit_b_16(), small_vit, 224, 32),
    "swin_t": (lambda: models.swin_t(), small_swin, 224, 32),
    "maxvit_t": (lambda: models.maxvit_t(), small_maxvit, 224, 32),
}


# --- torch.nn building blocks ----------------------------------------------------------------------


class TransformerModel(nn.Module):
    """nn.Transformer over embedded source and target sequences (a translation model's core)."""

    def __init__(self, d_model, heads, layers, ffn):
        super().__init__()
        self.transformer = nn.Transformer(d_model, heads, layers, layers, ffn, batch_first=True)

    def forward(self, source, target):
        mask = self.transformer.generate_square_subsequent_mask(target.size(1))
        return self.transformer(source, target, tgt_mask=mask)


class RecurrentLanguageModel(nn.Module):
    """Embedding, a 2-layer LSTM or GRU, a Linear to the vocabulary: PyTorch's word_language_model."""

    def __init__(self, kind, vocab, embed, hidden):
        super().__init__()
        self.embedding = nn.Embedding(vocab, embed)
        self.rnn = getattr(nn, kind)(embed, hidden, num_layers=2)
        self.decoder = nn.Linear(hidden, vocab)

    def forward(self, ids):  # ids: [sequence, batch], as the word_language_model example has them
        output, _ = self.rnn(self.embedding(ids))
        return self.decoder(output)


class GptDecoder(nn.Module):
    """Pre-LayerNorm causal decoder; the mask is built in forward() with torch.triu."""

    def __init__(self, vocab, seq, embed, heads, layers):
        super().__init__()
        self.heads = heads
        self.tokens = nn.Embedding(vocab, embed)
        self.positions = nn.Embedding(seq, embed)
        self.blocks = nn.ModuleList()
        for _ in range(layers):
            self.blocks.append(nn.ModuleDict({
                "ln1": nn.LayerNorm(embed), "qkv": nn.Linear(embed, 3 * embed),
                "proj": nn.Linear(embed, embed), "ln2": nn.LayerNorm(embed),
                "fc": nn.Linear(embed, 4 * embed), "out": nn.Linear(4 * embed, embed)}))
        self.ln_f = nn.LayerNorm(embed)
        self.head = nn.Linear(embed, vocab, bias=False)

    def attention(self, block, x):
        b, t, e = x.size()
        q, k, v = block["qkv"](x).split(e, dim=2)
        q, k, v = (y.view(b, t, self.heads, e // self.heads).transpose(1, 2) for y in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(e // self.heads))
        mask = torch.triu(torch.ones(t, t, device=x.device), diagonal=1).bool()
        y = F.softmax(scores.masked_fill(mask, float("-inf")), dim=-1) @ v
        return block["proj"](y.transpose(1, 2).contiguous().view(b, t, e))

    def forward(self, ids):
        positions = torch.arange(0, ids.size(1), dtype=torch.long).unsqueeze(0)
        x = self.tokens(ids) + self.positions(positions)
        for block in self.blocks:
            x = x + self.attention(block, block["ln1"](x))
            x = x + block["out"](F.gelu(block["fc"](block["ln2"](x))))
        return self.head(self.ln_f(x))


def transformer(small, batch):
    d, heads, layers, ffn, seq = (32, 4, 1, 64, 8) if small else (512, 8, 6, 2048, 64)
    model = TransformerModel(d, heads, layers, ffn)
    inputs = (torch.randn(batch, seq, d), torch.randn(batch, seq, d))
    return model, inputs, ["source", "target"], {"source": {0: "batch"}, "target": {0: "batch"}}


def transformer_encoder(small, batch):
    d, heads, layers, ffn, seq = (32, 4, 2, 64, 8) if small else (512, 8, 6, 2048, 128)
    layer = nn.TransformerEncoderLayer(d, heads, ffn, batch_first=True)
    model = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
    return model, (torch.randn(batch, seq, d),), ["input"], {"input": {0: "batch"}}


def recurrent(kind):
    def build(small, batch):
        vocab, embed, hidden, seq = (50, 16, 16, 3) if small else (10000, 650, 650, 35)
        model = RecurrentLanguageModel(kind, vocab, embed, hidden)
        axes = {"ids": {1: "batch"}, "output": {1: "batch"}}
        return model, (torch.randint(0, vocab, (seq, batch)),), ["ids"], axes
    return build


def gpt_decoder(small, batch):
    vocab, seq, embed, heads, layers = (64, 8, 32, 4, 2) if small else (50304, 256, 768, 12, 12)
    model = GptDecoder(vocab, seq, embed, heads, layers)
    return model, (torch.randint(0, vocab, (batch, seq)),), ["ids"], {"ids": {0: "batch"}}


TORCH_NN = {"transformer": transformer, "transformer_encoder": transformer_encoder,
            "lstm_lm": recurrent("LSTM"), "gru_lm": recurrent("GRU"), "gpt_decoder": gpt_decoder}

NAMES = list(TORCHVISION) + list(TORCH_NN)


def build(name, small, batch):
    if name in TORCHVISION:
        full, reduced, size_full, size_small = TORCHVISION[name]
        model = reduced() if small else full()
        example = images(batch, size_small if small else size_full)
        return model, (example,), ["input"], {"input": {0: "batch"}}
    return TORCH_NN[name](small, batch)


def export(name, directory, small, batch, opset):
    torch.manual_seed(0)
    model, inputs, input_names, axes = build(name, small, batch)
    model.eval()
    path = os.path.join(directory, name + ".onnx")
    # Not under torch.no_grad(): in inference mode nn.TransformerEncoderLayer takes its fused fast
    # path, which has no ONNX export.
    torch.onnx.export(model, inputs, path, opset_version=opset, input_names=input_names,
                      output_names=["output"], dynamic_axes={"output": {0: "batch"}, **axes})
    print(f"{name}: {path}")


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("output_dir", nargs="?")
    parser.add_argument("--small", action="store_true", help="small members of each family")
    parser.add_argument("--only", nargs="+", choices=NAMES, help="export only these models")
    parser.add_argument("--opset", type=int, default=14)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--list", action="store_true", help="print the model names and exit")
    args = parser.parse_args()
    if args.list:
        print("\n".join(NAMES))
        return
    if not args.output_dir:
        parser.error("OUTPUT_DIR is required")
    os.makedirs(args.output_dir, exist_ok=True)
    failed = []
    for name in args.only or NAMES:
        try:
            export(name, args.output_dir, args.small, args.batch, args.opset)
        except Exception as error:  # report every model, then fail
            print(f"{name}: export failed: {error}", file=sys.stderr)
            failed.append(name)
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
