"""Step 1 of the walk-through: a model written in PyTorch, scripted for hetps.

    python3 mynet.py mynet.pt

MyNet is an ordinary nn.Module: two convolutions with BatchNorm and a linear classifier over
Fashion-MNIST's 10 classes. hetps never sees this Python code: torch.jit.script turns the module
into a TorchScript file holding its code and its initial weights, which every hetps trainer loads
with LibTorch. Its input is what hetps's built-in data gives a model: float32 [batch, 1, 28, 28],
pixels scaled to [0, 1] (to_input() below does the same in Python); it standardises them with
Fashion-MNIST's mean and standard deviation as its first step. Its output is [batch, 10] logits
for loss cross_entropy.
"""
import sys

import torch

# The mean and standard deviation of Fashion-MNIST's training pixels scaled to [0, 1].
PIXEL_MEAN, PIXEL_STD = 0.2860, 0.3530


def to_input(images_uint8):
    """[N, 28, 28] uint8 pixels -> the float32 [N, 1, 28, 28] input hetps gives the model."""
    return (images_uint8.float() / 255.0).unsqueeze(1)


class MyNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 16, 3, padding=1)
        self.bn1 = torch.nn.BatchNorm2d(16)
        self.conv2 = torch.nn.Conv2d(16, 32, 3, padding=1)
        self.bn2 = torch.nn.BatchNorm2d(32)
        self.fc = torch.nn.Linear(32 * 7 * 7, 10)
        self.pixel_mean, self.pixel_std = PIXEL_MEAN, PIXEL_STD  # plain attributes: TorchScript keeps them

    def forward(self, x):
        x = (x - self.pixel_mean) / self.pixel_std
        x = torch.max_pool2d(torch.relu(self.bn1(self.conv1(x))), 2)
        x = torch.max_pool2d(torch.relu(self.bn2(self.conv2(x))), 2)
        return self.fc(x.flatten(1))


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "mynet.pt"
    torch.manual_seed(1)  # the initial weights travel in the file: every trainer starts from them
    torch.jit.script(MyNet()).save(path)
    print(f"mynet.py: scripted MyNet into {path}")


if __name__ == "__main__":
    main()
