"""A small GPT for hetps: a decoder-only transformer over token ids, scripted for the trainers.

    /usr/bin/python3 examples/gpt/gpt.py --vocab DIR/vocab.json --out gpt.pt \
        [--layers 4 --heads 4 --width 128 --context 256 --seed 1]

writes gpt.pt, a TorchScript file a job names as `model: {torchscript: gpt.pt}` next to
`data: {format: tokens, ...}` (examples/gpt/job.yaml). The vocabulary's size comes from vocab.json
(hetps-data tokenize writes it beside train.bin and val.bin).

The model: learned token and position embeddings, `layers` pre-norm blocks (LayerNorm, causal
self-attention with `heads` heads, LayerNorm, a 4x GELU MLP, each with a residual), a final
LayerNorm and a linear head to the vocabulary. forward takes int64 ids [batch, T <= context] and
returns logits [batch, T, vocab]. No dropout: the same weights give the same logits in training
and evaluation, and hetps's built-in `model: gpt` (trainer/models/gpt.cc) is this module, with
the same parameter names, so sample.py loads a model trained either way. About 0.8 M parameters
with the defaults and a character vocabulary.

Runs with Debian's python3-torch (1.13): torch.jit.script reads this file's source, so the module
must be defined in a file (not on stdin).
"""

import argparse
import json
import math
from typing import List

import torch
from torch import nn
from torch.nn import functional as F


class CausalSelfAttention(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        if width % heads != 0:
            raise ValueError(f"{heads} heads do not divide width {width}")
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, width = x.size(0), x.size(1), x.size(2)
        head_width = width // self.heads
        q, k, v = self.qkv(x).split(width, dim=2)
        q = q.view(batch, length, self.heads, head_width).transpose(1, 2)
        k = k.view(batch, length, self.heads, head_width).transpose(1, 2)
        v = v.view(batch, length, self.heads, head_width).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(head_width))
        future = torch.ones(length, length, dtype=torch.bool, device=x.device).triu(1)
        scores = scores.masked_fill(future, float("-inf"))
        y = torch.matmul(F.softmax(scores, dim=-1), v)
        y = y.transpose(1, 2).contiguous().view(batch, length, width)
        return self.proj(y)


class Mlp(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.fc = nn.Linear(width, 4 * width)
        self.proj = nn.Linear(4 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(F.gelu(self.fc(x)))


class Block(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.ln1 = nn.LayerNorm(width)
        self.attn = CausalSelfAttention(width, heads)
        self.ln2 = nn.LayerNorm(width)
        self.mlp = Mlp(width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab: int, layers: int = 4, heads: int = 4, width: int = 128, context: int = 256):
        super().__init__()
        self.context = context
        self.wte = nn.Embedding(vocab, width)
        self.wpe = nn.Embedding(context, width)
        self.blocks = nn.ModuleList([Block(width, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)
        self.reset_parameters(layers)

    def reset_parameters(self, layers: int) -> None:
        """GPT-2's initialisation: N(0, 0.02) weights, zero biases, the residual projections
        scaled by 1 / sqrt(2 * layers)."""
        for name, parameter in self.named_parameters():
            if name.endswith(".bias"):
                nn.init.zeros_(parameter)
            elif ".ln" in name or name.startswith("ln_f"):
                nn.init.ones_(parameter)
            elif name.endswith("proj.weight"):
                nn.init.normal_(parameter, 0.0, 0.02 / math.sqrt(2 * layers))
            else:
                nn.init.normal_(parameter, 0.0, 0.02)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(ids.size(1), dtype=torch.long, device=ids.device)
        x = self.wte(ids) + self.wpe(positions)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


def shape_of(state: dict, heads: int) -> dict:
    """The constructor's arguments for a state_dict of this module (heads cannot be read off it)."""
    layers = 1 + max(int(name.split(".")[1]) for name in state if name.startswith("blocks."))
    vocab, width = state["wte.weight"].shape
    return {"vocab": vocab, "layers": layers, "heads": heads, "width": width, "context": state["wpe.weight"].shape[0]}


def read_vocab_size(path: str) -> int:
    with open(path, encoding="utf-8") as f:
        return int(json.load(f)["vocab_size"])


def main(argv: List[str] = None) -> None:
    parser = argparse.ArgumentParser(description="Writes a small GPT as a TorchScript file for hetps.")
    parser.add_argument("--vocab", required=True, help="vocab.json (hetps-data tokenize writes it)")
    parser.add_argument("--out", required=True, help="the TorchScript file to write, e.g. gpt.pt")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--context", type=int, default=256, help="positions (at least the job's data.context)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    torch.manual_seed(args.seed)
    vocab = read_vocab_size(args.vocab)
    model = GPT(vocab, args.layers, args.heads, args.width, args.context)
    torch.jit.script(model).save(args.out)
    parameters = sum(p.numel() for p in model.parameters())
    print(f"gpt.py: wrote {args.out}: {args.layers} layers, {args.heads} heads, width {args.width}, "
          f"context {args.context}, vocabulary {vocab}: {parameters:,} parameters")


if __name__ == "__main__":
    main()
