#!/usr/bin/python3
"""Exports the models of the import sweep (issue 20) to ONNX, as a user would with torch.onnx.export:
the inference graph, random weights, eval mode, a dynamic batch.

usage: export_sweep.py OUTPUT_DIR [--small] [--only NAME ...] [--opset N] [--batch N] [--list]

Every torchvision classification family, and torch.nn's building blocks as users assemble them:
  torchvision   alexnet vgg11 resnet18 resnext50_32x4d wide_resnet50_2 densenet121 inception_v3
                googlenet squeezenet1_1 shufflenet_v2_x1_0 mnasnet0_5 mobilenet_v2 mobilenet_v3_small
                efficientnet_b0 regnet_y_400mf convnext_tiny vit_b_16 swin_t maxvit_t
  torch.nn      transformer (nn.Transformer), transformer_encoder, lstm_lm, gru_lm and rnn_relu_lm
                (2-layer language models; the last a bidirectional nn.RNN with ReLU), gpt_decoder
                (a causal decoder that builds its mask in forward())

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
    """Embedding, a 2-layer LSTM, GRU or RNN, a Linear to the vocabulary: PyTorch's
    word_language_model (its RNN_RELU is nn.RNN with nonlinearity='relu'); `options` go to the
    recurrent layer (bidirectional doubles the decoder's input)."""

    def __init__(self, kind, vocab, embed, hidden, **options):
        super().__init__()
        self.embedding = nn.Embedding(vocab, embed)
        self.rnn = getattr(nn, kind)(embed, hidden, num_layers=2, **options)
        directions = 2 if options.get("bidirectional") else 1
        self.decoder = nn.Linear(hidden * directions, vocab)

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


def recurrent(kind, **options):
    def build(small, batch):
        vocab, embed, hidden, seq = (50, 16, 16, 3) if small else (10000, 650, 650, 35)
        model = RecurrentLanguageModel(kind, vocab, embed, hidden, **options)
        axes = {"ids": {1: "batch"}, "output": {1: "batch"}}
        return model, (torch.randint(0, vocab, (seq, batch)),), ["ids"], axes
    return build


def gpt_decoder(small, batch):
    vocab, seq, embed, heads, layers = (64, 8, 32, 4, 2) if small else (50304, 256, 768, 12, 12)
    model = GptDecoder(vocab, seq, embed, heads, layers)
    return model, (torch.randint(0, vocab, (batch, seq)),), ["ids"], {"ids": {0: "batch"}}



# --- the families of 2026 (issue 30): dense prediction, video, audio, modern decoders ------------------


class DoubleConv(nn.Sequential):
    def __init__(self, cin, cout):
        super().__init__(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
                         nn.ReLU(inplace=True), nn.Conv2d(cout, cout, 3, padding=1, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class UNet(nn.Module):
    """Ronneberger et al.'s U-Net as its PyTorch ports write it: max-pooled contractions, transposed
    convolutions up, the skip connections concatenated."""

    def __init__(self, widths, classes):
        super().__init__()
        self.down = nn.ModuleList()
        cin = 3
        for w in widths:
            self.down.append(DoubleConv(cin, w))
            cin = w
        self.up = nn.ModuleList()
        self.merge = nn.ModuleList()
        for w in reversed(widths[:-1]):
            self.up.append(nn.ConvTranspose2d(cin, w, 2, stride=2))
            self.merge.append(DoubleConv(2 * w, w))
            cin = w
        self.head = nn.Conv2d(cin, classes, 1)

    def forward(self, x):
        skips = []
        for i, block in enumerate(self.down):
            x = block(x if i == 0 else F.max_pool2d(x, 2))
            skips.append(x)
        for up, merge, skip in zip(self.up, self.merge, reversed(skips[:-1])):
            x = merge(torch.cat([skip, up(x)], dim=1))
        return self.head(x)


class VaeDecoder(nn.Module):
    """A latent-diffusion style VAE decoder: GroupNorm/SiLU residual blocks, nearest-neighbour
    upsampling by 2 (F.interpolate), a convolution after each."""

    def __init__(self, latent, widths):
        super().__init__()
        self.conv_in = nn.Conv2d(latent, widths[0], 3, padding=1)
        self.blocks = nn.ModuleList()
        self.ups = nn.ModuleList()
        cin = widths[0]
        for w in widths:
            self.blocks.append(nn.ModuleDict({
                "norm1": nn.GroupNorm(4, cin), "conv1": nn.Conv2d(cin, w, 3, padding=1),
                "norm2": nn.GroupNorm(4, w), "conv2": nn.Conv2d(w, w, 3, padding=1),
                "skip": nn.Conv2d(cin, w, 1)}))
            self.ups.append(nn.Conv2d(w, w, 3, padding=1))
            cin = w
        self.norm_out = nn.GroupNorm(4, cin)
        self.conv_out = nn.Conv2d(cin, 3, 3, padding=1)

    def forward(self, z):
        x = self.conv_in(z)
        for block, up in zip(self.blocks, self.ups):
            h = block["conv1"](F.silu(block["norm1"](x)))
            h = block["conv2"](F.silu(block["norm2"](h)))
            x = block["skip"](x) + h
            x = up(F.interpolate(x, scale_factor=2.0, mode="nearest"))
        return self.conv_out(F.silu(self.norm_out(x)))


class AudioEncoder(nn.Module):
    """A wav2vec 2.0 style encoder on raw audio [N, 1, samples]: strided 1-D convolutions (GroupNorm
    after the first, GELU), a projection of the [N, C, L] features to [N, L, E], a transformer
    encoder layer, a per-frame classifier."""

    def __init__(self, channels, embed, heads, classes):
        super().__init__()
        layers = [nn.Conv1d(1, channels, 10, stride=5, bias=False), nn.GroupNorm(channels, channels),
                  nn.GELU()]
        for kernel in (3, 3, 2):
            layers += [nn.Conv1d(channels, channels, kernel, stride=2, bias=False), nn.GELU()]
        self.features = nn.Sequential(*layers)
        self.pool = nn.AvgPool1d(2)
        self.norm = nn.LayerNorm(channels)
        self.project = nn.Linear(channels, embed)
        self.encoder = nn.TransformerEncoderLayer(embed, heads, 2 * embed, batch_first=True)
        self.head = nn.Linear(embed, classes)

    def forward(self, audio):
        x = self.pool(self.features(audio)).transpose(1, 2)
        return self.head(self.encoder(self.project(self.norm(x))))


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class LlamaBlock(nn.Module):
    def __init__(self, dim, heads, kv_heads, ffn):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, dim // heads
        self.attention_norm = RMSNorm(dim)
        self.wq = nn.Linear(dim, heads * self.head_dim, bias=False)
        self.wk = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(heads * self.head_dim, dim, bias=False)
        self.ffn_norm = RMSNorm(dim)
        self.w1 = nn.Linear(dim, ffn, bias=False)
        self.w2 = nn.Linear(ffn, dim, bias=False)
        self.w3 = nn.Linear(dim, ffn, bias=False)

    def forward(self, x, cos, sin, mask):
        b, s = x.shape[0], cos.shape[0]  # the sequence as a number: see repeat_interleave below
        h = self.attention_norm(x)
        q = self.wq(h).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.wk(h).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(h).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        # Both ways of repeating the key/value heads: Hugging Face's repeat_kv (expand, reshape) and
        # repeat_interleave. torch 1.13 exports repeat_interleave wrongly when it does not know a
        # size after the repeated dim (a Reshape with 0s that copies the wrong dims, in a Loop when
        # the repeated dim itself is unknown, as k's is after the rotary product): no runtime
        # runs that graph, so v's sizes are kept known here.
        rep = self.heads // self.kv_heads
        k = k[:, :, None, :, :].expand(b, self.kv_heads, rep, s, self.head_dim)
        k = k.reshape(b, self.heads, s, self.head_dim)
        v = torch.repeat_interleave(v, rep, dim=1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim) + mask
        y = F.softmax(scores, dim=-1) @ v
        x = x + self.wo(y.transpose(1, 2).reshape(b, s, -1))
        h = self.ffn_norm(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


class LlamaDecoder(nn.Module):
    """Llama written in plain PyTorch (no Hugging Face): RMSNorm, rotary embeddings by
    rotate_half, grouped-query attention, SwiGLU, a causal mask added to the scores."""

    def __init__(self, vocab, seq, dim, heads, kv_heads, ffn, layers):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList(LlamaBlock(dim, heads, kv_heads, ffn) for _ in range(layers))
        self.norm = RMSNorm(dim)
        self.output = nn.Linear(dim, vocab, bias=False)
        head_dim = dim // heads
        inv_freq = 1.0 / (10000 ** (torch.arange(0, head_dim, 2).float() / head_dim))
        angles = torch.outer(torch.arange(seq).float(), inv_freq)
        angles = torch.cat((angles, angles), dim=-1)
        self.register_buffer("cos", angles.cos())
        self.register_buffer("sin", angles.sin())

    def forward(self, ids):
        s = self.cos.shape[0]
        mask = torch.full((s, s), float("-inf")).triu(1)
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x, self.cos, self.sin, mask)
        return self.output(self.norm(x))


class MoEBlock(nn.Module):
    """A transformer block whose FFN is a mixture of experts (`mixture`, of the subclass): the
    attention and norms around it, and the router's gate."""

    def __init__(self, dim, heads, experts):
        super().__init__()
        self.attention = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm1 = nn.LayerNorm(dim)
        self.norm2 = nn.LayerNorm(dim)
        self.gate = nn.Linear(dim, experts, bias=False)

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attention(h, h, h, need_weights=False)[0]
        return x + self.mixture(self.norm2(x))


class TopKMoE(MoEBlock):
    """Routed densely as small MoE ports write it: softmax gate, TopK, the kept weights scattered
    back over the experts (ScatterElements), every expert's output weighted by its gate."""

    def __init__(self, dim, heads, experts, top_k, ffn):
        super().__init__(dim, heads, experts)
        self.top_k = top_k
        self.experts = nn.ModuleList(
            nn.Sequential(nn.Linear(dim, ffn), nn.GELU(), nn.Linear(ffn, dim)) for _ in range(experts))

    def mixture(self, h):
        probs = F.softmax(self.gate(h), dim=-1)
        weights, chosen = probs.topk(self.top_k, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        gates = torch.zeros_like(probs).scatter(-1, chosen, weights)
        out = 0
        for e, expert in enumerate(self.experts):
            out = out + gates[..., e:e + 1] * expert(h)
        return out


class SharedExpertMoE(MoEBlock):
    """DeepSeek-style: sigmoid router scores, the top k renormalised, the experts' weights stacked
    and applied by einsum, and a shared expert every token takes."""

    def __init__(self, dim, heads, experts, top_k, ffn):
        super().__init__(dim, heads, experts)
        self.top_k = top_k
        self.w_gate = nn.Parameter(torch.randn(experts, dim, ffn) * dim ** -0.5)
        self.w_up = nn.Parameter(torch.randn(experts, dim, ffn) * dim ** -0.5)
        self.w_down = nn.Parameter(torch.randn(experts, ffn, dim) * ffn ** -0.5)
        self.shared = nn.Sequential(nn.Linear(dim, ffn), nn.SiLU(), nn.Linear(ffn, dim))

    def mixture(self, h):
        scores = torch.sigmoid(self.gate(h))
        weights, chosen = scores.topk(self.top_k, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        gates = torch.zeros_like(scores).scatter(-1, chosen, weights)
        up = F.silu(torch.einsum("btd,edf->btef", h, self.w_gate)) * torch.einsum(
            "btd,edf->btef", h, self.w_up)
        routed = torch.einsum("bte,bted->btd", gates, torch.einsum("btef,efd->bted", up, self.w_down))
        return self.shared(h) + routed


def small_fcn():
    from torchvision.models._utils import IntermediateLayerGetter
    from torchvision.models.segmentation.fcn import FCN, FCNHead
    backbone = small_resnet(models.resnet.Bottleneck, replace_stride_with_dilation=[False, True, True])
    return FCN(IntermediateLayerGetter(backbone, {"layer4": "out"}), FCNHead(2048, 4))


def small_deeplabv3():
    from torchvision.models._utils import IntermediateLayerGetter
    from torchvision.models.segmentation.deeplabv3 import DeepLabV3, DeepLabHead
    backbone = small_resnet(models.resnet.BasicBlock)
    return DeepLabV3(IntermediateLayerGetter(backbone, {"layer4": "out"}), DeepLabHead(512, 4))


def small_lraspp():
    from torchvision.models._utils import IntermediateLayerGetter
    from torchvision.models.segmentation.lraspp import LRASPP
    features = small_mobilenet_v3().features
    # The low-level features after the first (stride 4) block, the high-level ones at the end.
    backbone = IntermediateLayerGetter(features, {"1": "low", str(len(features) - 1): "high"})
    return LRASPP(backbone, features[1].out_channels, features[-1].out_channels, 4, 32)


def small_video(block, conv_makers):
    from torchvision.models.video import resnet as video
    return video.VideoResNet(block, conv_makers, [1, 1, 1, 1], video.BasicStem, num_classes=10)


def video_model(full, small_args):
    def build(small, batch):
        from torchvision.models.video import resnet as video
        model = small_video(*small_args(video)) if small else full()
        frames, size = (4, 32) if small else (16, 112)
        return model, (torch.randn(batch, 3, frames, size, size),), ["input"], {"input": {0: "batch"}}
    return build


def segmentation_model(full, reduced):
    def build(small, batch):
        class Logits(nn.Module):  # torchvision's models return a dict
            def __init__(self, model):
                super().__init__()
                self.model = model

            def forward(self, x):
                return self.model(x)["out"]
        model = Logits(reduced() if small else full())
        example = images(batch, 32 if small else 520)
        return model, (example,), ["input"], {"input": {0: "batch"}}
    return build


def unet(small, batch):
    widths, size = ([8, 16, 32], 32) if small else ([64, 128, 256, 512, 1024], 256)
    return UNet(widths, 2), (images(batch, size),), ["input"], {"input": {0: "batch"}}


def vae_decoder(small, batch):
    widths, size = ([16, 16], 8) if small else ([512, 512, 256, 128], 32)
    z = torch.randn(batch, 4, size, size)
    return VaeDecoder(4, widths), (z,), ["latent"], {"latent": {0: "batch"}}


def audio_encoder(small, batch):
    channels, embed, heads, samples = (16, 32, 4, 1600) if small else (512, 768, 12, 16000)
    audio = torch.randn(batch, 1, samples)
    return AudioEncoder(channels, embed, heads, 32), (audio,), ["audio"], {"audio": {0: "batch"}}


def llama_decoder(small, batch):
    # Full: TinyLlama's heads, key/value heads and vocabulary at half its width and depth (160M
    # parameters, a 640 MB export).
    vocab, seq, dim, heads, kv, ffn, layers = ((64, 8, 32, 4, 2, 64, 2) if small
                                               else (32000, 512, 1024, 16, 4, 2816, 8))
    model = LlamaDecoder(vocab, seq, dim, heads, kv, ffn, layers)
    return model, (torch.randint(0, vocab, (batch, seq)),), ["ids"], {"ids": {0: "batch"}}


def moe_topk(small, batch):
    dim, heads, experts, k, ffn, seq = (32, 4, 4, 2, 64, 8) if small else (512, 8, 8, 2, 2048, 256)
    model = TopKMoE(dim, heads, experts, k, ffn)
    return model, (torch.randn(batch, seq, dim),), ["input"], {"input": {0: "batch"}}


def moe_shared_expert(small, batch):
    dim, heads, experts, k, ffn, seq = (32, 4, 4, 2, 32, 8) if small else (512, 8, 16, 4, 1024, 256)
    model = SharedExpertMoE(dim, heads, experts, k, ffn)
    return model, (torch.randn(batch, seq, dim),), ["input"], {"input": {0: "batch"}}


FAMILIES_2026 = {
    "unet": unet,
    "fcn_resnet50": segmentation_model(
        lambda: models.segmentation.fcn_resnet50(weights=None, weights_backbone=None, num_classes=21),
        small_fcn),
    "deeplabv3_resnet50": segmentation_model(
        lambda: models.segmentation.deeplabv3_resnet50(weights=None, weights_backbone=None,
                                                       num_classes=21), small_deeplabv3),
    "lraspp_mobilenet_v3_large": segmentation_model(
        lambda: models.segmentation.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None,
                                                              num_classes=21), small_lraspp),
    "r3d_18": video_model(lambda: models.video.r3d_18(),
                          lambda v: (v.BasicBlock, [v.Conv3DSimple] * 4)),
    "mc3_18": video_model(lambda: models.video.mc3_18(),
                          lambda v: (v.BasicBlock, [v.Conv3DSimple] + [v.Conv3DNoTemporal] * 3)),
    "audio_encoder": audio_encoder,
    "llama_decoder": llama_decoder,
    "moe_topk": moe_topk,
    "moe_shared_expert": moe_shared_expert,
    "vae_decoder": vae_decoder,
}


TORCH_NN = {"transformer": transformer, "transformer_encoder": transformer_encoder,
            "lstm_lm": recurrent("LSTM"), "gru_lm": recurrent("GRU"),
            "rnn_relu_lm": recurrent("RNN", nonlinearity="relu", bidirectional=True),
            "gpt_decoder": gpt_decoder}

NAMES = list(TORCHVISION) + list(TORCH_NN) + list(FAMILIES_2026)


def build(name, small, batch):
    if name in TORCHVISION:
        full, reduced, size_full, size_small = TORCHVISION[name]
        model = reduced() if small else full()
        example = images(batch, size_small if small else size_full)
        return model, (example,), ["input"], {"input": {0: "batch"}}
    if name in TORCH_NN:
        return TORCH_NN[name](small, batch)
    return FAMILIES_2026[name](small, batch)


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
