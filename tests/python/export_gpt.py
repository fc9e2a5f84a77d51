#!/usr/bin/python3
"""Exports a small GPT-style causal decoder to ONNX for the importer tests
(tests/core/test_onnx_gpt_import.cpp).

usage: export_gpt.py OUTPUT.onnx [--opset N] [--mask triu|tril|buffer] [--bias] [--packed] [--tied]
                     [--batch N]

The model: token + learned position embeddings, 2 pre-LayerNorm blocks (causal self-attention with
separate q/k/v nn.Linear projections, or with --packed nanoGPT's one c_attn projection split into
q, k, v, and an output projection, then a GELU MLP), a final
LayerNorm and an LM head (tied to the token embedding with --tied). Vocabulary 96, sequence 16,
d_model 32, 4 heads. The causal mask is built inside forward(), as GPT code does:
  triu    scores.masked_fill(torch.triu(torch.ones(T, T), 1).bool(), -inf)
  tril    scores.masked_fill(torch.tril(torch.ones(T, T)) == 0, float('-inf'))
  buffer  a registered tril buffer sliced to [:T, :T] (nanoGPT's self.bias), masked_fill == 0
Exit status 77 when torch cannot be imported, so callers can skip.
"""
import argparse
import math
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

VOCAB, SEQ, EMBED, HEADS, LAYERS = 96, 16, 32, 4, 2


class CausalSelfAttention(nn.Module):
    def __init__(self, mask, bias, packed):
        super().__init__()
        self.packed = packed
        if packed:
            self.qkv = nn.Linear(EMBED, 3 * EMBED, bias=bias)
        else:
            self.q = nn.Linear(EMBED, EMBED, bias=bias)
            self.k = nn.Linear(EMBED, EMBED, bias=bias)
            self.v = nn.Linear(EMBED, EMBED, bias=bias)
        self.proj = nn.Linear(EMBED, EMBED, bias=bias)
        self.mask = mask
        if mask == "buffer":
            self.register_buffer("causal", torch.tril(torch.ones(SEQ, SEQ)).view(1, 1, SEQ, SEQ))

    def forward(self, x):
        b, t, e = x.size()
        head = e // HEADS
        if self.packed:
            q, k, v = self.qkv(x).split(e, dim=2)
        else:
            q, k, v = self.q(x), self.k(x), self.v(x)
        q = q.view(b, t, HEADS, head).transpose(1, 2)
        k = k.view(b, t, HEADS, head).transpose(1, 2)
        v = v.view(b, t, HEADS, head).transpose(1, 2)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(head))
        if self.mask == "triu":
            mask = torch.triu(torch.ones(t, t, device=x.device), diagonal=1).bool()
            scores = scores.masked_fill(mask, float("-inf"))
        elif self.mask == "tril":
            mask = torch.tril(torch.ones(t, t, device=x.device))
            scores = scores.masked_fill(mask == 0, float("-inf"))
        else:
            scores = scores.masked_fill(self.causal[:, :, :t, :t] == 0, float("-inf"))
        attention = F.softmax(scores, dim=-1)
        y = (attention @ v).transpose(1, 2).contiguous().view(b, t, e)
        return self.proj(y)


class Block(nn.Module):
    def __init__(self, mask, bias, packed):
        super().__init__()
        self.ln1 = nn.LayerNorm(EMBED)
        self.attn = CausalSelfAttention(mask, bias, packed)
        self.ln2 = nn.LayerNorm(EMBED)
        self.fc = nn.Linear(EMBED, 4 * EMBED)
        self.out = nn.Linear(4 * EMBED, EMBED)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class Gpt(nn.Module):
    def __init__(self, mask, bias, packed, tied):
        super().__init__()
        self.tokens = nn.Embedding(VOCAB, EMBED)
        self.positions = nn.Embedding(SEQ, EMBED)
        self.blocks = nn.ModuleList([Block(mask, bias, packed) for _ in range(LAYERS)])
        self.ln_f = nn.LayerNorm(EMBED)
        self.head = nn.Linear(EMBED, VOCAB, bias=False)
        if tied:
            self.head.weight = self.tokens.weight

    def forward(self, ids):
        t = ids.size(1)
        positions = torch.arange(0, t, dtype=torch.long, device=ids.device).unsqueeze(0)
        x = self.tokens(ids) + self.positions(positions)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("output")
    parser.add_argument("--opset", type=int, default=13)
    parser.add_argument("--mask", choices=["triu", "tril", "buffer"], default="triu")
    parser.add_argument("--bias", action="store_true", help="biases on the attention projections")
    parser.add_argument("--packed", action="store_true", help="one q/k/v projection, split")
    parser.add_argument("--tied", action="store_true", help="LM head tied to the token embedding")
    parser.add_argument("--batch", type=int, default=2)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = Gpt(args.mask, args.bias, args.packed, args.tied).eval()
    ids = torch.randint(0, VOCAB, (args.batch, SEQ))
    try:
        torch.onnx.export(model, (ids,), args.output, opset_version=args.opset,
                          input_names=["ids"], output_names=["logits"],
                          dynamic_axes={"ids": {0: "batch"}, "logits": {0: "batch"}})
    except Exception as error:  # an exporter too old for the opset
        print(f"export at opset {args.opset} failed: {error}", file=sys.stderr)
        sys.exit(77 if "opset" in str(error).lower() else 1)
    print(f"exported GPT ({args.mask} mask, opset {args.opset}) to {args.output}")


if __name__ == "__main__":
    main()
