"""hetps's built-in models (trainer/models/models.cc) written in PyTorch, with the same parameter
names, the Fashion-MNIST normalisation of the trainer, and a reader of the data set's files: what
Python code beside hetps needs to open its models and data (the export test, the step benchmark's
Python loop). Runs with Debian's python3-torch.
"""
import gzip

import numpy as np
import torch

# The trainer's normalisation (trainer/data/fashion_mnist.h).
PIXEL_MEAN, PIXEL_STD = 0.2860, 0.3530


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(784, 512)
        self.fc2 = torch.nn.Linear(512, 256)
        self.fc3 = torch.nn.Linear(256, 10)

    def forward(self, x):
        x = torch.relu(self.fc1(x.flatten(1)))
        x = torch.relu(self.fc2(x))
        return self.fc3(x)


class FashionCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 32, 5, padding=2)
        self.conv2 = torch.nn.Conv2d(32, 64, 5, padding=2)
        self.fc1 = torch.nn.Linear(64 * 7 * 7, 512)
        self.fc2 = torch.nn.Linear(512, 10)

    def forward(self, x):
        x = torch.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = torch.max_pool2d(torch.relu(self.conv2(x)), 2)
        x = torch.relu(self.fc1(x.flatten(1)))
        return self.fc2(x)


def read_idx(path, offset):
    """The bytes of a gzip'd IDX file after its `offset`-byte header."""
    with gzip.open(path, "rb") as f:
        return np.frombuffer(f.read(), dtype=np.uint8, offset=offset)
