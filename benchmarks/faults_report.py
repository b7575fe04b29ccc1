#!/usr/bin/env python3
"""Turns the run summaries of benchmarks/faults.sh into markdown tables and a JSON file; prints
the tables.

usage: faults_report.py --out DIR --runs-dir DIR --command CMD --job CMD --interval S --seconds N

Fault runs are runs-dir/fault-N, the undisturbed baselines undisturbed-MODE, and the checkpoint
cost pairs cost-N-none and cost-N-10s. Exits 1 when a summary is missing or says the job failed.
"""
import argparse
import datetime
import glob
import json
import os
import statistics
import sys

from modes_report import machine


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def main():
    parser = argparse.ArgumentParser()
    for flag in ("--out", "--runs-dir", "--command", "--job"):
        parser.add_argument(flag, required=True)
    parser.add_argument("--interval", type=float, required=True)
    parser.add_argument("--seconds", type=int, required=True)
    args = parser.parse_args()
    ok = True
    baselines = {}
    for mode in ("sync", "async", "ssp"):
        path = f"{args.runs_dir}/undisturbed-{mode}/summary.json"
        if not os.path.exists(f"{args.runs_dir}/undisturbed-{mode}.out"):
            continue  # --quick runs none
        s = load(path)
        ok = ok and s is not None and s["status"] == "ok"
        baselines[mode] = s["final_test_accuracy"] if s else None

    runs = []
    for path in sorted(glob.glob(f"{args.runs_dir}/fault-*/summary.json"),
                       key=lambda p: int(p.split("fault-")[1].split("/")[0])):
        s = load(path)
        name = os.path.basename(os.path.dirname(path))
        if s is None or s["status"] != "ok":
            ok = False
            runs.append({"run": name, "status": "failed" if s is None else s["status"]})
            continue
        servers = [f for f in s["failures"] if f["role"] == "server"]
        f = servers[0] if servers else {}
        runs.append({
            "run": name, "mode": s["mode"], "status": s["status"],
            "server_failures": len(servers),
            "detected_after_s": f.get("detected_after_s"),
            "recovery_seconds": f.get("recovery_seconds"),
            "samples_retrained": f.get("samples_retrained"),
            "interval_samples": round(s["samples_per_second"] * args.interval),
            "checkpoint": f.get("checkpoint"),
            "samples_completed": s["samples_completed"],
            "final_test_accuracy": s["final_test_accuracy"],
            "undisturbed_accuracy": baselines.get(s["mode"]),
            "trainers_alive": sum(1 for t in s["trainer_details"] if t["alive"]),
        })
    # Throughput with checkpoints every 10 s over none, per pair.
    pairs = []
    for path in sorted(glob.glob(f"{args.runs_dir}/cost-*-none/summary.json")):
        index = path.split("cost-")[1].split("-")[0]
        none, ten = load(path), load(f"{args.runs_dir}/cost-{index}-10s/summary.json")
        if not none or not ten or none["status"] != "ok" or ten["status"] != "ok":
            ok = False
            continue
        pairs.append({"pair": int(index), "none_samples_per_second": none["samples_per_second"],
                      "checkpointed_samples_per_second": ten["samples_per_second"],
                      "checkpoints": ten["checkpoints"]["count"],
                      "mean_write_seconds": ten["checkpoints"]["mean_write_seconds"],
                      "ratio": ten["samples_per_second"] / none["samples_per_second"]})
    ratios = [p["ratio"] for p in pairs]
    cost = {"pairs": pairs, "median_ratio": statistics.median(ratios) if ratios else None,
            "min_ratio": min(ratios) if ratios else None, "max_ratio": max(ratios) if ratios else None}

    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"Command: `{args.command}` ({args.seconds} s)", f"Job: `{args.job}`",
             f"Machine: {machine()}, {date}; load average {os.getloadavg()[0]:.1f} at the end", "",
             f"Fault runs (checkpoints every {args.interval:g} s; a server killed, every other run also a trainer):",
             "", "| run | mode | detected after s | recovery s | samples retrained | one interval's samples "
             "| checkpoint | final accuracy | undisturbed accuracy |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in runs:
        if r["status"] != "ok":
            lines.append(f"| {r['run']} | | failed | | | | | | |")
            continue
        fmt = lambda v, spec: "-" if v is None else format(v, spec)  # noqa: E731
        lines.append(f"| {r['run']} | {r['mode']} | {fmt(r['detected_after_s'], '.2f')} | "
                     f"{fmt(r['recovery_seconds'], '.2f')} | {fmt(r['samples_retrained'], ',')} | "
                     f"{r['interval_samples']:,} | {fmt(r['checkpoint'], 'd')} | {r['final_test_accuracy']:.4f} | "
                     f"{fmt(r['undisturbed_accuracy'], '.4f')} |")
    lines += ["", "Throughput with a checkpoint every 10 s against none (sync, alternating pairs):", "",
              "| pair | none samples/s | every 10 s samples/s | checkpoints | mean write s | ratio |",
              "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for p in pairs:
        lines.append(f"| {p['pair']} | {p['none_samples_per_second']:.0f} | "
                     f"{p['checkpointed_samples_per_second']:.0f} | {p['checkpoints']} | "
                     f"{p['mean_write_seconds']:.3f} | {p['ratio']:.3f} |")
    if ratios:
        lines.append(f"\nMedian ratio {cost['median_ratio']:.3f} (range {cost['min_ratio']:.3f}-"
                     f"{cost['max_ratio']:.3f}; target >= 0.95).")
    text = "\n".join(lines) + "\n"
    with open(f"{args.out}/faults.md", "w") as f:
        f.write(text)
    with open(f"{args.out}/faults.json", "w") as f:
        json.dump({"command": args.command, "job": args.job, "date": date, "runs": runs,
                   "undisturbed_accuracy": baselines, "checkpoint_cost": cost}, f, indent=2)
    print(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
