#!/usr/bin/env bash
# scripts/launch_local.sh --max-restarts restarts a trainer killed with kill -9: the scheduler
# takes the dead one out as soon as its connection closes, the restarted process joins the running
# job, and the job finishes every sample with the usual accuracy.
#   launcher_restarts_trainer_test.sh BUILD_DIR
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$1
work=$(mktemp -d)
launcher=""
cleanup() {
  [[ -n $launcher ]] && kill "$launcher" 2>/dev/null && wait "$launcher" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

"$root/scripts/launch_local.sh" --no-build --build-dir "$build" \
  --config "$root/configs/fashion_mnist.yaml" --servers 1 --trainers 2 --mode sync --model mlp \
  --epochs 2 --lr 0.02 --momentum 0.9 --max-restarts 2 --no-checkpoints \
  --summary "$work/run.json" --run-dir "$work/run" --progress plain > "$work/launch.out" 2>&1 &
launcher=$!

# trainer-1's process, once it trains.
victim=""
for _ in $(seq 600); do
  if grep -q "training starts" "$work/run/trainer-1.log" 2>/dev/null; then
    victim=$(pgrep -P "$launcher" hetps-trainer | while read -r p; do
      [[ $(readlink "/proc/$p/fd/1" 2>/dev/null) == "$work/run/trainer-1.log" ]] && echo "$p"; done | head -n 1)
    [[ -n $victim ]] && break
  fi
  sleep 0.1
done
[[ -n $victim ]] || { echo "trainer-1 never started training"; cat "$work/launch.out"; exit 1; }
sleep 1
kill -9 "$victim"

status=0
wait "$launcher" || status=$?
launcher=""
show() { cat "$work/launch.out"; for log in "$work"/run/*.log; do echo "== $log"; tail -n 15 "$log"; done; }
((status == 0)) || { echo "the job failed (launch_local.sh exit $status)"; show; exit 1; }
grep -q "trainer-1 died (exit 137); restarting it" "$work/launch.out" ||
  { echo "launch_local.sh did not restart the killed trainer"; show; exit 1; }
grep -q "its connection closed" "$work/run/scheduler.log" ||
  { echo "the scheduler did not take the killed trainer out when its connection closed"; show; exit 1; }
/usr/bin/python3 "$root/tests/e2e/check_summary.py" "$work/run.json" sync 1 2 0.80 60000 --joined-late 1
