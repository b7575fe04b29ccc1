#!/usr/bin/env bash
# Builds hetps with its tests and runs the whole suite (CTest over Catch2, plus the end-to-end
# tests that start real scheduler, server and trainer processes on 127.0.0.1).
#   scripts/test.sh [--build-dir DIR] [extra ctest arguments, e.g. -R shard_map]
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir="$root/build"
if [[ ${1:-} == --build-dir ]]; then build_dir=$2; shift 2; fi

"$root/scripts/build.sh" --build-dir "$build_dir"
jobs=$(nproc 2>/dev/null || echo 2)
# End-to-end tests are marked RUN_SERIAL: each starts a whole cluster on this machine.
ctest --test-dir "$build_dir" --output-on-failure --timeout 900 -j "$jobs" "$@"
