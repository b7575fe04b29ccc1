#!/usr/bin/env bash
# The scheduler's HTTP endpoint on a real job: scripts/launch_local.sh --http starts a scheduler,
# a server and two trainers and prints the status page's URL. While the job trains:
#  - promtool check metrics accepts GET /metrics;
#  - a real Prometheus scrapes it and its query API shows hetps_trainer_samples_total rising for
#    each trainer rank, and up == 1;
#  - headless Chromium loads GET /, takes a screenshot into the test output directory
#    (BUILD_DIR/test-output/http_status/status_page.png) and its text lists every member;
#  - hetps-status prints the member table over ZeroMQ (--scheduler) and over HTTP (--http).
# Then the job must finish. Exits 77 (SKIPPED: reason) without prometheus, promtool or chromium.
#   http_status_test.sh BUILD_DIR
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(cd "$1" && pwd)
for tool in prometheus promtool chromium; do
  command -v "$tool" >/dev/null || { echo "SKIPPED: $tool is not installed (Debian package: ${tool/promtool/prometheus}; scripts/install-deps.sh)"; exit 77; }
done
out="$build/test-output/http_status"
mkdir -p "$out"
rm -f "$out"/*
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

fetch() { /usr/bin/python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=2).read().decode())' "$1"; }
free_port() { /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
fail() {
  echo "FAILED: $*"
  for log in "$work"/run/*.log "$work/launch.out" "$work/prometheus.log"; do
    [[ -f $log ]] && { echo "== $log"; tail -n 20 "$log"; }
  done
  exit 1
}

# The job must outlive every check below (Prometheus starting and scraping twice, Chromium
# loading the page twice, hetps-status): about 25 s. Its length follows the host's compute
# (trainers that sleep 7x their compute, --slowdown: the cores stay free for the browser), so
# the model is the CNN, whose step differs less between hosts than the MLP's (2.5x, against
# 4-5x, between the 2-core hosts of benchmarks/README.md): 40 s on the faster host, where the
# checks took 10-15 s, so about 100 s on the slower. The MLP's job, 45 s on the slower, took 8 s
# on the faster and ended before Chromium loaded the page.
"$root/scripts/launch_local.sh" --no-build --build-dir "$build" --servers 1 --trainers 2 --mode async \
  --model cnn --epochs 2 --max-train-samples 7500 --lr 0.05 --http 127.0.0.1:0 --slowdown 8,8 \
  --summary "$work/run.json" --run-dir "$work/run" --progress plain > "$work/launch.out" 2>&1 &
launcher=$!
pids+=("$launcher")
for _ in $(seq 300); do
  grep -q "status page on http://" "$work/launch.out" 2>/dev/null && break
  kill -0 "$launcher" 2>/dev/null || fail "launch_local.sh ended before printing the status page's URL"
  sleep 0.1
done
url=$(grep -o "status page on http://[0-9.:]*/" "$work/launch.out" | head -1 | cut -d' ' -f4)
[[ -n $url ]] || fail "launch_local.sh printed no status page URL"
hostport=${url#http://}
hostport=${hostport%/}
endpoint=$(<"$work/run/scheduler.endpoint")
echo "status page: $url; scheduler: $endpoint"

# Until both trainers train (their samples counted).
metrics_ok=0
for _ in $(seq 600); do
  fetch "${url}metrics" > "$work/metrics.txt" 2>/dev/null || true
  if grep -q '^hetps_trainer_samples_total{role="trainer",rank="0".*} [1-9]' "$work/metrics.txt" &&
     grep -q '^hetps_trainer_samples_total{role="trainer",rank="1".*} [1-9]' "$work/metrics.txt"; then
    metrics_ok=1; break
  fi
  sleep 0.1
done
((metrics_ok)) || fail "the trainers' samples never showed in /metrics"
cp "$work/metrics.txt" "$out/metrics.txt"
promtool check metrics < "$work/metrics.txt" > "$work/promtool.out" 2>&1 || {
  cat "$work/promtool.out"; fail "promtool check metrics refused /metrics"; }
echo "promtool check metrics: ok"
for name in hetps_trainer_samples_total hetps_trainer_loss hetps_server_pushes_total hetps_staleness_bucket \
            hetps_job_progress_ratio; do
  grep -q "^$name" "$work/metrics.txt" || fail "/metrics lacks $name"
done

# A real Prometheus, scraping every second.
prom_port=$(free_port)
cat > "$work/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: hetps
    static_configs:
      - targets: ['$hostport']
YAML
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
  --web.listen-address="127.0.0.1:$prom_port" > "$work/prometheus.log" 2>&1 &
pids+=($!)
query() {  # query PROMQL: prints "rank value" lines (or the value alone for series without rank)
  /usr/bin/python3 - "http://127.0.0.1:$prom_port" "$1" <<'PY'
import json, sys, urllib.parse, urllib.request
base, promql = sys.argv[1], sys.argv[2]
try:
    with urllib.request.urlopen(base + "/api/v1/query?" + urllib.parse.urlencode({"query": promql}), timeout=2) as r:
        answer = json.load(r)
except Exception:
    sys.exit(0)
for series in answer.get("data", {}).get("result", []):
    print(series["metric"].get("rank", "-"), series["value"][1])
PY
}
rose=""
for _ in $(seq 120); do
  rose=$(query 'max_over_time(hetps_trainer_samples_total{job="hetps"}[1m]) - min_over_time(hetps_trainer_samples_total{job="hetps"}[1m]) > 0')
  [[ $(wc -l <<<"$rose") -ge 2 && -n $rose ]] && break
  sleep 0.5
done
echo "samples gained per rank in Prometheus: $(tr '\n' ';' <<<"$rose")"
for rank in 0 1; do
  grep -q "^$rank " <<<"$rose" || fail "Prometheus saw no rise of hetps_trainer_samples_total for rank $rank"
done
# Every query of the Grafana dashboard: accepted by this Prometheus, and naming only metrics that
# docs/operations.md's table documents (some appear only once there is something to count).
/usr/bin/python3 - "http://127.0.0.1:$prom_port" "$root/deploy/grafana/hetps-dashboard.json" \
  "$root/docs/operations.md" <<'PY' ||
import json, re, sys, urllib.error, urllib.parse, urllib.request
base, dashboard, doc = sys.argv[1:]
documented = {name for row in open(doc) if row.startswith("| `hetps_")
              for name in re.findall(r"`(hetps_[a-z_]+)`", row.split("|")[1])}
queries = [t["expr"] for panel in json.load(open(dashboard))["panels"] for t in panel.get("targets", [])]
bad = []
for expr in queries:
    try:
        with urllib.request.urlopen(base + "/api/v1/query?" + urllib.parse.urlencode({"query": expr}), timeout=5) as r:
            status = json.load(r).get("status")
    except urllib.error.HTTPError as e:
        status = f"HTTP {e.code}: {e.read().decode(errors='replace').strip()}"
    if status != "success":
        bad.append(f"{expr}: {status}")
    for name in re.findall(r"\bhetps_[a-z_]+", expr):
        if name not in documented and re.sub(r"_(bucket|sum|count)$", "", name) not in documented:
            bad.append(f"{expr}: names {name}, which docs/operations.md does not list")
if bad:
    print("the Grafana dashboard's queries:", *bad, sep="\n  ")
    sys.exit(1)
print(f"Prometheus ran the dashboard's {len(queries)} queries; every metric they name is documented")
PY
  fail "the Grafana dashboard does not match the documented metrics"
up=$(query 'up{job="hetps"}')
[[ $up == "- 1" ]] || fail "up{job=\"hetps\"} is '$up', not 1"
echo "Prometheus: up == 1"

# The page in a real browser: a screenshot, and its text names every member.
chromium_flags=(--headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run
                --user-data-dir="$work/chromium" --window-size=1100,900 --hide-scrollbars)
timeout 60 chromium "${chromium_flags[@]}" --screenshot="$out/status_page.png" "$url" > "$work/chromium.out" 2>&1 ||
  { cat "$work/chromium.out"; fail "chromium could not take a screenshot"; }
[[ -s $out/status_page.png ]] || fail "chromium wrote no screenshot"
# The page is rendered by the scheduler, tables and all, and reloads itself every 3 s (a meta
# refresh, kStatusPageRefreshSeconds). The dump is taken at 1 s of virtual time: a budget that
# reached the refresh (it was 3 s) dumped the next load's empty document, now and then.
lists_members() {
  local member
  for member in "server 0" "trainer 0" "trainer 1"; do
    grep -q "<td>$member</td>" "$work/page.html" || { missing=$member; return 1; }
  done
}
timeout 60 chromium "${chromium_flags[@]}" --virtual-time-budget=1000 --dump-dom "$url" > "$work/page.html" \
  2> "$work/chromium.err" || fail "chromium could not load the page"
lists_members || fail "the page as Chromium loaded it does not list $missing"
echo "chromium: screenshot in $out/status_page.png; the page lists every member"

# The member table for terminals, both ways.
"$build/bin/hetps-status" --scheduler "$endpoint" > "$work/table-zmq.txt" || fail "hetps-status --scheduler failed"
"$build/bin/hetps-status" --http "$url" > "$work/table-http.txt" || fail "hetps-status --http failed"
cat "$work/table-zmq.txt"
for table in "$work/table-zmq.txt" "$work/table-http.txt"; do
  [[ $(grep -cE '^(server|trainer) ' "$table") -eq 3 ]] || fail "$table does not list the 3 members"
done
"$build/bin/hetps-status" --scheduler tcp://127.0.0.1:1 --timeout-ms 300 > /dev/null 2> "$work/none.err" &&
  fail "hetps-status found a scheduler where none runs"
grep -q "no answer from a scheduler at tcp://127.0.0.1:1" "$work/none.err" || fail "unclear error: $(cat "$work/none.err")"

wait "$launcher" || fail "the job did not finish"
/usr/bin/python3 "$root/tests/e2e/check_summary.py" "$work/run.json" async 1 2 0.70 7500
echo "PASSED"
