"""Checks a hetps run summary (JSON) against what an end-to-end test expects.

usage: check_summary.py SUMMARY MODE SERVERS TRAINERS MIN_ACCURACY SAMPLES_PER_EPOCH
                        [--joined-late N] [--left N]
TRAINERS is the job's `trainers`; --joined-late counts the trainers that joined the running job
(each must have trained samples from a later step), --left those that left it (Goodbye).
Exits non-zero, saying which check failed, when the summary falls short.
"""
import argparse
import json
import sys


def main():
    parser = argparse.ArgumentParser()
    for name in ("path", "mode", "servers", "trainers", "min_accuracy", "samples_per_epoch"):
        parser.add_argument(name)
    parser.add_argument("--joined-late", type=int, default=0)
    parser.add_argument("--left", type=int, default=0)
    args = parser.parse_args()
    path, mode, servers, trainers = args.path, args.mode, args.servers, args.trainers
    min_accuracy, samples_per_epoch = args.min_accuracy, args.samples_per_epoch
    with open(path) as f:
        s = json.load(f)
    failures = []

    def expect(condition, what):
        if not condition:
            failures.append(what)

    for key in ("mode", "servers", "trainers", "steps", "samples_per_second", "wall_seconds",
                "final_test_loss", "final_test_accuracy", "weight_version"):
        expect(key in s, f"key {key!r} is missing")
    if failures:
        sys.exit("summary check failed: " + "; ".join(failures))
    expect(s["status"] == "ok", f"status is {s['status']!r}: {s.get('error', '')}")
    expect(s["mode"] == mode, f"mode is {s['mode']!r}, expected {mode!r}")
    expect(s["servers"] == int(servers), f"servers is {s['servers']}, expected {servers}")
    expect(s["trainers"] == int(trainers), f"trainers is {s['trainers']}, expected {trainers}")
    expect(len(s["steps"]) == int(trainers) + args.joined_late and all(n > 0 for n in s["steps"]),
           f"steps per trainer are {s['steps']}")
    details = s["trainer_details"]
    late = [t for t in details if t["joined_late"]]
    expect(s["trainers_joined_late"] == args.joined_late == len(late),
           f"{s['trainers_joined_late']} trainers joined late, expected {args.joined_late}")
    expect(all(t["samples"] > 0 for t in late), f"a late joiner trained nothing: {late}")
    if mode == "sync":
        expect(all(t["first_step"] > 0 for t in late), f"a sync joiner started at step 0: {late}")
    expect(s["trainers_left"] == args.left == sum(t["left"] for t in details),
           f"{s['trainers_left']} trainers left, expected {args.left}")
    if mode == "sync":
        # Trainers there from the start and to the end took every round; a joiner fewer.
        alive_steps = [t["steps"] for t in details if t["alive"] and not t["joined_late"]]
        expect(len(set(alive_steps)) <= 1, f"live sync trainers took different step counts {alive_steps}")
    expect(s["samples_completed"] == int(samples_per_epoch) * s["epochs"],
           f"{s['samples_completed']} samples were trained, expected every one of "
           f"{int(samples_per_epoch) * s['epochs']}")
    expect(s["samples_per_second"] > 0, "samples_per_second is not positive")
    expect(s["wall_seconds"] > 0, "wall_seconds is not positive")
    expect(s["weight_version"] > 0, "weight_version is not positive")
    expect(s["final_test_accuracy"] >= float(min_accuracy),
           f"final test accuracy {s['final_test_accuracy']:.4f} is below {min_accuracy}")
    if failures:
        sys.exit("summary check failed: " + "; ".join(failures))
    print(f"summary ok: {mode}, accuracy {s['final_test_accuracy']:.4f}, "
          f"{s['samples_per_second']:.0f} samples/s, {s['wall_seconds']:.1f} s, steps {s['steps']}")


if __name__ == "__main__":
    main()
