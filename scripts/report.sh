#!/usr/bin/env bash
# Draws a run's history (RUN_DIR/metrics.jsonl, which hetps-scheduler writes into every run
# directory) as PNGs: loss.png (training loss per trainer), accuracy.png (or perplexity.png, r2.png:
# the test metric of every evaluation) and samples_per_second.png (per trainer and in all), each
# against time and against samples trained. Several run directories: every plot compares them.
#   scripts/report.sh RUN_DIR [RUN_DIR...] [--out DIR] [--tensorboard DIR]
#   --out DIR           where the PNGs go (default RUN_DIR/report; several runs: the first's
#                       report/compare)
#   --tensorboard DIR   also write TensorBoard event files, one directory per run under DIR
#                       (tags train/loss/trainer_N, train/samples_per_second/trainer_N,
#                       job/samples_per_second, test/loss, test/accuracy|perplexity|r2; the step is
#                       the samples trained), to view with `tensorboard --logdir DIR`
# Needs Python 3 with matplotlib (Debian: python3-matplotlib), and for --tensorboard PyPI's
# tensorboard; scripts/install-deps.sh installs both. HETPS_PYTHON chooses the interpreter
# (default /usr/bin/python3 where it exists, else python3).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
  exit 0
fi
python=${HETPS_PYTHON:-}
if [[ -z $python ]]; then
  if [[ -x /usr/bin/python3 ]]; then python=/usr/bin/python3; else python=python3; fi
fi
"$python" -c 'import matplotlib' 2>/dev/null || {
  echo "report.sh: $python has no matplotlib; install it (Debian: apt-get install python3-matplotlib, or scripts/install-deps.sh)" >&2
  exit 2
}
exec "$python" "$here/lib/report.py" "$@"
