#!/usr/bin/env python3
"""Time to a test accuracy over repeated runs: for each case, the median and range of the
training time at which the run's evaluations first reached the target, and of its samples/s.

usage: time_to_accuracy.py [--target 0.85] [--windows 10,20,30,40] CASE=SUMMARY [CASE=SUMMARY ...]

Summaries of one case (the same CASE) are its repetitions. A run that never reached the target
counts as missing ("-" in the table, and the count says how many of the runs reached it).
With --windows T0,T1,..., a second table gives, per case, the median over its runs of the mean
test accuracy of the evaluations taken between T0 and T1 s of training, T1 and T2, ...: where a
curve is flat near the target, the first crossing moves by seconds with one evaluation's noise,
and the accuracy at equal training time is the steadier comparison.
Prints markdown tables; exits 1 when a summary cannot be read or its job failed.
"""
import argparse
import json
import sys

from modes_report import curve, first_reaching, spread, window_mean


def seconds_to(summary, target):
    point = first_reaching(curve(summary), target)
    return point[0] if point else None


def windows_table(cases, edges):
    bounds = list(zip(edges, edges[1:]))
    print()
    print("| case | " + " | ".join(f"accuracy in {a:g}-{b:g} s" for a, b in bounds) + " |")
    print("| --- |" + " ---: |" * len(bounds))
    for case, summaries in cases.items():
        cells = []
        for a, b in bounds:
            values = [v for v in (window_mean(curve(s), a, b) for s in summaries) if v is not None]
            counted = "" if len(values) == len(summaries) else f", {len(values)} of {len(summaries)}"
            cells.append(spread(values, 4) + counted)
        print(f"| {case} | " + " | ".join(cells) + " |")


def parse_windows(text):
    try:
        edges = [float(x) for x in text.split(",")]
    except ValueError:
        sys.exit(f"time_to_accuracy.py: --windows '{text}' is not a list of seconds")
    if len(edges) < 2 or any(b <= a for a, b in zip(edges, edges[1:])):
        sys.exit(f"time_to_accuracy.py: --windows '{text}' needs two or more increasing times")
    return edges


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", type=float, default=0.85)
    parser.add_argument("--windows", help="T0,T1,...: mean accuracy between these training times")
    parser.add_argument("runs", nargs="+", metavar="CASE=SUMMARY")
    args = parser.parse_args()
    cases = {}
    for run in args.runs:
        case, _, path = run.rpartition("=")
        if not case:
            sys.exit(f"time_to_accuracy.py: '{run}' is not CASE=SUMMARY")
        try:
            with open(path) as f:
                summary = json.load(f)
        except (OSError, json.JSONDecodeError) as e:
            sys.exit(f"time_to_accuracy.py: {path}: {e}")
        if summary.get("status") != "ok":
            sys.exit(f"time_to_accuracy.py: {path}: the job failed: {summary.get('error', '')}")
        cases.setdefault(case, []).append(summary)
    print(f"| case | runs | s to {args.target:g}: median (range) | samples/s: median (range) "
          "| final accuracy: median (range) |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for case, summaries in cases.items():
        times = [t for t in (seconds_to(s, args.target) for s in summaries) if t is not None]
        reached = f"{len(times)}/{len(summaries)}" if len(times) < len(summaries) else str(len(summaries))
        print(f"| {case} | {reached} | {spread(times, 1)} "
              f"| {spread([s['samples_per_second'] for s in summaries], 0)} "
              f"| {spread([s['final_test_accuracy'] for s in summaries], 4)} |")
    if args.windows:
        windows_table(cases, parse_windows(args.windows))


if __name__ == "__main__":
    main()
