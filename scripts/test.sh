#!/usr/bin/env bash
# Builds hetps with its tests and runs the suite (CTest over Catch2, plus the end-to-end tests
# that start real scheduler, server and trainer processes on 127.0.0.1).
#   scripts/test.sh [--torch system|pip] [--build-dir DIR] [--pip-only] [extra ctest arguments]
# --torch and --build-dir as for scripts/build.sh. --pip-only runs only the tests labelled `pip`
# (those whose subject is LibTorch code the two LibTorch builds can disagree on; what CI runs
# against the pip build), having built only what they need. Tests that need an absent GPU are reported as skipped, and why is
# printed at the end. Tests that fail are run once more, alone, and named: the suite passes if they
# pass then (docs/decisions.md, "CI"). Extra arguments go to ctest, e.g. -R shard_map.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir="$root/build"
build_flags=()
ctest_flags=()
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
while (($#)); do
  case $1 in
    --build-dir) [[ $# -ge 2 ]] || { echo "test.sh: --build-dir needs a value" >&2; exit 2; }; build_dir=$2; shift 2 ;;
    --torch) [[ $# -ge 2 ]] || { echo "test.sh: --torch needs a value" >&2; exit 2; }; build_flags+=(--torch "$2"); shift 2 ;;
    --pip-only) ctest_flags+=(-L pip); build_flags+=(--target hetps_pip_targets); shift ;;
    -h|--help) usage; exit 0 ;;
    *) break ;;
  esac
done

"$root/scripts/build.sh" --build-dir "$build_dir" "${build_flags[@]}"
jobs=$(nproc 2>/dev/null || sysctl -n hw.ncpu 2>/dev/null || echo 2)
junit="$build_dir/Testing/junit.xml"
mkdir -p "$(dirname "$junit")"
# End-to-end tests are marked RUN_SERIAL: each starts a whole cluster on this machine.
status=0
# CTest leaves the list of failed tests from an earlier run in place when none fails.
failed_log="$build_dir/Testing/Temporary/LastTestsFailed.log"
rm -f "$failed_log"
ctest --test-dir "$build_dir" --output-on-failure --timeout 900 -j "$jobs" --output-junit "$junit" \
  "${ctest_flags[@]}" "$@" || status=$?
# A test that failed under the load of the others is run again on its own: a failure twice is a
# failure; one that passes alone is named, so that a timing-sensitive test stays in sight.
if ((status != 0)) && [[ -s $failed_log ]]; then
  echo "test.sh: running again, one at a time, the tests that failed:"
  sed 's/^/  /' "$failed_log"
  status=0
  ctest --test-dir "$build_dir" --output-on-failure --timeout 900 --rerun-failed || status=$?
  ((status == 0)) && echo "test.sh: every failed test passed when run again alone (named above)"
fi
# CTest does not say why a test was skipped: each prints "SKIPPED: <reason>" before exiting 77.
if [[ -f $junit ]]; then
  python3 - "$junit" <<'PY'
import sys, xml.etree.ElementTree as ET
skipped = []
for case in ET.parse(sys.argv[1]).getroot().iter("testcase"):
    if case.get("status") != "notrun" and case.find("skipped") is None:
        continue
    out = case.findtext("system-out") or ""
    reasons = [l.split("SKIPPED:", 1)[1].strip() for l in out.splitlines() if "SKIPPED:" in l]
    skipped.append((case.get("name"), reasons[0] if reasons else "no reason printed"))
for name, reason in skipped:
    print(f"skipped: {name}: {reason}")
PY
fi
exit "$status"
