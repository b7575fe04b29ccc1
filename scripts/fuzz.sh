#!/usr/bin/env bash
# Builds the fuzz targets (tests/fuzz) with clang's libFuzzer, AddressSanitizer and
# UndefinedBehaviorSanitizer, and runs each for a bounded time from its committed corpus; fails
# on any finding (a crash, a sanitizer report, a timeout or running out of memory).
#   scripts/fuzz.sh [--seconds N] [--build-dir DIR] [--regression] [--jobs J] [TARGET...]
# --seconds N    run each target for N seconds (default 60), --jobs of them at a time
# --build-dir    the fuzz build (default build-fuzz), configured with HETPS_FUZZ=ON on first use;
#                it builds only the libraries the targets read with, without LibTorch
# --regression   instead, run every file of the committed corpus once (a few seconds)
# --jobs J       parallel compile jobs, and targets fuzzed at once (default: the number of cores)
# TARGET...      only these targets: envelope, shard, job_config, safetensors, manifest
# A finding ends its target's run and prints the path of the input that caused it (under
# DIR/fuzz-findings/TARGET/); the other targets still run, and the script exits 1. Inputs the
# fuzzer finds that reach new code go to DIR/fuzz-corpus/TARGET/, not into the tree. A crash
# found is fixed in the code and its input added to tests/fuzz/corpus/TARGET/, which the normal
# test suite replays (CTest label `fuzz`).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir="$root/build-fuzz"
seconds=60
regression=0
jobs=$(nproc 2>/dev/null || echo 2)
all_targets=(envelope shard job_config safetensors manifest)
targets=()
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
while (($#)); do
  case $1 in
    --seconds) [[ $# -ge 2 && $2 =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: --seconds needs a positive whole number" >&2; exit 2; }
               seconds=$2; shift 2 ;;
    --build-dir) [[ $# -ge 2 ]] || { echo "fuzz.sh: --build-dir needs a value" >&2; exit 2; }; build_dir=$2; shift 2 ;;
    --jobs) [[ $# -ge 2 && $2 =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: --jobs needs a positive whole number" >&2; exit 2; }
            jobs=$2; shift 2 ;;
    --regression) regression=1; shift ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "fuzz.sh: unknown flag '$1' (see --help)" >&2; exit 2 ;;
    *) [[ " ${all_targets[*]} " == *" $1 "* ]] || {
         echo "fuzz.sh: no fuzz target '$1'; the targets are: ${all_targets[*]}" >&2; exit 2; }
       targets+=("$1"); shift ;;
  esac
done
((${#targets[@]})) || targets=("${all_targets[@]}")
build_dir=$(mkdir -p "$build_dir" && cd "$build_dir" && pwd)

for tool in clang clang++ cmake; do
  command -v "$tool" >/dev/null || {
    echo "fuzz.sh: $tool is missing; run scripts/install-deps.sh (it installs clang and libclang-rt-14-dev)" >&2
    exit 1
  }
done

if [[ ! -f $build_dir/CMakeCache.txt ]]; then
  echo "fuzz.sh: configuring $build_dir (clang, libFuzzer, ASan, UBSan; no LibTorch)"
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  CC=clang CXX=clang++ cmake -S "$root" -B "$build_dir" -DHETPS_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "${launcher[@]}" >"$build_dir/configure.log" 2>&1 || {
    tail -n 30 "$build_dir/configure.log" >&2
    rm -f "$build_dir/CMakeCache.txt"
    echo "fuzz.sh: CMake configuration failed (above; all of it in $build_dir/configure.log)" >&2
    exit 1
  }
fi
grep -q '^HETPS_FUZZ:BOOL=ON' "$build_dir/CMakeCache.txt" || {
  echo "fuzz.sh: $build_dir is not a fuzz build (HETPS_FUZZ=ON); use another --build-dir" >&2; exit 2; }
echo "fuzz.sh: building the fuzz targets in $build_dir with $jobs jobs"
set +e
cmake --build "$build_dir" -j "$jobs" --target hetps_fuzz_programs 2>&1 |
  grep -vE '^\[ *[0-9]+%\]|^-- |Built target|Scanning dependencies|Consolidate compiler'
status=${PIPESTATUS[0]}
set -e
((status == 0)) || { echo "fuzz.sh: build failed (see the errors above)" >&2; exit 1; }

# Every finding stops the run with an error: halt at the first report, print its stack.
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1:print_summary=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
# Runs one target; its exit status goes to DIR/fuzz-TARGET.status.
run_target() {
  local target=$1 program="$build_dir/tests/${1}_fuzz" seeds="$root/tests/fuzz/corpus/$1"
  local findings="$build_dir/fuzz-findings/$1" log="$build_dir/fuzz-$1.log" inputs flags status
  mkdir -p "$findings"
  flags=(-error_exitcode=77 -timeout_exitcode=78 -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$findings/")
  if ((regression)); then
    inputs=("$seeds")
    flags+=(-runs=0)
  else
    mkdir -p "$build_dir/fuzz-corpus/$target"
    inputs=("$build_dir/fuzz-corpus/$target" "$seeds")  # new inputs go to the first directory
    flags+=(-max_total_time="$seconds" -print_final_stats=1)
  fi
  set +e
  "$program" "${flags[@]}" "${inputs[@]}" >"$log" 2>&1
  status=$?
  set -e
  echo "$status" >"$build_dir/fuzz-$target.status"
}

# What a target's run found, from its log.
report_target() {
  local target=$1 program="$build_dir/tests/${1}_fuzz" log="$build_dir/fuzz-$1.log" status crash
  status=$(cat "$build_dir/fuzz-$target.status" 2>/dev/null || echo "no status")
  [[ $status =~ ^[0-9]+$ ]] || status=1
  if ((status == 0)); then
    grep -E '^stat::number_of_executed_units' "$log" | sed "s/^/fuzz.sh: $target: /" || true
    return
  fi
  failed+=("$target")
  # The report, the target's own message for a failed check, and where in the target it stopped.
  grep -E 'ERROR: |runtime error: |SUMMARY: |==[0-9]+== ?ERROR|^fuzz check failed: | in LLVMFuzzerTestOneInput ' "$log" |
    head -n 8 | sed "s/^/fuzz.sh: $target: /"
  crash=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
  if [[ -n $crash ]]; then
    echo "fuzz.sh: $target: FINDING (exit $status): the input is $crash"
    echo "fuzz.sh: $target: reproduce with: $program $crash"
  else
    echo "fuzz.sh: $target: FAILED (exit $status) without writing an input; see $log"
  fi
  echo "fuzz.sh: $target: the whole report is in $log"
}

# Each fuzzer uses one core: `jobs` targets run at a time, each for the whole --seconds.
failed=()
for ((first = 0; first < ${#targets[@]}; first += jobs)); do
  batch=("${targets[@]:first:jobs}")
  for target in "${batch[@]}"; do
    if ((regression)); then
      echo "fuzz.sh: $target: replaying $(find "$root/tests/fuzz/corpus/$target" -type f | wc -l) corpus files"
    else
      echo "fuzz.sh: $target: fuzzing for ${seconds}s"
    fi
    rm -f "$build_dir/fuzz-$target.status"
    run_target "$target" &
  done
  wait
  for target in "${batch[@]}"; do report_target "$target"; done
done
if ((${#failed[@]})); then
  echo "fuzz.sh: findings in: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz.sh: no findings in ${targets[*]}"
