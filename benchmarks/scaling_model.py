#!/usr/bin/python3
"""The cost of a training step, fitted to benchmarks/results/scaling.json, and what it predicts.

    benchmarks/scaling_model.py [scaling.json] [--net-rtt-ms X]

A trainer's step (64 samples, or whatever the measurements used) costs, in seconds:

  sync:  T = C + L + A * t * P / s + S * C * (1 - 1/t) + link
  async: T = C + L + A * P / s + link, and the servers bound the whole job to
         s / max(A * P, M / B) steps per second

  C     the model's compute per step on one trainer (forward, backward, gradient hand-off),
        taken from the 1-trainer jobs
  L     the fixed cost of a step's round trip (messages, control, wake-ups)
  A     the servers' time per parameter pushed (receive, sum, apply, reply); a sync server
        handles all t trainers' pushes of its P / s parameters each round
  S     the sync round's wait for its slowest trainer, as a share of C (steps vary in length)
  link  bytes over bandwidth: M = 4 P bytes (fp32) pushed and pulled per step; a trainer's link
        carries 2 M / B, a server's 2 M t / (s B) in sync (pushes in, then the weights out)
t trainers, s servers, P parameters, B the network's bandwidth (bytes/s). L, A and S are fitted
by non-negative least squares, in relative terms, to the measured time outside compute (step -
compute) of every job; on one machine the link term is loopback copying, which L and A absorb.

Writes "cost_model" and "predictions" into the JSON and prints them as markdown tables.
"""
import argparse
import itertools
import json
import math
import sys

import numpy as np

NETWORKS = {"1 GbE": 117e6, "10 GbE": 1.17e9}  # TCP payload bytes/s of a full link
CLUSTER_TRAINERS = (8, 32, 128)
CLUSTER_SERVERS = (1, 2, 4, 8, 16, 32)


def nnls(x, y):
    """Least squares with every coefficient >= 0: the best of the fits on subsets of columns."""
    best, best_err = np.zeros(x.shape[1]), float(np.sum(y**2))
    for k in range(1, x.shape[1] + 1):
        for cols in itertools.combinations(range(x.shape[1]), k):
            coef, *_ = np.linalg.lstsq(x[:, cols], y, rcond=None)
            if np.any(coef < 0):
                continue
            err = float(np.sum((x[:, cols] @ coef - y) ** 2))
            if err < best_err:
                best, best_err = np.zeros(x.shape[1]), err
                best[list(cols)] = coef
    return best


def regressors(mode, t, s, p, c):
    applied = t * p / s if mode == "sync" else p / s
    straggler = c * (1 - 1 / t) if mode == "sync" else 0.0
    return [1.0, applied, straggler]


def fit(cases):
    """Returns C per model (s) and L, A, S, with each case's predicted step."""
    compute = {}
    for model in sorted({c["model"] for c in cases}):
        ones = [c["step_ms"]["compute"] for c in cases if c["model"] == model and c["trainers"] == 1]
        if not ones:
            sys.exit(f"scaling_model.py: no 1-trainer job of model {model} to take its compute from")
        compute[model] = float(np.median(ones)) / 1e3
    x = np.array([regressors(c["mode"], c["trainers"], c["servers"], c["parameters"],
                             c["step_ms"]["compute"] / 1e3) for c in cases])
    y = np.array([(c["step_ms"]["step"] - c["step_ms"]["compute"]) / 1e3 for c in cases])
    # Relative errors count: each job's row is divided by its step time, so that the MLP's short
    # steps weigh as much as the CNN's long ones.
    weight = np.array([1e3 / c["step_ms"]["step"] for c in cases])
    latency, apply_per_param, straggler = nnls(x * weight[:, None], y * weight)
    for c, row in zip(cases, x):
        outside = float(row @ np.array([latency, apply_per_param, straggler]))
        c["predicted_step_ms"] = c["step_ms"]["compute"] + 1e3 * outside
    errors = [abs(c["predicted_step_ms"] / c["step_ms"]["step"] - 1) for c in cases]
    return compute, latency, apply_per_param, straggler, errors


def per(work):
    """Steps per second of a part that takes `work` seconds per step (none: no bound)."""
    return 1 / work if work > 0 else math.inf


def sync_step(c, latency, a, strag, p, t, s, link_seconds):
    return c + latency + a * t * p / s + strag * c * (1 - 1 / t) + link_seconds


def throughput(mode, c, latency, a, strag, p, t, s, bandwidth, net_rtt, batch):
    """Samples/s of t trainers and s servers, each on a machine of its own, on one switched network."""
    m = 4 * p
    if mode == "sync":
        link = 2 * m * max(1, t / s) / bandwidth + net_rtt
        return t * batch / sync_step(c, latency, a, strag, p, t, s, link)
    step = c + latency + a * p / s + 2 * m / bandwidth + net_rtt
    return batch * min(t / step, s * per(max(a * p, m / bandwidth)))


def home(mode, c, latency, a, strag, p, servers, bandwidth, net_rtt, batch):
    """Two equal machines: a trainer on each, the servers on the first (1) or one on each (2).

    The first machine's trainer reaches its servers over loopback; the second's bytes cross the
    link. With one server each step moves M each way over it (pushes, then the weights back);
    with one server per machine the two trainers' halves cross in both directions at once, M/2
    per direction and phase."""
    m = 4 * p
    link = (2 * m if servers == 1 else m) / bandwidth + net_rtt
    if mode == "sync":
        return 2 * batch / sync_step(c, latency, a, strag, p, 2, servers, link)
    near = c + latency + a * p / servers + (0 if servers == 1 else link)
    far = c + latency + a * p / servers + link
    return batch * min(1 / near + 1 / far, servers * per(a * p))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("json", nargs="?", default="benchmarks/results/scaling.json")
    parser.add_argument("--net-rtt-ms", type=float, default=0.2,
                        help="a round trip over the network, on top of the fitted loopback one")
    args = parser.parse_args()
    try:
        data = json.load(open(args.json))
        cases = data["cases"]
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"scaling_model.py: cannot read the measurements in {args.json}: {e}")
    compute, latency, a, strag, errors = fit(cases)
    batch = data["batch_per_trainer"]
    net_rtt = args.net_rtt_ms / 1e3
    params = {c["model"]: c["parameters"] for c in cases}
    print("\nCost model (fitted to the jobs above):")
    print(f"- round trip L = {1e3 * latency:.2f} ms, server time per parameter pushed A = {1e9 * a:.2f} ns, "
          f"sync wait for the slowest trainer S = {strag:.2f} x compute")
    for model, c in compute.items():
        print(f"- {model}: compute C = {1e3 * c:.1f} ms per step of {batch}, {params[model]:,} parameters "
              f"({4 * params[model] / 1e6:.2f} MB each way per step)")
    print(f"- predicted step time within {100 * np.median(errors):.0f}% of the measured one (median; "
          f"worst {100 * max(errors):.0f}%) over {len(cases)} jobs")

    predictions = []
    for model, c in compute.items():
        p = params[model]
        alone = batch / (c + latency + a * p)
        print(f"\n{model}, two machines of this speed (one trainer each; the fast path alone: {alone:.0f} samples/s):\n")
        print("| servers | " + " | ".join(f"{n} {mode}" for n in NETWORKS for mode in ("sync", "async")) + " |")
        print("| --- |" + " ---: |" * (2 * len(NETWORKS)))
        for servers in (1, 2):
            row = []
            for net, bw in NETWORKS.items():
                for mode in ("sync", "async"):
                    v = home(mode, c, latency, a, strag, p, servers, bw, net_rtt, batch)
                    predictions.append({"case": "home", "model": model, "network": net, "mode": mode,
                                        "servers": servers, "trainers": 2, "samples_per_second": v,
                                        "vs_one_machine": v / alone})
                    row.append(f"{v:.0f} ({v / alone:.2f}x)")
            print(f"| {servers} | " + " | ".join(row) + " |")
        for net, bw in NETWORKS.items():
            print(f"\n{model}, trainers on {net}, each on a machine of its own, servers on machines of their own "
                  f"(sync samples/s, async in brackets; * the fewest servers for 90% of the best):\n")
            print("| trainers | " + " | ".join(f"{s} servers" for s in CLUSTER_SERVERS) + " |")
            print("| ---: |" + " ---: |" * len(CLUSTER_SERVERS))
            for t in CLUSTER_TRAINERS:
                sync = [throughput("sync", c, latency, a, strag, p, t, s, bw, net_rtt, batch) for s in CLUSTER_SERVERS]
                asyn = [throughput("async", c, latency, a, strag, p, t, s, bw, net_rtt, batch) for s in CLUSTER_SERVERS]
                enough = next(i for i, v in enumerate(sync) if v >= 0.9 * max(sync))
                cells = []
                for i, s in enumerate(CLUSTER_SERVERS):
                    predictions.append({"case": "cluster", "model": model, "network": net, "trainers": t,
                                        "servers": s, "sync_samples_per_second": sync[i],
                                        "async_samples_per_second": asyn[i], "enough_servers": i == enough})
                    cells.append(f"{sync[i]:.0f} ({asyn[i]:.0f}){'*' if i == enough else ''}")
                print(f"| {t} | " + " | ".join(cells) + " |")
    data["cost_model"] = {
        "round_trip_ms": 1e3 * latency, "server_ns_per_parameter": 1e9 * a, "sync_straggler_share": strag,
        "compute_ms": {m: 1e3 * c for m, c in compute.items()}, "parameters": params,
        "net_rtt_ms": args.net_rtt_ms, "bandwidth_bytes_per_second": NETWORKS,
        "median_error": float(np.median(errors)), "max_error": float(max(errors))}
    data["predictions"] = predictions
    if not all(math.isfinite(v) for v in (latency, a, strag)):
        sys.exit("scaling_model.py: the fit did not converge")
    json.dump(data, open(args.json, "w"), indent=1)


if __name__ == "__main__":
    main()
