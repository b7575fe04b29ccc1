#!/usr/bin/env bash
# Configures (once) and builds hetps in Release mode.
#   scripts/build.sh [--torch system|pip] [--build-dir DIR] [--binaries-only] [--target NAME...]
# --torch picks the LibTorch to build against (or HETPS_TORCH=system|pip in the environment):
#   system  Debian's libtorch-dev 1.13 (CPU only); the default on Linux
#   pip     PyPI's torch in the repository's .venv (CUDA on Linux, MPS on macOS), installed by
#           scripts/install-deps.sh --torch pip; the default on macOS
# A build directory remembers its LibTorch: later builds there need no --torch, and asking for
# the other one is an error (use another --build-dir).
# --binaries-only builds hetps-scheduler, hetps-server, hetps-trainer, hetps-keygen and hetps-status
# but not the tests; a build directory it configures has no tests (and needs no Catch2) until a
# build without it adds them. --target NAME (repeatable) builds that CMake target alone, e.g.
# hetps_pip_targets: what the tests labelled `pip` need (scripts/test.sh --pip-only).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir="$root/build"
torch=${HETPS_TORCH:-}
targets=()
tests=ON
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
while (($#)); do
  case $1 in
    --build-dir) [[ $# -ge 2 ]] || { echo "build.sh: --build-dir needs a value" >&2; exit 2; }; build_dir=$2; shift 2 ;;
    --torch) [[ $# -ge 2 ]] || { echo "build.sh: --torch needs a value" >&2; exit 2; }; torch=$2; shift 2 ;;
    --binaries-only) targets+=(--target hetps-scheduler hetps-server hetps-trainer hetps-keygen hetps-status)
                     tests=OFF; shift ;;
    --target) [[ $# -ge 2 ]] || { echo "build.sh: --target needs a value" >&2; exit 2; }; targets+=(--target "$2"); shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "build.sh: unknown flag '$1' (see --help)" >&2; exit 2 ;;
  esac
done
if [[ -n $torch && $torch != system && $torch != pip ]]; then
  echo "build.sh: --torch '$torch' is not a LibTorch provider; use system or pip" >&2
  exit 2
fi

command -v cmake >/dev/null || { echo "build.sh: cmake is missing; run scripts/install-deps.sh first" >&2; exit 1; }
cache="$build_dir/CMakeCache.txt"
if [[ -f $cache ]]; then
  configured=$(sed -n 's/^HETPS_TORCH:[A-Z]*=//p' "$cache")
  configured=${configured:-system}  # build directories made before the choice existed
  if [[ -n $torch && $torch != "$configured" ]]; then
    echo "build.sh: $build_dir is built against --torch $configured, not $torch;" \
         "use another --build-dir (e.g. build-$torch) or remove $build_dir" >&2
    exit 2
  fi
  torch=$configured
  # Regenerate first if the sources' CMake files changed: a build of named targets would otherwise
  # miss targets added since the last configuration. A full build adds the tests to a directory
  # configured by --binaries-only.
  regenerate=()
  [[ $tests == ON ]] && grep -q '^HETPS_BUILD_TESTS:BOOL=OFF' "$cache" && regenerate=(-DHETPS_BUILD_TESTS=ON)
  cmake "${regenerate[@]}" "$build_dir" >"$build_dir.configure.log" 2>&1 || {
    tail -n 30 "$build_dir.configure.log" >&2
    echo "build.sh: CMake could not regenerate $build_dir (all of it in $build_dir.configure.log)" >&2
    exit 1
  }
  rm -f "$build_dir.configure.log"
else
  if [[ -z $torch ]]; then
    torch=system
    [[ $(uname -s) == Darwin ]] && torch=pip
  fi
  if [[ $torch == pip && ! -x $root/.venv/bin/python ]]; then
    echo "build.sh: --torch pip needs PyPI's torch in $root/.venv; run scripts/install-deps.sh --torch pip" >&2
    exit 1
  fi
  echo "build.sh: configuring $build_dir (Release, LibTorch: $torch)"
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  log="$build_dir.configure.log"
  mkdir -p "$build_dir"
  cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DHETPS_TORCH="$torch" \
    -DHETPS_BUILD_TESTS="$tests" "${launcher[@]}" \
    >"$log" 2>&1 || {
    tail -n 30 "$log" >&2
    rm -f "$cache"  # so that the next run configures again
    echo "build.sh: CMake configuration failed (above; all of it in $log); did scripts/install-deps.sh" \
         "--torch $torch run?" >&2
    exit 1
  }
  grep -E '^-- LibTorch ' "$log" | sed 's/^-- /build.sh: /' || true
  rm -f "$log"
fi
jobs=$(nproc 2>/dev/null || sysctl -n hw.ncpu 2>/dev/null || echo 2)
echo "build.sh: building in $build_dir (LibTorch: $torch) with $jobs jobs (the first build takes a few minutes)"
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
