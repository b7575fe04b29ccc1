"""The plain training loop in Python, the second baseline of `benchmarks/run.sh step`: the same
models (hetps's built-in mlp and cnn, trainer/models/models.cc), data, normalisation, batch order,
optimizer (SGD, lr 0.05, momentum 0.9) and LibTorch thread count as hetps-bench-step, with the
same phases timed. Prints one JSON object.

usage: /usr/bin/python3 step_loop.py --model cnn --batch 64 --threads 1 --steps 100 --pairs 3
Runs with Debian's python3-torch (scripts/install-deps.sh installs it).
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts", "lib"))
from hetps_models import FashionCNN, Mlp, read_idx, to_input  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", choices=["mlp", "cnn"], default="cnn")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    images = read_idx(f"{args.data_dir}/train-images-idx3-ubyte.gz", 16).reshape(-1, 1, 28, 28)
    labels = torch.from_numpy(read_idx(f"{args.data_dir}/train-labels-idx1-ubyte.gz", 8).astype(np.int64))
    pixels = torch.from_numpy(images.copy())  # uint8, scaled to [0, 1] per batch as the trainer does
    n = len(labels)
    model = Mlp() if args.model == "mlp" else FashionCNN()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    phases = {"batch": 0.0, "forward": 0.0, "backward": 0.0, "optimizer": 0.0}

    def step(k, timed):
        t0 = time.perf_counter()
        index = torch.arange(k * args.batch, (k + 1) * args.batch) % n
        x = to_input(pixels[index])
        y = labels[index]
        optimizer.zero_grad()
        t1 = time.perf_counter()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        t2 = time.perf_counter()
        loss.backward()
        t3 = time.perf_counter()
        optimizer.step()
        t4 = time.perf_counter()
        if timed:
            phases["batch"] += t1 - t0
            phases["forward"] += t2 - t1
            phases["backward"] += t3 - t2
            phases["optimizer"] += t4 - t3

    for k in range(10):  # warm-up, as hetps-bench-step
        step(k, False)
    rates = []
    for pair in range(args.pairs):
        first = 10 + pair * args.steps
        start = time.perf_counter()
        for k in range(args.steps):
            step(first + k, True)
        rates.append(args.steps * args.batch / (time.perf_counter() - start))
    us = 1e6 / (args.steps * args.pairs)
    print(json.dumps({"model": args.model, "batch": args.batch, "threads": args.threads,
                      "torch": torch.__version__, "samples_per_second": statistics.median(rates),
                      "blocks": rates,
                      "phases_us": {k: round(v * us, 1) for k, v in phases.items()}}))


if __name__ == "__main__":
    main()
