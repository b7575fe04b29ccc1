#!/usr/bin/env python3
"""Turns the run summaries of benchmarks/modes.sh into a table (markdown), a JSON file and a plot
of test accuracy against wall time.

usage: modes_report.py --out DIR --command CMD --job FLAGS --seconds N NAME|SUMMARY ...
(an empty SUMMARY marks a case that failed)
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys

THRESHOLDS = (0.85, 0.88)


def machine():
    model = platform.processor() or "unknown CPU"
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    memory = ""
    try:
        with open("/proc/meminfo") as f:
            kib = int(f.readline().split()[1])
            memory = f", {kib / 2**20:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    return f"{model}, {os.cpu_count()} cores{memory}, {platform.system()} {platform.release()}"


def curve(summary):
    """(wall seconds, samples trained, accuracy) of every evaluation, in time order. Periodic
    evaluations carry the time their weights were taken; the final one is at the end of training."""
    points = []
    for e in summary.get("evaluations", []):
        wall = summary["train_seconds"] if e["final"] else e["wall_seconds"]
        points.append((wall, e["samples_trained"], e["test_accuracy"]))
    return sorted(points)


def time_to(points, threshold):
    for wall, _, accuracy in points:
        if accuracy >= threshold:
            return wall
    return None


def case_figures(name, path):
    if not path:
        return {"mode": name, "status": "failed"}
    with open(path) as f:
        s = json.load(f)
    points = curve(s)
    figures = {
        "mode": name,
        "status": s.get("status", "failed"),
        "samples_per_second": s["samples_per_second"],
        "train_seconds": s["train_seconds"],
        "final_test_accuracy": s["final_test_accuracy"],
        "staleness_p50": s["staleness_p50"],
        "staleness_p99": s["staleness_p99"],
        "staleness_max": s["staleness_max"],
        "max_clock_gap": s["max_clock_gap"],
        "batch_share": s["batch_share"],
        "samples": s["samples"],
        "curve": [{"wall_seconds": w, "samples_trained": n, "test_accuracy": a} for w, n, a in points],
    }
    for t in THRESHOLDS:
        figures[f"seconds_to_{t}"] = time_to(points, t)
    return figures


def markdown(cases, args):
    lines = [
        "# Consistency modes with one trainer four times slower",
        "",
        f"Command: `{args.command}` ({args.seconds} s in all)  ",
        f"Job: `scripts/launch_local.sh {args.job}` plus each mode's flags  ",
        f"Machine: {machine()}  ",
        f"Date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        "",
        "Time to accuracy counts training time only: each periodic evaluation uses a copy of the "
        "weights taken at that time and evaluated at the end.",
        "",
        "| mode | samples/s | s to 0.85 | s to 0.88 | final accuracy | staleness p50 / p99 | max clock gap | batch share |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for c in cases:
        if c["status"] != "ok":
            lines.append(f"| {c['mode']} | failed | | | | | | |")
            continue
        reach = ["not reached" if c[f"seconds_to_{t}"] is None else f"{c[f'seconds_to_{t}']:.1f}"
                 for t in THRESHOLDS]
        share = ", ".join(f"{x:.2f}" for x in c["batch_share"])
        lines.append(
            f"| {c['mode']} | {c['samples_per_second']:.0f} | {reach[0]} | {reach[1]} | "
            f"{c['final_test_accuracy']:.4f} | {c['staleness_p50']} / {c['staleness_p99']} | "
            f"{c['max_clock_gap']} | {share} |")
    return "\n".join(lines) + "\n"


def plot(cases, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("modes_report: matplotlib is missing (scripts/install-deps.sh installs it); no plot",
              file=sys.stderr)
        return False
    fig, ax = plt.subplots(figsize=(9, 5.5))
    for c in cases:
        if c["status"] != "ok" or not c["curve"]:
            continue
        ax.plot([p["wall_seconds"] for p in c["curve"]], [p["test_accuracy"] for p in c["curve"]],
                marker="o", markersize=3, label=c["mode"])
    for t in THRESHOLDS:
        ax.axhline(t, color="grey", linewidth=0.6, linestyle=":")
    ax.set_xlabel("wall time of training (s)")
    ax.set_ylabel("test accuracy (10,000 images)")
    ax.set_title("FashionCNN, one server, two trainers, one 4x slower")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--command", required=True)
    parser.add_argument("--job", required=True)
    parser.add_argument("--seconds", type=int, required=True)
    parser.add_argument("cases", nargs="+", help="NAME|SUMMARY")
    args = parser.parse_args()
    cases = []
    for entry in args.cases:
        name, _, path = entry.partition("|")
        try:
            cases.append(case_figures(name, path))
        except (OSError, KeyError, ValueError) as e:
            print(f"modes_report: cannot read the summary of '{name}' ({path}): {e}", file=sys.stderr)
            cases.append({"mode": name, "status": "failed"})
    os.makedirs(args.out, exist_ok=True)
    table = markdown(cases, args)
    with open(os.path.join(args.out, "modes.md"), "w") as f:
        f.write(table)
    with open(os.path.join(args.out, "modes.json"), "w") as f:
        json.dump({"command": args.command, "job": args.job, "machine": machine(), "cases": cases}, f, indent=2)
    plotted = plot(cases, os.path.join(args.out, "modes.png"))
    print(table)
    print(f"modes_report: wrote {args.out}/modes.md, modes.json" + (", modes.png" if plotted else ""))


if __name__ == "__main__":
    main()
