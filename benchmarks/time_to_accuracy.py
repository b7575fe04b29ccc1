#!/usr/bin/env python3
"""Time to a test accuracy over repeated runs: for each case, the median and range of the
training time at which the run's evaluations first reached the target, and of its samples/s.

usage: time_to_accuracy.py [--target 0.85] CASE=SUMMARY [CASE=SUMMARY ...]

Summaries of one case (the same CASE) are its repetitions. A run that never reached the target
counts as missing ("-" in the table, and the count says how many of the runs reached it).
Prints a markdown table; exits 1 when a summary cannot be read or its job failed.
"""
import argparse
import json
import statistics
import sys

from modes_report import curve, first_reaching


def seconds_to(summary, target):
    point = first_reaching(curve(summary), target)
    return point[0] if point else None


def spread(values, digits):
    if not values:
        return "-"
    low, high = min(values), max(values)
    return f"{statistics.median(values):.{digits}f} ({low:.{digits}f}-{high:.{digits}f})"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", type=float, default=0.85)
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


if __name__ == "__main__":
    main()
