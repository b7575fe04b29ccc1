"""Writes what the TorchScript end-to-end tests train, with Debian's python3-torch (1.13):

  torchscript_models.py cnn OUT.pt            FashionCNN (the built-in cnn's architecture), seed 1
  torchscript_models.py regressor OUT.pt      an MLP 784-16-1 for loss mse, seed 1
  torchscript_models.py regression-data DIR   IDX files of a regression problem (below)
  torchscript_models.py wrong-input OUT.pt    a model that expects [B, 784], not images
  torchscript_models.py no-parameters OUT.pt  a module without parameters

The regression problem needs nothing but hetps's IDX reader: each image is a brightness b drawn
uniformly from [0, 256) plus uniform noise of +-40 per pixel (clipped to 0..255), and its label
is floor(b / 25.6), a value 0..9 that loss mse reads as a number. A model that estimates the
brightness reaches an R2 above 0.95; predicting the mean gives 0.
"""
import gzip
import os
import struct
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "lib"))
from hetps_models import FashionCNN  # noqa: E402


class Regressor(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = torch.nn.Linear(784, 16)
        self.out = torch.nn.Linear(16, 1)

    def forward(self, x):
        return self.out(torch.relu(self.hidden(x.flatten(1))))


class WrongInput(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(784, 10)

    def forward(self, x):
        return self.fc(x)  # images are [B, 1, 28, 28]: fails


class NoParameters(torch.nn.Module):
    def forward(self, x):
        return x.flatten(1)[:, :10]


def write_idx(path, magic, array):
    with gzip.open(path, "wb") as f:
        f.write(struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in array.shape))
        f.write(array.astype(np.uint8).tobytes())


def regression_data(directory, train=8000, test=2000):
    rng = np.random.default_rng(7)
    os.makedirs(directory, exist_ok=True)
    for prefix, n in (("train", train), ("t10k", test)):
        brightness = rng.uniform(0, 256, size=n)
        images = np.clip(brightness[:, None, None] + rng.uniform(-40, 40, size=(n, 28, 28)), 0, 255)
        labels = np.floor(brightness / 25.6)
        write_idx(f"{directory}/{prefix}-images-idx3-ubyte.gz", 0x803, images)
        write_idx(f"{directory}/{prefix}-labels-idx1-ubyte.gz", 0x801, labels)


def main():
    what, out = sys.argv[1:3]
    if what == "regression-data":
        return regression_data(out)
    torch.manual_seed(1)
    models = {"cnn": FashionCNN, "regressor": Regressor, "wrong-input": WrongInput, "no-parameters": NoParameters}
    torch.jit.script(models[what]()).save(out)


if __name__ == "__main__":
    main()
