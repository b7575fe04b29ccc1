#!/usr/bin/env bash
# The command line of every installed program, without a job: --version prints one line in the
# same form everywhere (hetps's version, and the LibTorch of those that link it); an unknown flag
# or job-file key is named with the nearest known one; an endpoint given as HOST:PORT is taken
# as tcp:// (hetps-status reads a scheduler's status through one), and a malformed one is refused
# naming the flag and the value; every such error exits 2.
#   cli_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
bin="$build/bin"
work=$(mktemp -d)
scheduler=""
cleanup() {
  if [[ -n $scheduler ]]; then kill "$scheduler" 2>/dev/null || true; wait "$scheduler" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAILED: $*"; exit 1; }

# --version: "<program> <version>", then ", LibTorch ..." where the program links the trainer's
# LibTorch; the version is the same in all.
versions=()
for program in "$bin"/hetps-*; do
  name=$(basename "$program")
  line=$("$program" --version) || fail "$name --version exited $?"
  [[ $(wc -l <<<"$line") == 1 ]] || fail "$name --version printed more than one line: $line"
  [[ $line =~ ^$name\ ([0-9]+\.[0-9]+\.[0-9]+)(, LibTorch [0-9.]+ \(CUDA [^,]+, MPS (yes|no)\))?$ ]] ||
    fail "$name --version printed '$line'"
  versions+=("${BASH_REMATCH[1]}")
  case $name in
    hetps-trainer|hetps-bench-local-loop|hetps-bench-step|hetps-bench-plain-train)
      [[ $line == *LibTorch* ]] || fail "$name links LibTorch but its version line does not say which: $line" ;;
    hetps-scheduler|hetps-server|hetps-status|hetps-data|hetps-keygen|hetps-export)
      [[ $line != *LibTorch* ]] || fail "$name does not link LibTorch but names one: $line" ;;
  esac
  echo "$line"
done
((${#versions[@]} >= 7)) || fail "only ${#versions[@]} programs in $bin"
[[ $(printf '%s\n' "${versions[@]}" | sort -u | wc -l) == 1 ]] || fail "the programs give different versions"

# A command that must exit 2 with every one of the given texts on stderr.
refused() {  # refused "TEXT..." -- COMMAND...
  local texts=() code=0
  while [[ $1 != -- ]]; do texts+=("$1"); shift; done
  shift
  "$@" > "$work/out" 2> "$work/err" || code=$?
  ((code == 2)) || fail "$* exited $code, not 2: $(cat "$work/err")"
  for text in "${texts[@]}"; do
    grep -qF -- "$text" "$work/err" || fail "$* did not say '$text': $(cat "$work/err")"
  done
  head -n 1 "$work/err"
}

refused "hetps-scheduler: error: unknown flag --epoch; did you mean --epochs?" -- "$bin/hetps-scheduler" --epoch 3
refused "unknown flag --schduler; did you mean --scheduler?" -- "$bin/hetps-trainer" --schduler 127.0.0.1:7400
refused "unknown flag --thread; did you mean --threads?" -- "$bin/hetps-server" --thread=2
refused "unknown flag --interval-seconds" -- "$bin/hetps-status" --interval-seconds 2
refused "hetps-trainer: error: --scheduler: '127.0.0.1' has no port; give HOST:PORT or tcp://HOST:PORT" -- \
  "$bin/hetps-trainer" --scheduler 127.0.0.1
refused "--bind: '127.0.0.1:99999' has port 99999, out of range (0..65535)" -- "$bin/hetps-server" --bind 127.0.0.1:99999
refused "--scheduler: 'http://127.0.0.1:7400' has an unknown scheme 'http'" -- \
  "$bin/hetps-status" --scheduler http://127.0.0.1:7400
refused "--listen: 'localhost' has no port" -- "$bin/hetps-scheduler" --listen localhost --check
printf 'mode: sync\nepoch: 1\n' > "$work/typo.yaml"
refused "typo.yaml:2: epoch: unknown key; did you mean epochs?" -- "$bin/hetps-scheduler" --config "$work/typo.yaml" --check
printf 'listen: 127.0.0.1\n' > "$work/listen.yaml"
refused "listen.yaml:1: listen: '127.0.0.1' has no port" -- "$bin/hetps-scheduler" --config "$work/listen.yaml" --check

# HOST:PORT reaches a real scheduler (it answers status requests while it waits for members).
"$bin/hetps-scheduler" --listen '127.0.0.1:*' --endpoint-file "$work/endpoint" --progress none --http off \
  --servers 1 --trainers 1 --run-dir "$work/run" 2> "$work/scheduler.log" &
scheduler=$!
for _ in $(seq 100); do [[ -s $work/endpoint ]] && break; sleep 0.1; done
[[ -s $work/endpoint ]] || fail "the scheduler wrote no endpoint: $(cat "$work/scheduler.log")"
endpoint=$(<"$work/endpoint")
[[ $endpoint == tcp://127.0.0.1:* ]] || fail "the scheduler bound '$endpoint' for --listen 127.0.0.1:*"
"$bin/hetps-status" --scheduler "${endpoint#tcp://}" --timeout-ms 5000 > "$work/status.txt" ||
  fail "hetps-status --scheduler ${endpoint#tcp://} failed"
grep -q "waiting for members" "$work/status.txt" || fail "no member table: $(cat "$work/status.txt")"
echo "hetps-status --scheduler ${endpoint#tcp://}: $(head -n 1 "$work/status.txt")"
echo "ok"
