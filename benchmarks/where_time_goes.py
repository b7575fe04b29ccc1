#!/usr/bin/env python3
"""Where a run's time went, per trainer and per simulated machine: the samples each trainer
trained, its compute time (forward, backward, its own batch), the rest of the training time
(waiting for rounds or the ssp bound, and transfers), and each machine's CPU use and the time
its cgroup was throttled (runs of scripts/sim_cluster.sh write machines.json).

usage: where_time_goes.py RUN_DIR [RUN_DIR ...]   (each with summary.json, or --summary FILE)
"""
import json
import os
import sys


def report(run_dir):
    summary_path = os.path.join(run_dir, "summary.json")
    if not os.path.exists(summary_path):
        sys.exit(f"where_time_goes.py: {summary_path} does not exist")
    with open(summary_path) as f:
        s = json.load(f)
    train = s["train_seconds"]
    total = sum(t["samples"] for t in s["trainer_details"]) or 1
    print(f"{run_dir}: {s['mode']}, {train:.1f} s of training, {s['samples_per_second']:.0f} samples/s, "
          f"final accuracy {s['final_test_accuracy']:.4f}, staleness p99 {s.get('staleness_p99')}")
    for d in s.get("mode_decisions", []):
        print(f"  at {d['at_seconds']:.1f} s from step {d['from_clock']}: {d['mode']}"
              f"{' ' + str(d['staleness']) if d['mode'] == 'ssp' else ''} ({d['reason']})")
    for t in s["trainer_details"]:
        compute = t["samples"] / t["compute_samples_per_second"] if t["compute_samples_per_second"] else 0
        other = max(0.0, train - compute)
        print(f"  trainer {t['rank']} on {t['host'] or '?'}: {t['samples']} samples "
              f"({100 * t['samples'] / total:.0f}%), batch {t['batch_size']}, {t['steps']} steps; "
              f"compute {compute:.1f} s ({t['compute_samples_per_second']:.0f} samples/s), "
              f"waits and transfers {other:.1f} s ({100 * other / train if train else 0:.0f}%)")
    machines = os.path.join(run_dir, "machines.json")
    if os.path.exists(machines):
        with open(machines) as f:
            for line in f:
                m = json.loads(line)
                # Over the whole run: set-up and the evaluations after training count too.
                print(f"  machine {m['machine']} ({m['cpus']} cores, {m['link']}, {m['roles']}): "
                      f"{m['cpu_seconds']:.1f} CPU s over the run, throttled {m['throttled_seconds']:.1f} s")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for run_dir in sys.argv[1:]:
        report(run_dir)


if __name__ == "__main__":
    main()
