#!/usr/bin/env python3
"""Turns the run summaries of benchmarks/modes.sh into a markdown table, a JSON file and a plot of
test accuracy against wall time, one line per case; prints the table.

usage: modes_report.py --out DIR --command CMD --job CMD --seconds N MODE|FLAGS|SUMMARY ...

An empty SUMMARY marks a case whose launch failed. Exits 1 when any case failed (no summary, or a
summary whose status is not "ok"), after writing the report with that case marked "failed".
"""
import argparse
import datetime
import json
import os
import re
import subprocess
import sys

THRESHOLDS = (0.85, 0.88)


def machine():
    """lscpu model name, cores, memory and the kernel, as one line."""
    info = {}
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            key, _, value = line.partition(":")
            info[key.strip()] = value.strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    model = info.get("Model name", "unknown CPU")
    cores = info.get("CPU(s)", str(os.cpu_count()))
    memory = "unknown memory"
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    memory = f"{int(line.split()[1]) / 2**20:.1f} GiB"
    except (OSError, ValueError):
        pass
    virtual = f", {info['Hypervisor vendor']} virtual machine" if "Hypervisor vendor" in info else ""
    return f"{model}, {cores} cores, {memory}{virtual}, Linux {os.uname().release}"


def curve(summary):
    """(wall seconds, samples trained, test accuracy) in time order: every snapshot evaluation, at
    the time its weights were taken, then the final evaluation at the end of training."""
    points = []
    for e in summary.get("evaluations", []):
        if e.get("snapshot", 0) > 0:
            points.append((e["wall_seconds"], e["samples_trained"], e["test_accuracy"]))
        elif e.get("final"):
            points.append((summary["train_seconds"], e["samples_trained"], e["test_accuracy"]))
    return sorted(points)


def first_reaching(points, threshold):
    """The first point at or above threshold, or None."""
    return next((p for p in points if p[2] >= threshold), None)


def slowdown_by_rank(flags, run_dir):
    """{rank: slowdown factor}, or None when unknown. Ranks follow the order in which trainers
    joined, not the order of --slowdown, so each launched trainer's log (trainer-I.log, started
    with the I-th factor) is read for the rank it was given."""
    match = re.search(r"--slowdown (\S+)", flags)
    if not match:
        return None
    factors = match.group(1).split(",")
    ranks = {}
    for i, factor in enumerate(factors):
        try:
            with open(os.path.join(run_dir, f"trainer-{i}.log")) as f:
                joined = re.search(r"trainer (\d+): joined", f.read())
        except OSError:
            return None
        if not joined:
            return None
        ranks[int(joined.group(1))] = factor
    return ranks if len(ranks) == len(factors) else None


def case_figures(name, flags, path):
    if not path:
        return {"mode": name, "flags": flags, "status": "failed", "error": "the launch failed"}
    with open(path) as f:
        s = json.load(f)
    if s.get("status") != "ok":
        return {"mode": name, "flags": flags, "status": "failed", "error": s.get("error", "")}
    points = curve(s)
    figures = {
        "mode": name,
        "flags": flags,
        "status": "ok",
        "samples_per_second": s["samples_per_second"],
        "train_seconds": s["train_seconds"],
        "wall_seconds": s["wall_seconds"],
        "samples": s["samples"],
        "steps": s["steps"],
        "final_test_accuracy": s["final_test_accuracy"],
        "final_test_loss": s["final_test_loss"],
        "staleness_p50": s["staleness_p50"],
        "staleness_p99": s["staleness_p99"],
        "staleness_max": s["staleness_max"],
        "max_clock_gap": s["max_clock_gap"],
        "batch_share": s["batch_share"],
        "slowdown_by_rank": slowdown_by_rank(flags, os.path.dirname(path)),
        "curve": [{"wall_seconds": w, "samples_trained": n, "test_accuracy": a}
                  for w, n, a in points],
    }
    for t in THRESHOLDS:
        hit = first_reaching(points, t)
        figures[f"seconds_to_{t}"] = hit[0] if hit else None
        figures[f"samples_to_{t}"] = hit[1] if hit else None
    return figures


def markdown(cases, args, machine_line, date):
    reach_headers = " | ".join(f"s to {t}" for t in THRESHOLDS)
    lines = [
        "# Consistency modes with one trainer four times slower",
        "",
        f"Command: `{args.command}` ({args.seconds} s in all)  ",
        f"Job: `{args.job}` plus each mode's flags (in modes.json)  ",
        f"Machine: {machine_line}  ",
        f"Date: {date}",
        "",
        "Seconds are training time: each periodic evaluation runs on a copy of the weights taken "
        "at that time and is evaluated after training; \"s to X\" is the time of the first copy "
        "at or above test accuracy X. Batch shares are per trainer rank, with the trainer's "
        "slowdown in brackets.",
        "",
        f"| mode | samples/s | {reach_headers} | final accuracy | staleness p50 / p99 "
        "| max clock gap | batch share |",
        "| --- | ---: | " + "---: | " * len(THRESHOLDS) + "---: | ---: | ---: | --- |",
    ]
    for c in cases:
        if c["status"] != "ok":
            lines.append(f"| {c['mode']} | failed |" + " |" * (len(THRESHOLDS) + 4))
            continue
        reach = " | ".join("not reached" if c[f"seconds_to_{t}"] is None
                           else f"{c[f'seconds_to_{t}']:.1f}" for t in THRESHOLDS)
        share = ", ".join(f"{x:.2f}" for x in c["batch_share"])
        slowdown = c["slowdown_by_rank"]
        if slowdown and len(slowdown) == len(c["batch_share"]) > 1:
            share = ", ".join(f"{x:.2f} ({slowdown[r]}x)" for r, x in enumerate(c["batch_share"]))
        lines.append(
            f"| {c['mode']} | {c['samples_per_second']:.0f} | {reach} | "
            f"{c['final_test_accuracy']:.4f} | {c['staleness_p50']} / {c['staleness_p99']} | "
            f"{c['max_clock_gap']} | {share} |")
    return "\n".join(lines) + "\n"


def plot(cases, path, title):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("modes_report: matplotlib is missing (Debian: python3-matplotlib); no plot",
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
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--command", required=True, help="the benchmark command, for the report")
    parser.add_argument("--job", required=True, help="the launch command every case shares")
    parser.add_argument("--seconds", type=int, required=True, help="wall time of all the cases")
    parser.add_argument("cases", nargs="+", help="MODE|FLAGS|SUMMARY")
    args = parser.parse_args()
    cases = []
    for entry in args.cases:
        name, _, rest = entry.partition("|")
        flags, _, path = rest.partition("|")
        try:
            cases.append(case_figures(name, flags, path))
        except (OSError, KeyError, TypeError, ValueError) as e:
            print(f"modes_report: cannot read the summary of '{name}' ({path}): {e!r}",
                  file=sys.stderr)
            cases.append({"mode": name, "flags": flags, "status": "failed", "error": repr(e)})
    machine_line = machine()
    date = f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC"
    os.makedirs(args.out, exist_ok=True)
    table = markdown(cases, args, machine_line, date)
    with open(os.path.join(args.out, "modes.md"), "w") as f:
        f.write(table)
    with open(os.path.join(args.out, "modes.json"), "w") as f:
        json.dump({"command": args.command, "job": args.job, "machine": machine_line, "date": date,
                   "seconds": args.seconds, "thresholds": list(THRESHOLDS), "cases": cases},
                  f, indent=2)
        f.write("\n")
    model = "mlp" if "--model mlp" in args.job else "FashionCNN"
    plotted = plot(cases, os.path.join(args.out, "modes.png"),
                   f"{model}, one server, two trainers, one 4x slower")
    print(table)
    print(f"modes_report: wrote {args.out}/modes.md, modes.json" + (", modes.png" if plotted else ""))
    failed = [c["mode"] for c in cases if c["status"] != "ok"]
    if failed:
        print("modes_report: failed: " + ", ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
