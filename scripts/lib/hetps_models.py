"""hetps's built-in models (trainer/models/models.cc) written in PyTorch, with the same parameter
names and the same standardisation of their input, and a reader of the data set's files: what
Python code beside hetps needs to open its models and data (the export test, the step benchmark's
Python loop). Runs with Debian's python3-torch.
"""
import gzip

import numpy as np
import torch

# hetps hands models pixels in [0, 1]; the built-in models standardise them first, with these
# (kPixelMean and kPixelStd in trainer/models/models.h).
PIXEL_MEAN, PIXEL_STD = 0.2860, 0.3530


def to_input(images_uint8):
    """uint8 images [N, 1, 28, 28] -> the float32 pixels in [0, 1] hetps gives a model."""
    return images_uint8.float() / 255.0


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(784, 512)
        self.fc2 = torch.nn.Linear(512, 256)
        self.fc3 = torch.nn.Linear(256, 10)
        self.pixel_mean, self.pixel_std = PIXEL_MEAN, PIXEL_STD  # plain attributes: TorchScript keeps them

    def forward(self, x):
        x = torch.relu(self.fc1(((x - self.pixel_mean) / self.pixel_std).flatten(1)))
        x = torch.relu(self.fc2(x))
        return self.fc3(x)


class FashionCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 32, 5, padding=2)
        self.conv2 = torch.nn.Conv2d(32, 64, 5, padding=2)
        self.fc1 = torch.nn.Linear(64 * 7 * 7, 512)
        self.fc2 = torch.nn.Linear(512, 10)
        self.pixel_mean, self.pixel_std = PIXEL_MEAN, PIXEL_STD

    def forward(self, x):
        x = torch.max_pool2d(torch.relu(self.conv1((x - self.pixel_mean) / self.pixel_std)), 2)
        x = torch.max_pool2d(torch.relu(self.conv2(x)), 2)
        x = torch.relu(self.fc1(x.flatten(1)))
        return self.fc2(x)


def read_idx(path, offset):
    """The bytes of a gzip'd IDX file after its `offset`-byte header."""
    with gzip.open(path, "rb") as f:
        return np.frombuffer(f.read(), dtype=np.uint8, offset=offset)
