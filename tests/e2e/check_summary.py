"""Checks a hetps run summary (JSON) against what an end-to-end test expects.

usage: check_summary.py SUMMARY MODE SERVERS TRAINERS MIN_ACCURACY SAMPLES_PER_EPOCH
Exits non-zero, saying which check failed, when the summary falls short.
"""
import json
import sys


def main():
    path, mode, servers, trainers, min_accuracy, samples_per_epoch = sys.argv[1:7]
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
    expect(len(s["steps"]) == int(trainers) and all(n > 0 for n in s["steps"]),
           f"steps per trainer are {s['steps']}")
    if mode == "sync":
        alive_steps = [t["steps"] for t in s["trainer_details"] if t["alive"]]
        expect(len(set(alive_steps)) == 1, f"live sync trainers took different step counts {alive_steps}")
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
