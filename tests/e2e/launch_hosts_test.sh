#!/usr/bin/env bash
# scripts/launch_hosts.sh end to end over real ssh: the test starts its own sshd on 127.0.0.1 (a
# free port, a throw-away host key and user key in a temporary directory) and two ssh host names
# for it, and launches from a hostfile with a server and two trainers on those "hosts" and a
# server on localhost. The job trains to completion, with CURVE; a trainer on a host with
# data=scheduler trains on data the scheduler serves, beside one reading the files; a trainer
# killed on its host makes the launcher name it and stop everything; SIGINT stops everything, here
# and on the hosts; the launcher killed with SIGKILL still stops the members on the hosts; a bad
# hostfile, data= on a server, and data from the scheduler for a job that does not serve it are
# refused before anything starts, naming the file and line; a trainer host without a file of the
# job's data section is named with the file.
#   launch_hosts_test.sh BUILD_DIR
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(cd "$1" && pwd)
sshd=/usr/sbin/sshd
[[ -x $sshd ]] || { echo "FAILED: $sshd is missing: install openssh-server (scripts/install-deps.sh)"; exit 1; }

work=$(mktemp -d /tmp/hetps-ssh-test.XXXXXX)
sshd_pid="" tool_pid=""
cleanup() {
  [[ -n $tool_pid ]] && kill -s KILL -- "-$tool_pid" 2>/dev/null
  [[ -n $sshd_pid ]] && kill "$sshd_pid" 2>/dev/null && wait "$sshd_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
fail() {
  echo "FAILED: $*"
  for log in "$work"/*/*.log "$work"/*.out "$work/sshd.log"; do [[ -f $log ]] && { echo "== $log"; tail -n 15 "$log"; }; done
  exit 1
}
free_port() { /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# The sshd: this user only, public keys only, nothing of the system's configuration.
port=$(free_port)
user=$(id -un)
ssh-keygen -q -t ed25519 -N '' -C hetps-test-host -f "$work/host_key"
ssh-keygen -q -t ed25519 -N '' -C hetps-test-user -f "$work/user_key"
cp "$work/user_key.pub" "$work/authorized_keys"
cat > "$work/sshd_config" <<EOF
ListenAddress 127.0.0.1
Port $port
HostKey $work/host_key
PidFile $work/sshd.pid
AuthorizedKeysFile $work/authorized_keys
AllowUsers $user
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
UsePAM no
StrictModes no
LogLevel VERBOSE
AcceptEnv XDG_CACHE_HOME
EOF
mkdir -p /run/sshd  # sshd's privilege separation directory
"$sshd" -D -e -f "$work/sshd_config" 2> "$work/sshd.log" &
sshd_pid=$!
cat > "$work/ssh_config" <<EOF
Host hetps-test-a hetps-test-b
  HostName 127.0.0.1
  Port $port
  User $user
  IdentityFile $work/user_key
  IdentitiesOnly yes
  UserKnownHostsFile $work/known_hosts
  StrictHostKeyChecking yes
  # Data served to a trainer on these hosts is cached here, not in the user's ~/.cache.
  SetEnv XDG_CACHE_HOME=$work/cache
EOF
echo "[127.0.0.1]:$port $(cat "$work/host_key.pub")" > "$work/known_hosts"
for _ in $(seq 50); do
  ssh -F "$work/ssh_config" -o BatchMode=yes -n hetps-test-a true 2>/dev/null && break
  kill -0 "$sshd_pid" 2>/dev/null || fail "sshd did not start"
  sleep 0.1
done
ssh -F "$work/ssh_config" -o BatchMode=yes -n hetps-test-b true || fail "cannot ssh to the test's sshd"
echo "ok: sshd on 127.0.0.1:$port"

cat > "$work/hosts.txt" <<'EOF'
# Two machines reached over ssh (both this one, through the test's sshd), and this one.
hetps-test-a  role=server  addr=127.0.0.1
hetps-test-b  role=trainer slots=2 device=cpu addr=127.0.0.1   # two trainers
localhost     role=server
EOF
cat > "$work/served.txt" <<'EOF'
hetps-test-a  role=server  addr=127.0.0.1
hetps-test-b  role=trainer addr=127.0.0.1 data=scheduler   # no copy of the data
localhost     role=trainer
EOF
{ cat "$root/configs/fashion_mnist.yaml"; echo "data: {serve: true}"; } > "$work/served.yaml"

# Job control gives the tool a process group of its own and SIGINT its default action, as when
# it runs in a terminal.
set -m
run_tool() {  # NAME FLAGS...: runs the tool in the background, with the job file $config; sets tool_pid
  local name=$1
  shift
  "$root/scripts/launch_hosts.sh" --no-build --build-dir "$build" --ssh-config "$work/ssh_config" \
    --config "${config:-$root/configs/fashion_mnist.yaml}" --model mlp --progress plain --scheduler-port '*' \
    --server-port '*' --run-dir "$work/$name" "$@" > "$work/$name.out" 2>&1 &
  tool_pid=$!
}
wait_tool() {  # sets code: the tool's exit status
  code=0
  wait "$tool_pid" || code=$?
  tool_pid=""
}
wait_training() {  # NAME: waits until the job of run NAME trains
  for _ in $(seq 600); do
    grep -q 'training starts' "$work/$1/scheduler.log" 2>/dev/null && [[ -s $work/$1/scheduler.endpoint ]] && return 0
    sleep 0.1
  done
  fail "$1: the job did not start training"
}
nothing_left() {  # NAME: no process of run NAME is left, here or behind the sshd
  local endpoint
  endpoint=$(cat "$work/$1/scheduler.endpoint")
  for _ in $(seq 50); do
    pgrep -f -- "127.0.0.1:${endpoint##*:}" >/dev/null || break
    sleep 0.2
  done
  pgrep -af -- "127.0.0.1:${endpoint##*:}" && fail "$1: processes of the run are left"
  echo "ok: $1: no process left"
}

# A bad hostfile: refused before anything starts, naming the file and the line.
printf 'hetps-test-a role=server\nhetps-test-b role=trainer slots=two\n' > "$work/bad.txt"
run_tool bad --hostfile "$work/bad.txt"
wait_tool
[[ $code == 2 ]] || fail "a bad hostfile: exit $code, expected 2"
grep -q "$work/bad.txt:2: slots 'two' is not a positive number" "$work/bad.out" ||
  fail "a bad hostfile: the error does not name the line: $(cat "$work/bad.out")"
echo "ok: a bad hostfile: $(cat "$work/bad.out")"
refused() {  # NAME MESSAGE FLAGS...: the launch exits 2 with MESSAGE, before any ssh session
  local name=$1 message=$2 accepted_before
  shift 2
  accepted_before=$(grep -c 'Accepted publickey' "$work/sshd.log" || true)
  # (A small job, should the launcher start it after all.)
  run_tool "$name" --epochs 1 --max-train-samples 600 --no-checkpoints "$@"
  wait_tool
  [[ $code == 2 ]] || fail "$name: exit $code, expected 2"
  grep -qF -- "$message" "$work/$name.out" || fail "$name: not the expected error: $(cat "$work/$name.out")"
  (($(grep -c 'Accepted publickey' "$work/sshd.log") == accepted_before)) || fail "$name: ssh sessions were opened"
  echo "ok: $name refused: $(cat "$work/$name.out")"
}
for data in scheduler /srv/fmnist; do
  printf 'hetps-test-a role=server data=%s\nhetps-test-b role=trainer\n' "$data" > "$work/data-server.txt"
  refused "data-server-${data//\//_}" "$work/data-server.txt:1: data= is for trainers (servers hold no data)" \
    --hostfile "$work/data-server.txt"
done
printf 'hetps-test-a role=server local_steps=4\nhetps-test-b role=trainer\n' > "$work/steps-server.txt"
refused steps-server "$work/steps-server.txt:1: device=, threads= and local_steps= are for trainers" \
  --hostfile "$work/steps-server.txt"
refused unserved "$work/served.txt:2: data=scheduler (hetps-test-b) needs a job that serves its data; add 'data: {serve: true}'" \
  --hostfile "$work/served.txt"
refused unserved-flag "--data-from scheduler, for $work/hosts.txt:3 (hetps-test-b, no data=), needs a job that serves its data; add 'data: {serve: true}'" \
  --hostfile "$work/hosts.txt" --data-from scheduler

# A job with a data section of its own: a trainer host must have its files (relative ones under
# --data-dir); here the training file is there and the test file is not.
mkdir -p "$work/csv-data"
echo "0,1,2" > "$work/csv-data/train.csv"
printf 'data:\n  format: csv\n  train: train.csv\n  test: test.csv\n' > "$work/csv.yaml"
config="$work/csv.yaml" run_tool csv-missing --hostfile "$work/hosts.txt" --data-dir "$work/csv-data" \
  --epochs 1 --no-checkpoints
wait_tool
[[ $code == 1 ]] || fail "csv-missing: exit $code, expected 1: $(cat "$work/csv-missing.out")"
grep -qF "hetps-test-b (over ssh): no $work/csv-data/test.csv, which the job's data section names" \
  "$work/csv-missing.out" || fail "csv-missing: not the expected error: $(cat "$work/csv-missing.out")"
echo "ok: a trainer host without the job's test file: $(cat "$work/csv-missing.out")"

# The job: two servers and two trainers, three of the four over ssh, with CURVE (the keys are
# made here and sent to the hosts).
accepted_before=$(grep -c 'Accepted publickey' "$work/sshd.log" || true)
run_tool job --hostfile "$work/hosts.txt" --mode sync --epochs 1 --max-train-samples 12000 \
  --lr 0.02 --momentum 0.9 --summary "$work/job.json" --no-checkpoints --secure
wait_tool
[[ $code == 0 ]] || fail "the job: exit $code"
/usr/bin/python3 "$root/tests/e2e/check_summary.py" "$work/job.json" sync 2 2 0.70 12000 ||
  fail "the job's summary fell short"
accepted=$(($(grep -c 'Accepted publickey' "$work/sshd.log") - accepted_before))
# Two checks of the hosts before the start, the keys sent to each host, one session per member
# on them, and the keys removed from each host.
((accepted == 9)) || fail "the job: $accepted ssh sessions, expected 9"
grep -q "CURVE on" "$work/job.out" || fail "the job: CURVE is not on"
ls -d /tmp/hetps-keys-job-* 2>/dev/null && fail "the job: keys are left on the hosts"
grep -q "scheduler at tcp://127.0.0.1:" "$work/job.out" || fail "the job: no scheduler address printed"
grep -q "done; logs in $work/job" "$work/job.out" || fail "the job: no closing line"
for log in server-0 server-1 trainer-0 trainer-1 scheduler; do
  [[ -s $work/job/$log.log ]] || fail "the job: $log.log is empty"
done
echo "ok: the job trained over ssh ($accepted sessions) to $(/usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["final_test_accuracy"])' "$work/job.json")"
grep -q "^launch_hosts.sh: status page on http://127.0.0.1:[0-9]*/" "$work/job.out" ||
  fail "launch_hosts.sh printed no status page URL on 127.0.0.1"
echo "ok: $(grep -o "status page on http://[0-9.:]*/" "$work/job.out")"
nothing_left job

# A host without the data: its trainer (trainer-0, over ssh) receives it from the scheduler; the
# trainer here reads the files.
config=$work/served.yaml run_tool served --hostfile "$work/served.txt" --mode sync --epochs 1 \
  --max-train-samples 6000 --lr 0.02 --momentum 0.9 --summary "$work/served.json" --no-checkpoints
wait_tool
[[ $code == 0 ]] || fail "served: exit $code"
/usr/bin/python3 "$root/tests/e2e/check_summary.py" "$work/served.json" sync 1 2 0.60 6000 ||
  fail "served: the summary fell short"
grep -q "hetps-test-b: 1 trainer, reached at 127.0.0.1, data from the scheduler" "$work/served.out" ||
  fail "served: the launcher does not say hetps-test-b's data comes from the scheduler"
grep -q "takes its data from the scheduler" "$work/served/trainer-0.log" ||
  fail "served: trainer-0 (data=scheduler) did not train on served data"
grep -q "takes its data from the scheduler" "$work/served/trainer-1.log" &&
  fail "served: trainer-1 took served data beside its files"
summary_field() {  # FILE EXPRESSION: a field of a run summary `s`
  /usr/bin/python3 -c "import json, sys; s = json.load(open(sys.argv[1])); print($2)" "$1"
}
requests=$(summary_field "$work/served.json" "s['served_data']['requests']")
((requests > 0)) || fail "served: the scheduler answered no data request"
[[ -n $(find "$work/cache" -name '*.piece' 2>/dev/null) ]] || fail "served: trainer-0 cached nothing under $work/cache"
echo "ok: a trainer on data=scheduler trained on served data ($requests requests answered) to" \
  "$(summary_field "$work/served.json" "s['final_test_accuracy']") in $(summary_field "$work/served.json" "s['wall_seconds']") s"
nothing_left served

# A trainer killed on its host: the launcher names it, stops the rest and exits 1.
run_tool killed --hostfile "$work/hosts.txt" --mode sync --epochs 50 --max-train-samples 6000 \
  --no-checkpoints --max-restarts 0
wait_training killed
endpoint=$(cat "$work/killed/scheduler.endpoint")
parent_args() { ps -o args= -p "$(ps -o ppid= -p "$1" | tr -d ' ')" 2>/dev/null || true; }
victim=$(pgrep -f -- "^$build/bin/hetps-trainer --scheduler tcp://127.0.0.1:${endpoint##*:}" | head -n 1 || true)
[[ -n $victim ]] || fail "killed: no trainer process found"
parent_args "$victim" | grep -q 'kill -TERM' ||
  fail "killed: trainer $victim was not started by a shell of sshd: $(ps -o pid,ppid,args -p "$victim")"
kill -s KILL "$victim"
wait_tool
[[ $code == 1 ]] || fail "killed: exit $code, expected 1"
grep -qE "trainer-[01] failed \(exit 137\)" "$work/killed.out" || fail "killed: the trainer is not named: $(cat "$work/killed.out")"
echo "ok: a trainer killed on its host: $(grep -E 'trainer-[01] failed' "$work/killed.out")"
nothing_left killed

# SIGINT, as Ctrl-C in a terminal: the scheduler ends the job, every process here and on the
# hosts stops.
run_tool interrupted --hostfile "$work/hosts.txt" --mode async --epochs 50 --max-train-samples 6000 \
  --no-checkpoints
wait_training interrupted
kill -s INT -- "-$tool_pid"
started=$SECONDS
wait_tool
[[ $code == 130 ]] || fail "interrupted: exit $code, expected 130"
((SECONDS - started <= 20)) || fail "interrupted: $((SECONDS - started)) s to stop after SIGINT"
echo "ok: SIGINT stopped the job in $((SECONDS - started)) s"
nothing_left interrupted

# The launcher killed with SIGKILL: no trap runs, yet the members on the hosts stop, since their
# ssh clients' input (a FIFO only the launcher held open) ends. What ran here without ssh (the
# scheduler, the localhost server) is this test's to stop, as after a killed launch_local.sh.
run_tool orphaned --hostfile "$work/hosts.txt" --mode async --epochs 50 --max-train-samples 6000 \
  --no-checkpoints
wait_training orphaned
endpoint=$(cat "$work/orphaned/scheduler.endpoint")
remote="^$build/bin/hetps-(server|trainer) --scheduler tcp://127.0.0.1:${endpoint##*:}"
(($(pgrep -fc -- "$remote") == 4)) || fail "orphaned: $(pgrep -fc -- "$remote") members running, expected 4"
on_hosts() {  # the members still running under the sshd's wrapper shells
  local pid ppid
  for pid in $(pgrep -f -- "$remote"); do
    ppid=$(ps -o ppid= -p "$pid" 2>/dev/null | tr -d ' ')
    [[ -n $ppid ]] || continue  # gone since pgrep saw it
    ps -o args= -p "$ppid" 2>/dev/null | grep -q 'kill -TERM' && echo "$pid"
  done
  return 0
}
members=0
for _ in $(seq 50); do
  members=$(on_hosts | wc -l)
  ((members == 3)) && break
  sleep 0.2
done
((members == 3)) || fail "orphaned: $members members under the sshd before the kill, expected 3"
kill -s KILL "$tool_pid"
wait_tool
for _ in $(seq 100); do
  [[ -z $(on_hosts) ]] && break
  sleep 0.1
done
[[ -z $(on_hosts) ]] || fail "orphaned: members on the hosts still run after the launcher was killed: $(on_hosts)"
echo "ok: the launcher killed with SIGKILL: the members on the hosts stopped"
pkill -TERM -f -- "127.0.0.1:${endpoint##*:}" || true
nothing_left orphaned
