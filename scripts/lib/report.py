"""Draws a run's history (RUN_DIR/metrics.jsonl, written by hetps-scheduler) as PNGs, and writes it
as TensorBoard event files; with several runs, each plot compares them. Run by scripts/report.sh,
whose header documents the options. Exits 2, naming the file and line, on a history it cannot read.
"""
import argparse
import bisect
import json
import math
import os
import sys
from datetime import datetime, timezone


class HistoryError(Exception):
    pass


def read_history(run_dir):
    """The records of RUN_DIR/metrics.jsonl, in order."""
    path = os.path.join(run_dir, "metrics.jsonl")
    if not os.path.isfile(path):
        raise HistoryError(f"{path}: no such file (is {run_dir} a run directory of hetps-scheduler?)")
    records = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                # A scheduler killed mid-line leaves a last line cut short: the rest is still read.
                if number > 1 and not line.endswith("\n"):
                    print(f"report: {path} line {number}: cut short, left out", file=sys.stderr)
                    break
                raise HistoryError(f"{path} line {number}: not JSON ({e.msg})")
            if not isinstance(record, dict) or "kind" not in record or "time_s" not in record:
                raise HistoryError(f"{path} line {number}: a record needs 'kind' and 'time_s'")
            records.append(record)
    if not records or records[0]["kind"] != "run":
        raise HistoryError(f"{path}: does not start with a 'run' record")
    return records


class Run:
    """One run's series, read off its records."""

    def __init__(self, run_dir):
        self.dir = run_dir
        self.name = os.path.basename(os.path.normpath(run_dir))
        self.records = read_history(run_dir)
        self.header = self.records[0]
        self.before = int(self.header.get("samples_before", 0))
        self.trainers = {}  # rank -> progress records
        self.jobs = []
        self.evaluations = []
        for r in self.records:
            kind = r["kind"]
            if kind == "progress":
                self.trainers.setdefault(r["trainer"], []).append(r)
            elif kind == "job":
                self.jobs.append(r)
            elif kind == "evaluation":
                self.evaluations.append(r)
        # The job's samples trained over time (its totals), to place every series on one axis.
        self.totals = [(r["time_s"], self.before + r["samples"]) for r in self.jobs]
        self.metric = "accuracy"
        if any("test_perplexity" in e for e in self.evaluations):
            self.metric = "perplexity"
        elif any("test_r2" in e for e in self.evaluations):
            self.metric = "r2"

    def start_wall_time(self):
        try:
            return datetime.strptime(self.header["utc"], "%Y-%m-%dT%H:%M:%SZ").replace(
                tzinfo=timezone.utc).timestamp()
        except (KeyError, ValueError):
            return 0.0

    def samples_at(self, time_s):
        """The job's samples trained at `time_s`, interpolated between its totals."""
        points = self.totals
        if not points:
            return self.before
        index = bisect.bisect_left(points, (time_s, -1))
        if index == 0:
            return points[0][1]
        if index == len(points):
            return points[-1][1]
        (t0, s0), (t1, s1) = points[index - 1], points[index]
        return s0 if t1 == t0 else round(s0 + (s1 - s0) * (time_s - t0) / (t1 - t0))

    def scalars(self):
        """(tag, time_s, samples, value) of every series, samples counted from the job's start."""
        out = []
        for rank, series in sorted(self.trainers.items()):
            for r in series:
                samples = self.samples_at(r["time_s"])
                if r.get("loss") is not None:
                    out.append((f"train/loss/trainer_{rank}", r["time_s"], samples, r["loss"]))
                out.append((f"train/samples_per_second/trainer_{rank}", r["time_s"], samples,
                            r["samples_per_second"]))
        for r in self.jobs:
            out.append(("job/samples_per_second", r["time_s"], self.before + r["samples"],
                        r["samples_per_second"]))
        for e in self.evaluations:
            samples = self.before + e["samples"]
            out.append(("test/loss", e["weights_taken_s"], samples, e["test_loss"]))
            key = {"accuracy": "test_accuracy", "perplexity": "test_perplexity", "r2": "test_r2"}[self.metric]
            if e.get(key) is not None:
                out.append((f"test/{self.metric}", e["weights_taken_s"], samples, e[key]))
        return [s for s in out if s[3] is not None and math.isfinite(s[3])]


def draw(runs, out_dir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(out_dir, exist_ok=True)
    written = []
    several = len(runs) > 1

    def label(run, what):
        return f"{run.name} {what}" if several else what

    def figure(name, title, ylabel, series_of):
        fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
        drawn = False
        for run in runs:
            for what, points in series_of(run):
                if not points:
                    continue
                times, samples, values = zip(*points)
                axes[0].plot(times, values, marker="." if len(points) < 30 else None, label=label(run, what))
                axes[1].plot(samples, values, marker="." if len(points) < 30 else None, label=label(run, what))
                drawn = True
        for ax, xlabel in zip(axes, ("seconds since training started", "samples trained (by all trainers)")):
            ax.set_xlabel(xlabel)
            ax.set_ylabel(ylabel)
            ax.grid(True, alpha=0.3)
            if drawn:
                ax.legend(fontsize="small")
        fig.suptitle(title)
        fig.tight_layout()
        path = os.path.join(out_dir, name)
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)

    def trainer_series(field):
        def series(run):
            return [(f"trainer {rank}", [(r["time_s"], run.samples_at(r["time_s"]), r[field])
                                         for r in records if r.get(field) is not None])
                    for rank, records in sorted(run.trainers.items())]
        return series

    figure("loss.png", "training loss per trainer (mean since its previous report)", "loss",
           trainer_series("loss"))

    def tests(run):
        key = {"accuracy": "test_accuracy", "perplexity": "test_perplexity", "r2": "test_r2"}[run.metric]
        return [(f"test {run.metric}", [(e["weights_taken_s"], run.before + e["samples"], e[key])
                                        for e in run.evaluations if e.get(key) is not None])]
    metric = runs[0].metric if len({r.metric for r in runs}) == 1 else "metric"
    figure(f"{'accuracy' if metric == 'accuracy' else metric}.png",
           f"test {metric} (at the time and samples its weights were taken)", metric, tests)

    def throughput(run):
        return trainer_series("samples_per_second")(run) + [
            ("all trainers", [(r["time_s"], run.before + r["samples"], r["samples_per_second"]) for r in run.jobs])]
    figure("samples_per_second.png", "samples per second", "samples/s", throughput)
    return written


def write_tensorboard(runs, log_dir):
    try:
        from tensorboard.compat.proto.event_pb2 import Event
        from tensorboard.compat.proto.summary_pb2 import Summary
        from tensorboard.summary.writer.event_file_writer import EventFileWriter
    except ImportError:
        raise HistoryError("--tensorboard needs the tensorboard package from PyPI "
                           "(pip install tensorboard; scripts/install-deps.sh installs it)")
    dirs = []
    for run in runs:
        directory = os.path.join(log_dir, run.name)
        writer = EventFileWriter(directory)
        start = run.start_wall_time()
        for tag, time_s, samples, value in sorted(run.scalars(), key=lambda s: (s[0], s[2], s[1])):
            writer.add_event(Event(wall_time=start + time_s, step=int(samples),
                                   summary=Summary(value=[Summary.Value(tag=tag, simple_value=float(value))])))
        writer.close()
        dirs.append(directory)
    return dirs


def main():
    parser = argparse.ArgumentParser(prog="report.sh", description=__doc__.split("\n")[0])
    parser.add_argument("runs", nargs="+", metavar="RUN_DIR")
    parser.add_argument("--out", help="where the PNGs go (default RUN_DIR/report, or with several runs "
                                      "the first's report/compare)")
    parser.add_argument("--tensorboard", metavar="DIR", help="also write TensorBoard event files under DIR/<run>")
    args = parser.parse_args()
    try:
        runs = [Run(d) for d in args.runs]
        names = [r.name for r in runs]
        if len(set(names)) != len(names):
            raise HistoryError(f"two runs have the same name ({', '.join(names)}): their plots would not tell them apart")
        out = args.out or os.path.join(args.runs[0], "report" if len(runs) == 1 else "report/compare")
        for path in draw(runs, out):
            print(f"report: wrote {path}")
        if args.tensorboard:
            for d in write_tensorboard(runs, args.tensorboard):
                print(f"report: wrote TensorBoard events in {d}")
            print(f"report: view them with: tensorboard --logdir {args.tensorboard}")
    except HistoryError as e:
        print(f"report: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
