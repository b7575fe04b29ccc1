#!/usr/bin/env bash
# Configures (once) and builds hetps in Release mode.
#   scripts/build.sh [--build-dir DIR] [--binaries-only]
# --binaries-only builds hetps-scheduler, hetps-server, hetps-trainer and hetps-keygen but not the tests.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir="$root/build"
targets=()
while (($#)); do
  case $1 in
    --build-dir) build_dir=$2; shift 2 ;;
    --binaries-only) targets=(--target hetps-scheduler hetps-server hetps-trainer hetps-keygen); shift ;;
    -h|--help) sed -n '2,4p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build.sh: unknown flag '$1' (see --help)" >&2; exit 2 ;;
  esac
done

command -v cmake >/dev/null || { echo "build.sh: cmake is missing; run scripts/install-deps.sh first" >&2; exit 1; }
if [[ ! -f $build_dir/CMakeCache.txt ]]; then
  echo "build.sh: configuring $build_dir (Release)"
  cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release >/dev/null || {
    echo "build.sh: CMake configuration failed; did scripts/install-deps.sh run?" >&2; exit 1; }
fi
jobs=$(nproc 2>/dev/null || echo 2)
echo "build.sh: building in $build_dir with $jobs jobs (the first build takes a few minutes)"
# Show warnings and errors, not the progress lines.
set +e
cmake --build "$build_dir" -j "$jobs" "${targets[@]}" 2>&1 |
  grep -vE '^\[ *[0-9]+%\]|^-- |Built target|Scanning dependencies|Consolidate compiler'
status=${PIPESTATUS[0]}
set -e
if ((status != 0)); then
  echo "build.sh: build failed (see the errors above)" >&2
  exit 1
fi
