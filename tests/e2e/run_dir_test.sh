#!/usr/bin/env bash
# Nothing is lost by default. A scheduler started by hand with no output flags leaves its run
# directory (runs/<date-time> where it was started) with the summary, the trained model, its
# checkpoints, job.yaml, the run's history (metrics.jsonl) and the final status page. SIGTERM to the scheduler in the middle of training takes a checkpoint
# first and prints the command that resumes it; that command continues the job in a directory of
# its own, which names its parent, with its progress counted from where it resumed, and leaves the
# parent's files as they were. Ctrl-C to launch_local.sh (the whole process group, as a terminal
# sends it) does the same through the launcher, which says how to resume.
#   run_dir_test.sh BUILD_DIR
build=$(cd "$1" && pwd)
source "$(dirname "${BASH_SOURCE[0]}")/cluster.sh" "$build"
cd "$work"
samples=12000

job_flags=(--model mlp --mode sync --servers 1 --trainers 1 --epochs 1 --max-train-samples "$samples" --seed 3)

# 1. By hand, to the end: everything in runs/<date-time>.
by_hand whole 4 "${job_flags[@]}"  # slowed: a few progress reports
wait_scheduler || fail "the job by hand failed"
runs=(runs/*)
((${#runs[@]} == 1)) || fail "expected one run directory, found: ${runs[*]}"
first=${runs[0]}
for f in summary.json model.safetensors job.yaml metrics.jsonl status.html; do
  [[ -s $first/$f ]] || fail "the run directory $first has no $f"
done
ls "$first"/checkpoints/checkpoint-*/manifest.json > /dev/null || fail "no checkpoint in $first/checkpoints"
grep -q "summary in $first/summary.json" "$work/whole.out" || fail "the final line does not say where the summary is"
# The status page as the job ended: complete, and not reloading itself.
grep -q "</html>" "$first/status.html" && ! grep -q 'http-equiv="refresh"' "$first/status.html" ||
  fail "$first/status.html is not the final status page"
# The history: a run record, the trainer's reports with its samples growing, the job's totals,
# the final evaluation and the end, in order of time.
/usr/bin/python3 - "$first/metrics.jsonl" "$samples" <<'EOF' || fail "$first/metrics.jsonl is not the run's history"
import json, sys
records = [json.loads(line) for line in open(sys.argv[1])]
kinds = [r["kind"] for r in records]
assert kinds[0] == "run" and kinds[-1] == "end", kinds
assert records[-1]["status"] == "ok" and records[-1]["samples"] == int(sys.argv[2]), records[-1]
progress = [r for r in records if r["kind"] == "progress" and r["trainer"] == 0]
assert len(progress) >= 2, progress
assert all(a["samples"] <= b["samples"] for a, b in zip(progress, progress[1:])), progress
assert any(r["kind"] == "job" and r["samples"] > 0 for r in records), kinds
final = [r for r in records if r["kind"] == "evaluation" and r["final"]]
assert len(final) == 1 and final[0]["test_accuracy"] > 0.5, final
times = [r["time_s"] for r in records]
assert times == sorted(times), times
EOF

# 2. SIGTERM in the middle: a checkpoint, then the command that resumes.
by_hand stopped 30 "${job_flags[@]}"
wait_for_line "$work/stopped.out" "trainer 0 .*step" 60 || fail "the slowed job did not start"
sleep 1
kill -s TERM "$scheduler"
code=0
wait_scheduler || code=$?
((code != 0)) || fail "a stopped job exited 0"
grep -q "taking a checkpoint first" "$work/stopped.log" || fail "the scheduler did not say it checkpoints before stopping"
resume=$(sed -n 's/.*resume with: hetps-scheduler --resume \([^ ]*\)$/\1/p' "$work/stopped.log" | tail -n 1)
[[ -n $resume && -s $resume/manifest.json ]] || fail "no resume command naming a committed checkpoint"
parent=${resume%/checkpoints/*}
[[ $parent != "$first" && -d $parent ]] || fail "the stopped job's checkpoint $resume is not in its own run directory"
[[ ! -e $parent/model.safetensors ]] || fail "a stopped job wrote a final model"
parent_files=$(cd "$parent" && find . -type f | sort | xargs md5sum)

by_hand resumed 1 --resume "$resume"
wait_scheduler || fail "the resumed job failed"
child=$(ls -d runs/* | grep -v -e "^$first\$" -e "^$parent\$")
[[ -n $child && -s $child/model.safetensors && -s $child/summary.json ]] || fail "the resumed run has no directory of its own with its model and summary: '$child'"
grep -qF "# Resumed from the checkpoint $resume" "$child/job.yaml" || fail "$child/job.yaml does not name its parent"
/usr/bin/python3 - "$child/summary.json" "$resume" "$samples" <<'EOF' || fail "the resumed summary is wrong"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["resumed_from"] == sys.argv[2], s["resumed_from"]
assert s["final_test_accuracy"] > 0.5, s["final_test_accuracy"]
EOF
/usr/bin/python3 - "$child/metrics.jsonl" "$resume" <<'EOF' || fail "the resumed run's history does not name its parent"
import json, sys
run = json.loads(open(sys.argv[1]).readline())
assert run["kind"] == "run" and run["resumed_from"] == sys.argv[2] and run["samples_before"] > 0, run
EOF
start=$(grep -m1 -o '[0-9]*%' "$work/resumed.out" | tr -d %)
((start > 0)) || fail "the resumed job's progress starts at ${start:-nothing}%, not where it resumed"
[[ $(cd "$parent" && find . -type f | sort | xargs md5sum) == "$parent_files" ]] || fail "the resumed run changed its parent's files"

# 3. Ctrl-C to launch_local.sh: the scheduler checkpoints before the job stops. (Job control: the
# launcher in a process group of its own, which a terminal's Ctrl-C reaches whole, and with SIGINT
# not ignored, as it would be in the background of a script.)
set -m
"$e2e_root/scripts/launch_local.sh" --no-build --build-dir "$build" --servers 1 --trainers 1 --mode async \
  --model mlp --epochs 1 --max-train-samples "$samples" --slowdown 30 --run-dir "$work/launched" --progress plain \
  --http off > "$work/launched.out" 2>&1 &
launcher=$!
set +m
e2e_pids+=("$launcher")
wait_for_line "$work/launched.out" "trainer 0 .*step" 60 || fail "the launched job did not start"
sleep 1
kill -s INT -- "-$launcher"
code=0
wait "$launcher" || code=$?
((code == 130)) || fail "the interrupted launcher exited $code, not 130"
grep -q "checkpoint [0-9]* committed" "$work/launched/scheduler.log" || fail "no checkpoint before the launched job stopped"
grep -qF -- "--resume $work/launched/checkpoints" "$work/launched.out" || fail "the launcher did not say how to resume"
echo "run_dir_test: passed ($first, $parent -> $child)"
