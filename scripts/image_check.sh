#!/usr/bin/env bash
# Builds the image of deploy/k8s/Dockerfile and runs a short job from it: a scheduler, one server
# and one trainer, each in a container of its own on the host's network (addresses on 127.0.0.1
# only), as deploy/k8s starts them; checks that the job finished, that the trainer trained and
# that the scheduler served /metrics. Needs a running Docker daemon and the base images the
# Dockerfile names (debian:12, debian:12-slim): pulled from a registry, or made here from
# Debian's archive with --debootstrap. Takes 15-30 minutes on 2 cores (the build compiles hetps).
#   scripts/image_check.sh [--tag NAME] [--no-build] [--debootstrap] [--port N]
# --tag NAME      the image to build and run (default hetps:check)
# --no-build      run the job from an image built before
# --debootstrap   when debian:12 or debian:12-slim is missing, make it with debootstrap (a minbase
#                 Debian 12 from the archive apt uses) and `docker import`
# --port N        the scheduler's control port (default 17400); N+80 serves HTTP, N+100 the server
# Containers are named hetps-check-PID-ROLE and removed on every exit path; the job's summary and
# the containers' logs are kept in runs/image-check-DATE/.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tag=hetps:check
build=1
debootstrap=0
port=17400
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
while (($#)); do
  case $1 in
    --tag) [[ $# -ge 2 ]] || { echo "image_check.sh: --tag needs a value" >&2; exit 2; }; tag=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    --debootstrap) debootstrap=1; shift ;;
    --port) [[ $# -ge 2 && $2 =~ ^[1-9][0-9]{3,4}$ && $2 -le 65000 ]] || {
              echo "image_check.sh: --port needs a port from 1000 to 65000" >&2; exit 2; }
            port=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "image_check.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

docker info >/dev/null 2>&1 || {
  echo "image_check.sh: no Docker daemon answers ('docker info' fails); start one, or run this where one runs" >&2
  exit 1
}

out="$root/runs/image-check-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"
prefix="hetps-check-$$"
scratch=""
cleanup() {
  local ids
  ids=$(docker ps -aq --filter "name=^$prefix-" 2>/dev/null || true)
  if [[ -n $ids ]]; then
    for role in scheduler server trainer; do
      docker logs "$prefix-$role" >"$out/$role.log" 2>&1 || true
    done
    # shellcheck disable=SC2086  # one id per word
    docker rm -f $ids >/dev/null 2>&1 || true
  fi
  [[ -z $scratch ]] || rm -rf "$scratch"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A base image made from Debian's archive: debootstrap's minbase, apt's lists and caches removed.
make_base() {
  local image=$1
  command -v debootstrap >/dev/null || {
    echo "image_check.sh: debootstrap is missing (apt-get install debootstrap)" >&2
    exit 1
  }
  [[ -n $scratch ]] || scratch=$(mktemp -d /tmp/hetps-image-check.XXXXXX)
  if [[ ! -d $scratch/rootfs ]]; then
    local mirror
    mirror=$(awk '/^deb / { print $2; exit } /^URIs:/ { print $2; exit }' /etc/apt/sources.list \
      /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
    mirror=${mirror:-http://deb.debian.org/debian}
    echo "image_check.sh: making a Debian 12 base with debootstrap from $mirror"
    debootstrap --variant=minbase bookworm "$scratch/rootfs" "$mirror" >"$out/debootstrap.log" 2>&1 || {
      tail -n 20 "$out/debootstrap.log" >&2
      echo "image_check.sh: debootstrap failed (all of it in $out/debootstrap.log)" >&2
      exit 1
    }
    rm -rf "$scratch/rootfs/var/cache/apt/archives/"*.deb "$scratch/rootfs/var/lib/apt/lists/"*
  fi
  tar -C "$scratch/rootfs" -c . | docker import - "$image" >/dev/null
  echo "image_check.sh: $image made from debootstrap's Debian 12"
}

if ((build)); then
  for base in debian:12 debian:12-slim; do
    docker image inspect "$base" >/dev/null 2>&1 && continue
    if ((debootstrap)); then
      make_base "$base"
    else
      echo "image_check.sh: the base image $base is missing; pull it, or pass --debootstrap to make it here" >&2
      exit 1
    fi
  done
  echo "image_check.sh: building $tag from deploy/k8s/Dockerfile (log: $out/build.log)"
  start=$SECONDS
  # The host's network for the build's apt-get, where the daemon has no bridge of its own.
  if ! DOCKER_BUILDKIT=0 docker build --network host -f "$root/deploy/k8s/Dockerfile" -t "$tag" "$root" \
    >"$out/build.log" 2>&1; then
    tail -n 30 "$out/build.log" >&2
    echo "image_check.sh: the image did not build (all of it in $out/build.log)" >&2
    exit 1
  fi
  echo "image_check.sh: built $tag in $((SECONDS - start)) s"
fi
docker image inspect "$tag" >/dev/null 2>&1 || { echo "image_check.sh: no image $tag; build it first" >&2; exit 1; }

control="tcp://127.0.0.1:$port"
http_port=$((port + 80))
run() {  # NAME ARGS...: a container on the host's network, as the image's user
  local name=$1
  shift
  docker run -d --name "$prefix-$name" --network host "$tag" "$@" >/dev/null
}
echo "image_check.sh: a job from $tag: scheduler $control, one server, one trainer (MLP, 8,192 samples)"
run scheduler hetps-scheduler --model mlp --mode sync --servers 1 --trainers 1 --epochs 1 \
  --max-train-samples 8192 --eval-interval-samples 4096 --listen "$control" \
  --http "127.0.0.1:$http_port" --summary /var/lib/hetps/summary.json --progress plain
run server hetps-server --scheduler "$control" --bind "tcp://127.0.0.1:$((port + 100))"
run trainer hetps-trainer --scheduler "$control" --device cpu

metrics=""
deadline=$((SECONDS + 600))
while [[ $(docker inspect -f '{{.State.Running}}' "$prefix-scheduler") == true ]]; do
  ((SECONDS < deadline)) || { echo "image_check.sh: the job did not end within 600 s" >&2; exit 1; }
  if [[ -z $metrics ]]; then
    metrics=$(docker exec "$prefix-scheduler" bash -c "exec 3<>/dev/tcp/127.0.0.1/$http_port &&
      printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3 && cat <&3" 2>/dev/null | grep -m 1 '^hetps_' || true)
  fi
  sleep 1
done
code=$(docker inspect -f '{{.State.ExitCode}}' "$prefix-scheduler")
docker cp "$prefix-scheduler:/var/lib/hetps/summary.json" "$out/summary.json" >/dev/null 2>&1 || true
if ((code != 0)) || [[ ! -s $out/summary.json ]]; then
  docker logs "$prefix-scheduler" 2>&1 | tail -n 20 >&2
  echo "image_check.sh: the scheduler exited with $code (logs in $out)" >&2
  exit 1
fi
python3 - "$out/summary.json" <<'EOF'
import json, sys
summary = json.load(open(sys.argv[1]))
trained, accuracy = sum(summary["samples"]), summary["final_test_accuracy"]  # samples: per trainer
if trained <= 0 or not 0.2 < accuracy <= 1:  # twice chance: it learned
    sys.exit(f"image_check.sh: the job trained {trained} samples to a test accuracy of {accuracy}")
print(f"image_check.sh: the job trained {trained} samples; test accuracy {accuracy:.4f}")
EOF
[[ -n $metrics ]] || { echo "image_check.sh: the scheduler's /metrics never answered on port $http_port" >&2; exit 1; }
echo "image_check.sh: /metrics answered ($metrics)"
echo "image_check.sh: passed; logs and summary in $out"
