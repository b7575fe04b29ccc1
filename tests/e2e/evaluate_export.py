"""Loads a model hetps exported (model.safetensors) into the FashionCNN written in PyTorch, the way
a Python user would (safetensors.torch.load_file, module.load_state_dict), evaluates it on the
Fashion-MNIST test set, and checks the accuracy against the one hetps reported.

usage: /usr/bin/python3 evaluate_export.py MODEL.safetensors SUMMARY.json DATA_DIR [TOLERANCE]
Runs with Debian's python3-torch and the PyPI safetensors that scripts/install-deps.sh installs.
"""
import json
import os
import sys

import numpy as np
import torch
from safetensors.torch import load_file

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "lib"))
from hetps_models import FashionCNN, read_idx, to_input  # noqa: E402


def main():
    model_path, summary_path, data_dir = sys.argv[1:4]
    tolerance = float(sys.argv[4]) if len(sys.argv) > 4 else 0.002
    summary = json.load(open(summary_path))
    model = FashionCNN()
    state = load_file(model_path)
    model.load_state_dict(state)  # strict: every name and shape must match
    model.eval()
    images = read_idx(f"{data_dir}/t10k-images-idx3-ubyte.gz", 16).reshape(-1, 1, 28, 28)
    labels = torch.from_numpy(read_idx(f"{data_dir}/t10k-labels-idx1-ubyte.gz", 8).astype(np.int64))
    x = to_input(torch.from_numpy(images.copy()))
    torch.set_num_threads(1)
    correct = 0
    with torch.no_grad():
        for i in range(0, len(labels), 500):
            correct += (model(x[i:i + 500]).argmax(1) == labels[i:i + 500]).sum().item()
    accuracy = correct / len(labels)
    reported = summary["final_test_accuracy"]
    print(f"evaluate_export: {len(state)} tensors; Python accuracy {accuracy:.4f}, hetps reported {reported:.4f}")
    if abs(accuracy - reported) > tolerance:
        sys.exit(f"evaluate_export: accuracies differ by {abs(accuracy - reported):.4f} > {tolerance}")


if __name__ == "__main__":
    main()
