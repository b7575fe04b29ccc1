#!/usr/bin/env python3
"""Turns the runs of benchmarks/modes.sh into a markdown table per scenario, a JSON file and a
plot (median test accuracy against training time per case, its range over the seeds as a band);
prints the tables.

usage: modes_report.py --out DIR --command CMD --where TEXT --job FLAGS --target X --seconds N
                       [--metric accuracy|loss] MANIFEST

--metric: what --target is of: test accuracy (the default; reached at or above it) or test loss
(a language model's validation loss; reached at or below it). Curves and final figures are keyed
by the metric (test_loss, final_test_loss); the windows at equal time keep their names
(accuracy_at_equal_time, median_accuracy) and hold the metric, which "metric" names.

MANIFEST has one run a line, tab-separated: scenario, case, seed, flags, summary path (empty for
a launch that failed). The cases "fast alone" and "slow alone" are the baselines. Exits 1 when a
run failed (no summary, or a summary whose status is not "ok"), after writing the report.
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys

BASELINES = ("fast alone", "slow alone")
# The fast machine alone in each of its configurations ("fast alone" in a per-step mode, "fast alone
# diloco", "fast alone plain"): its best is the baseline every two-machine case is held against.
def is_fast_alone(case):
    return case == "fast alone" or case.startswith("fast alone ")


class Metric:
    """What the curves and the target are of: the key in a summary's evaluations and in its
    final figures, the words for it, and which way is better."""

    def __init__(self, name):
        self.name = name
        self.loss = name == "loss"
        self.key = "test_loss" if self.loss else "test_accuracy"
        self.final_key = "final_test_loss" if self.loss else "final_test_accuracy"
        self.words = "test loss" if self.loss else "test accuracy"

    def reached(self, value, target):
        return value <= target if self.loss else value >= target


METRIC = Metric("accuracy")


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
    """(wall seconds, samples trained, the metric) in time order: every snapshot evaluation, at
    the time its weights were taken, then the final evaluation at the end of training."""
    points = []
    for e in summary.get("evaluations", []):
        if e.get("snapshot", 0) > 0:
            points.append((e["wall_seconds"], e["samples_trained"], e[METRIC.key]))
        elif e.get("final"):
            points.append((summary["train_seconds"], e["samples_trained"], e[METRIC.key]))
    return sorted(points)


def first_reaching(points, threshold):
    """The first point at the threshold or beyond it (above for accuracy, below for loss), or None."""
    return next((p for p in points if METRIC.reached(p[2], threshold)), None)


def window_mean(points, start, end):
    """The mean metric of the evaluations taken in [start, end) s of training, or None."""
    accuracies = [a for t, _, a in points if start <= t < end]
    return statistics.mean(accuracies) if accuracies else None


# The windows of equal training time, as multiples of the fast machine alone's time to the target:
# a crossing of the target moves with one evaluation's noise on a flat curve, the mean accuracy
# over a window much less.
WINDOW_MULTIPLES = (0.5, 1.0, 1.5, 2.0)


def equal_time_windows(case_runs, edges):
    """Per window [a, b) of edges: the median over case_runs of each run's mean accuracy in it,
    and how many runs had an evaluation there."""
    out = []
    for a, b in zip(edges, edges[1:]):
        values = [v for v in (window_mean([(p["wall_seconds"], p["samples_trained"], p[METRIC.key])
                                           for p in r["curve"]], a, b) for r in case_runs) if v is not None]
        out.append({"from_seconds": a, "to_seconds": b, "median_accuracy": median(values),
                    "runs": len(values), "values": values})
    return out


def median(values):
    return statistics.median(values) if values else None


def spread(values, digits):
    if not values:
        return "-"
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def run_figures(scenario, case, seed, flags, path, target):
    run = {"scenario": scenario, "case": case, "seed": int(seed), "flags": flags}
    if not path:
        return {**run, "status": "failed", "error": "the launch failed"}
    try:
        with open(path) as f:
            s = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        return {**run, "status": "failed", "error": str(e)}
    if s.get("status") != "ok":
        return {**run, "status": "failed", "error": s.get("error", "")}
    points = curve(s)
    hit = first_reaching(points, target)
    return {
        **run,
        "status": "ok",
        "seconds_to_target": hit[0] if hit else None,
        "samples_to_target": hit[1] if hit else None,
        "samples_per_second": s["samples_per_second"],
        "train_seconds": s["train_seconds"],
        METRIC.final_key: s[METRIC.final_key],
        "staleness_p99": s.get("staleness_p99"),
        "max_clock_gap": s.get("max_clock_gap"),
        "batch_share": s.get("batch_share"),
        "mode_decisions": s.get("mode_decisions", []),
        "curve": [{"wall_seconds": w, "samples_trained": n, METRIC.key: a} for w, n, a in points],
    }


def scenario_figures(runs):
    """Per case its runs and medians; the scenario's baselines, best mode and auto."""
    cases = {}
    for r in runs:
        cases.setdefault(r["case"], []).append(r)
    out = {"cases": []}
    medians = {}
    for case, case_runs in cases.items():
        ok = [r for r in case_runs if r["status"] == "ok"]
        times = [r["seconds_to_target"] for r in ok if r["seconds_to_target"] is not None]
        # A case whose runs did not all reach the target has no median time to it.
        reached = len(times) == len(case_runs) and times
        medians[case] = median(times) if reached else None
        out["cases"].append({
            "case": case,
            "runs": case_runs,
            "reached": len(times),
            "seconds_to_target": medians[case],
            "samples_per_second": median([r["samples_per_second"] for r in ok]),
            METRIC.final_key: median([r[METRIC.final_key] for r in ok]),
        })
    by_case = {c["case"]: c for c in out["cases"]}
    alone = {c: medians[c] for c in medians if is_fast_alone(c) and medians[c] is not None}
    fast_best = min(alone, key=alone.get) if alone else None
    fast = alone[fast_best] if fast_best else None
    edges = [fast * m for m in WINDOW_MULTIPLES] if fast else []
    for c in out["cases"]:
        c["accuracy_at_equal_time"] = equal_time_windows(
            [r for r in c["runs"] if r["status"] == "ok"], edges)
    # The fixed modes of two machines: not the baselines, and not auto (nor auto with other options).
    fixed = [c for c in medians if c not in BASELINES and not is_fast_alone(c) and not c.startswith("auto")]
    modes = {c: medians[c] for c in fixed if medians[c] is not None}
    best = min(modes, key=modes.get) if modes else None
    sps = [by_case[b]["samples_per_second"] for b in BASELINES if b in by_case]
    out.update({
        "fast_alone_seconds_to_target": fast,
        "fast_alone_best_case": fast_best,
        "best_mode": best,
        "best_seconds_to_target": modes[best] if best else None,
        "auto_seconds_to_target": medians.get("auto"),
        "speedup_vs_fast_alone": fast / modes[best] if fast and best else None,
        "auto_speedup_vs_fast_alone": fast / medians["auto"] if fast and medians.get("auto") else None,
        "sum_samples_per_second": sum(sps) if len(sps) == 2 and None not in sps else None,
    })
    return out


def markdown(scenarios, args, machine_line, date):
    lines = [
        f"# Does the slow machine help? Time to {METRIC.words} by mode",
        "",
        f"Command: `{args.command}` ({args.seconds} s in all), on {args.where}  ",
        f"Job: `{args.job}` plus each case's flags (in modes.json)  ",
        f"Machine: {machine_line}  ",
        f"Date: {date}",
        "",
        f"Seconds are training time to the first evaluation at or {'below' if METRIC.loss else 'above'} "
        f"{METRIC.words} {args.target:g} "
        "(evaluations run on copies of the weights, after training); median (range) over the seeds. "
        "\"sum\" is the two machines' samples/s alone, added up.",
    ]
    for name, s in scenarios.items():
        def fmt(value, digits=1):
            return "-" if value is None else f"{value:.{digits}f}"
        lines += [
            "",
            f"## {name}",
            "",
            f"fast alone at its best ({s['fast_alone_best_case'] or '-'}) "
            f"{fmt(s['fast_alone_seconds_to_target'])} s; best two-machine mode {s['best_mode'] or '-'} "
            f"{fmt(s['best_seconds_to_target'])} s (speedup {fmt(s['speedup_vs_fast_alone'], 2)}x); "
            f"auto {fmt(s['auto_seconds_to_target'])} s; sum of the machines "
            f"{fmt(s['sum_samples_per_second'], 0)} samples/s",
            "",
            f"| case | runs reaching {args.target:g} | s to {args.target:g} | samples/s | final {METRIC.words} |",
            "| --- | ---: | ---: | ---: | ---: |",
        ]
        for c in s["cases"]:
            ok = [r for r in c["runs"] if r["status"] == "ok"]
            times = [r["seconds_to_target"] for r in ok if r["seconds_to_target"] is not None]
            failed = len(c["runs"]) - len(ok)
            lines.append(
                f"| {c['case']} | {len(times)}/{len(c['runs'])}{f' ({failed} failed)' if failed else ''} "
                f"| {spread(times, 1)} | {spread([r['samples_per_second'] for r in ok], 0)} "
                f"| {spread([r[METRIC.final_key] for r in ok], 4)} |")
        windows = s["cases"][0]["accuracy_at_equal_time"] if s["cases"] else []
        if not windows:
            continue
        lines += [
            "",
            f"Mean {METRIC.words} at equal training time (each run's evaluations in the window, median "
            f"(range) over the seeds); the windows are {', '.join(f'{m:g}' for m in WINDOW_MULTIPLES)}x "
            f"the fast machine alone's time to {args.target:g}:",
            "",
            "| case | " + " | ".join(f"{w['from_seconds']:.3g}-{w['to_seconds']:.3g} s" for w in windows) + " |",
            "| --- |" + " ---: |" * len(windows),
        ]
        for c in s["cases"]:
            if c["case"] == "slow alone":
                continue
            counted = len([r for r in c["runs"] if r["status"] == "ok"])
            cells = [spread(w["values"], 4) + ("" if w["runs"] == counted else f", {w['runs']} of {counted}")
                     for w in c["accuracy_at_equal_time"]]
            lines.append(f"| {c['case']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def median_band(runs, grid):
    """Per grid time: the median, lowest and highest metric over runs (each run holds its last
    evaluation's until its next; None before its first)."""
    med, low, high = [], [], []
    for t in grid:
        values = []
        for r in runs:
            seen = [p[METRIC.key] for p in r["curve"] if p["wall_seconds"] <= t]
            if seen:
                values.append(seen[-1])
        med.append(statistics.median(values) if values else float("nan"))
        low.append(min(values) if values else float("nan"))
        high.append(max(values) if values else float("nan"))
    return med, low, high


def plot(scenarios, target, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("modes_report.py: no matplotlib; no plot", file=sys.stderr)
        return
    fig, axes = plt.subplots(1, len(scenarios), figsize=(6 * len(scenarios), 4.5), squeeze=False)
    for ax, (name, s) in zip(axes[0], scenarios.items()):
        for c in s["cases"]:
            ok = [r for r in c["runs"] if r["status"] == "ok" and r["curve"]]
            if not ok or c["case"] == "slow alone":
                continue
            end = max(p["wall_seconds"] for r in ok for p in r["curve"])
            grid = [end * i / 200 for i in range(201)]
            med, low, high = median_band(ok, grid)
            line, = ax.plot(grid, med, label=c["case"], linestyle="--" if is_fast_alone(c["case"]) else "-")
            ax.fill_between(grid, low, high, color=line.get_color(), alpha=0.15)
        ax.axhline(target, color="grey", linewidth=0.8)
        ax.set_title(name)
        ax.set_xlabel("training time (s)")
        ax.set_ylabel(METRIC.words)
        if not METRIC.loss:
            ax.set_ylim(0.5, 0.92)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--command", required=True)
    parser.add_argument("--where", required=True)
    parser.add_argument("--job", required=True)
    parser.add_argument("--target", type=float, required=True)
    parser.add_argument("--seconds", type=int, required=True)
    parser.add_argument("--metric", choices=("accuracy", "loss"), default="accuracy")
    parser.add_argument("manifest")
    args = parser.parse_args()
    global METRIC
    METRIC = Metric(args.metric)
    runs = []
    with open(args.manifest) as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if len(fields) != 5:
                sys.exit(f"modes_report.py: {args.manifest}: a line without 5 fields: {line!r}")
            runs.append(run_figures(*fields, args.target))
    by_scenario = {}
    for r in runs:
        by_scenario.setdefault(r["scenario"], []).append(r)
    scenarios = {name: scenario_figures(rs) for name, rs in by_scenario.items()}
    machine_line = machine()
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    report = markdown(scenarios, args, machine_line, date)
    with open(os.path.join(args.out, "modes.md"), "w") as f:
        f.write(report)
    with open(os.path.join(args.out, "modes.json"), "w") as f:
        json.dump({"command": args.command, "where": args.where, "job": args.job, "target": args.target,
                   "metric": METRIC.key,
                   "machine": machine_line, "date": date, "seconds": args.seconds,
                   "scenarios": scenarios}, f, indent=1)
    plot(scenarios, args.target, os.path.join(args.out, "modes.png"))
    print(report)
    failed = [f"{r['scenario']}/{r['case']}/seed {r['seed']}: {r['error']}" for r in runs if r["status"] != "ok"]
    if failed:
        print("modes_report.py: failed runs: " + "; ".join(failed), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
