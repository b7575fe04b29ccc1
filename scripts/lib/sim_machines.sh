# Simulated machines for scripts/sim_cluster.sh: one network namespace per machine with a veth
# link to a bridge in a namespace of its own, rate-limited by tc in both directions; a cgroup v1
# CPU budget (cpu.cfs_quota_us), a CPU-time account (cpuacct) and a freezer (for stalls) per
# machine; and the teardown that removes all of it. Sourced, not run. Everything a run creates
# is named after `sim_prefix` (hetps-sim-PID), so teardown works by name, also for a run that
# was killed before it could clean up (clean_stale).

cgroup_root=/sys/fs/cgroup
sim_controllers=(cpu cpuacct freezer)
sim_subnet=10.77.0              # the bridge's /24; machine i (from 0) is .(i + 1)
# A budget of C cores is C x 10 ms of CPU time in every 10 ms (the kernel's default period of
# 100 ms lets a slow machine run at full speed for a third of it, then stop for the rest, which
# a trainer's step timings take for a fast machine); below 0.1 cores the period grows so that
# the quota stays at the kernel's minimum of 1 ms.
cfs_period_us() {  # CPUS
  awk -v c="$1" 'BEGIN { p = 10000; if (c * p < 1000) p = int(1000 / c + 1); print p }'
}

# Why a machine cannot be simulated here, or nothing when it can.
sim_unavailable() {
  ((EUID == 0)) || { echo "it needs root (network namespaces, tc and cgroups)"; return; }
  local command
  for command in ip tc unshare; do
    command -v "$command" >/dev/null || { echo "'$command' is not installed (iproute2, util-linux)"; return; }
  done
  local controller
  for controller in "${sim_controllers[@]}"; do
    [[ -w $cgroup_root/$controller/cgroup.procs ]] ||
      { echo "the cgroup v1 '$controller' controller is not mounted at $cgroup_root/$controller"; return; }
  done
  /usr/bin/python3 -c 'import yaml' 2>/dev/null ||
    { echo "/usr/bin/python3 cannot import yaml (install python3-yaml) to read the spec"; return; }
  local probe="hetps-sim-probe-$$"
  if ! ip netns add "$probe" 2>/dev/null; then
    echo "network namespaces are not available (ip netns add failed)"
    return
  fi
  ip netns del "$probe" 2>/dev/null || true
}

machine_cgroup() { echo "$cgroup_root/$1/$sim_prefix/$2"; }   # CONTROLLER MACHINE
machine_netns() { echo "$sim_prefix-$1"; }

# tbf needs a bucket of at least one packet (64 KiB with GSO) and about a timer tick of traffic.
tbf_burst() {  # RATE (e.g. 300mbit) -> bytes
  awk -v rate="$1" 'BEGIN {
    match(rate, /^[0-9.]+/); n = substr(rate, 1, RLENGTH); unit = substr(rate, RLENGTH + 1)
    bits = n * (unit == "gbit" ? 1e9 : unit == "mbit" ? 1e6 : unit == "kbit" ? 1e3 : 1)
    burst = bits / 8 * 0.004; if (burst < 131072) burst = 131072
    printf "%d", burst }'
}

shape() {  # NETNS DEVICE RATE: limits what DEVICE sends
  ip netns exec "$1" tc qdisc add dev "$2" root tbf rate "$3" burst "$(tbf_burst "$3")" latency 100ms
}

# Creates the bridge namespace and, for machine I named NAME, its namespace, address, link speed
# and cgroups. The veth's end in the machine is eth0; its end on the bridge is mI. A machine's
# upload is shaped on eth0, its download on mI (no ifb or ingress policing needed).
sim_bridge_up() {
  ip netns add "$sim_prefix"
  ip -n "$sim_prefix" link add br0 type bridge
  ip -n "$sim_prefix" link set br0 up
  ip -n "$sim_prefix" link set lo up
  sim_cgroups_up
}

# The cgroups every machine's cgroups go under, named after sim_prefix.
sim_cgroups_up() {
  local controller
  for controller in "${sim_controllers[@]}"; do mkdir "$cgroup_root/$controller/$sim_prefix"; done
}

sim_machine_up() {  # I NAME CPUS LINK
  local i=$1 machine=$2 cpus=$3 link=$4 ns
  ns=$(machine_netns "$machine")
  ip netns add "$ns"
  ip link add "hs$$m$i" netns "$ns" type veth peer name "m$i" netns "$sim_prefix"
  ip -n "$ns" link set "hs$$m$i" name eth0
  ip -n "$ns" addr add "$sim_subnet.$((i + 1))/24" dev eth0
  ip -n "$ns" link set lo up
  ip -n "$ns" link set eth0 up
  ip -n "$sim_prefix" link set "m$i" master br0 up
  if [[ $link != - ]]; then
    shape "$ns" eth0 "$link"
    shape "$sim_prefix" "m$i" "$link"
  fi
  sim_cpu_budget_up "$machine" "$cpus"
}

# MACHINE's cgroups (under sim_cgroups_up's), with a CPU budget of CPUS cores.
sim_cpu_budget_up() {  # NAME CPUS
  local machine=$1 cpus=$2 controller cpu period
  for controller in "${sim_controllers[@]}"; do mkdir "$(machine_cgroup "$controller" "$machine")"; done
  cpu=$(machine_cgroup cpu "$machine")
  period=$(cfs_period_us "$cpus")
  echo "$(awk -v c="$cpus" -v p="$period" 'BEGIN { printf "%d", c * p }')" > "$cpu/cpu.cfs_quota_us"
  echo "$period" > "$cpu/cpu.cfs_period_us"
  # Shares in proportion to the budgets: when the host is busier than the budgets allow, each
  # machine keeps its share of what is left.
  echo "$(awk -v c="$cpus" 'BEGIN { s = int(c * 1024); printf "%d", s < 2 ? 2 : s }')" > "$cpu/cpu.shares"
}

machine_address() { echo "$sim_subnet.$(($1 + 1))"; }   # I

# Runs COMMAND on MACHINE: joins its cgroups, then its network namespace and a UTS namespace
# whose host name is the machine's, and execs COMMAND in place (the PID stays the caller's).
# Run it in the background (`on_machine NAME cmd &`): the subshell moves itself.
on_machine() {  # MACHINE COMMAND...
  local machine=$1
  shift
  join_machine_cgroups "$machine"
  exec ip netns exec "$(machine_netns "$machine")" unshare --uts sh -c 'hostname "$0" && exec "$@"' "$machine" "$@"
}

# Moves the calling (sub)shell into MACHINE's cgroups: its CPU budget and account.
join_machine_cgroups() {  # MACHINE
  local controller
  for controller in "${sim_controllers[@]}"; do
    echo "$BASHPID" > "$(machine_cgroup "$controller" "$1")/cgroup.procs"
  done
}

# Periodic stalls of MACHINE: every EVERY seconds for FOR seconds it is frozen (STALL_CPUS 0: the
# freezer stops every process of the machine, heartbeats included) or throttled to STALL_CPUS
# cores. Each stall is logged to $run_dir/stalls.log. Runs until killed; teardown thaws.
stall_loop() {  # MACHINE CPUS EVERY FOR STALL_CPUS
  local machine=$1 cpus=$2 every=$3 length=$4 throttle=$5 freezer cpu
  freezer=$(machine_cgroup freezer "$machine")
  cpu=$(machine_cgroup cpu "$machine")
  local quota low
  quota=$(cat "$cpu/cpu.cfs_quota_us")
  low=$(awk -v c="$throttle" -v p="$(cat "$cpu/cpu.cfs_period_us")" 'BEGIN { printf "%d", c * p }')
  # Sleeps in the background so that a TERM ends the loop at once, its sleep included.
  local sleeper=""
  trap 'kill "$sleeper" 2>/dev/null; exit 0' TERM
  pause() { sleep "$1" & sleeper=$!; wait "$sleeper"; }
  while true; do
    pause "$(awk -v e="$every" -v l="$length" 'BEGIN { print e - l }')"
    if [[ $throttle == 0 ]]; then echo FROZEN > "$freezer/freezer.state"; else echo "$low" > "$cpu/cpu.cfs_quota_us"; fi
    echo "$(date -u +%H:%M:%S.%N | cut -c1-12) $machine stalls for ${length} s" >> "$run_dir/stalls.log"
    pause "$length"
    if [[ $throttle == 0 ]]; then echo THAWED > "$freezer/freezer.state"; else echo "$quota" > "$cpu/cpu.cfs_quota_us"; fi
    echo "$(date -u +%H:%M:%S.%N | cut -c1-12) $machine runs again" >> "$run_dir/stalls.log"
  done
}

# One JSON line per machine: its spec, address and what it used (CPU seconds, time throttled).
machine_report() {  # I NAME CPUS LINK ROLES
  local acct cpu usage_ns throttled_ns
  acct=$(machine_cgroup cpuacct "$2")
  cpu=$(machine_cgroup cpu "$2")
  usage_ns=$(cat "$acct/cpuacct.usage" 2>/dev/null || echo 0)
  throttled_ns=$(awk '$1 == "throttled_time" {print $2}' "$cpu/cpu.stat" 2>/dev/null || echo 0)
  printf '{"machine": "%s", "address": "%s", "cpus": %s, "link": "%s", "roles": "%s", "cpu_seconds": %.2f, "throttled_seconds": %.2f}\n' \
    "$2" "$(machine_address "$1")" "$3" "$4" "$5" "$(awk -v n="$usage_ns" 'BEGIN { print n / 1e9 }')" \
    "$(awk -v n="${throttled_ns:-0}" 'BEGIN { print n / 1e9 }')"
}

# Removes everything named after PREFIX: thaws and kills every process in its cgroups, removes
# the cgroups, and deletes its namespaces (which takes their veths and qdiscs with them).
# Says what it could not remove; never fails.
sim_teardown() {  # PREFIX
  local prefix=$1 controller dir pid ns
  for dir in "$cgroup_root"/freezer/"$prefix"/*/; do
    [[ -f $dir/freezer.state ]] && echo THAWED > "$dir/freezer.state" 2>/dev/null
  done
  for _ in $(seq 50); do
    local left=0
    for dir in "$cgroup_root"/cpu/"$prefix"/*/; do
      [[ -f $dir/cgroup.procs ]] || continue
      for pid in $(cat "$dir/cgroup.procs" 2>/dev/null); do
        left=1
        kill -s KILL "$pid" 2>/dev/null || true
      done
    done
    ((left)) || break
    sleep 0.1
  done
  for controller in "${sim_controllers[@]}"; do
    dir="$cgroup_root/$controller/$prefix"
    [[ -d $dir ]] || continue
    for machine_dir in "$dir"/*/; do
      [[ -d $machine_dir ]] && rmdir "$machine_dir" 2>/dev/null
    done
    rmdir "$dir" 2>/dev/null || echo "sim_cluster.sh: could not remove the cgroup $dir" >&2
  done
  for ns in $(ip netns list 2>/dev/null | awk -v p="$prefix" '$1 == p || index($1, p "-") == 1 {print $1}'); do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -s KILL "$pid" 2>/dev/null || true; done
    ip netns del "$ns" 2>/dev/null || echo "sim_cluster.sh: could not delete the network namespace $ns" >&2
  done
  return 0
}

# Tears down what runs that no longer exist left behind (a run killed with SIGKILL cannot).
clean_stale() {
  local prefix pid
  for prefix in $( (ip netns list 2>/dev/null | awk '{print $1}'; ls "$cgroup_root/cpu" "$cgroup_root/freezer" "$cgroup_root/cpuacct" 2>/dev/null) |
                  grep -oE '^hetps-sim-[0-9]+' | sort -u); do
    pid=${prefix#hetps-sim-}
    if kill -0 "$pid" 2>/dev/null; then
      echo "sim_cluster.sh: $prefix belongs to a running process ($pid); left alone"
      continue
    fi
    echo "sim_cluster.sh: removing what $prefix left behind"
    sim_teardown "$prefix"
  done
}
