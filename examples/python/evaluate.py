"""Step 4 of the walk-through: the trained model back in Python.

    python3 evaluate.py RUN_DIR/model.safetensors [DATA_DIR]

Loads the model.safetensors hetps wrote at the end of the job into the same MyNet class with the
`safetensors` package (parameters and BatchNorm running statistics alike), and evaluates it on
the Fashion-MNIST test set. Prints the accuracy as `accuracy 0.8123`.
"""
import gzip
import os
import sys

import numpy as np
import torch
from safetensors.torch import load_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mynet import MyNet, to_input  # noqa: E402


def read_idx(path, header_bytes):
    with gzip.open(path, "rb") as f:
        return np.frombuffer(f.read(), dtype=np.uint8, offset=header_bytes)


def main():
    model_path = sys.argv[1]
    data_dir = sys.argv[2] if len(sys.argv) > 2 else "/usr/share/datasets/fashion-mnist"
    model = MyNet()
    model.load_state_dict(load_file(model_path))  # strict: every parameter and buffer must be there
    model.eval()
    images = torch.from_numpy(read_idx(f"{data_dir}/t10k-images-idx3-ubyte.gz", 16).reshape(-1, 28, 28).copy())
    labels = torch.from_numpy(read_idx(f"{data_dir}/t10k-labels-idx1-ubyte.gz", 8).astype(np.int64))
    correct = 0
    with torch.no_grad():
        for i in range(0, len(labels), 500):
            correct += (model(to_input(images[i:i + 500])).argmax(1) == labels[i:i + 500]).sum().item()
    print(f"accuracy {correct / len(labels):.4f}")


if __name__ == "__main__":
    main()
