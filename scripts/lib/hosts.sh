# The hostfile and ssh side of scripts/launch_hosts.sh: reading the hostfile, and running a
# member on its host (directly for localhost, over ssh otherwise) so that it stops when the
# launcher stops it or the launcher itself dies. Sourced after scripts/lib/launch.sh; uses its
# `tool`, and keeps the hosts in the e_* arrays below.

# One entry per hostfile line, in file order.
e_line=()     # its line number in the hostfile
e_host=()     # what ssh is given (user@host, or a Host of the ssh config); localhost runs here
e_role=()     # server or trainer
e_slots=()    # processes of that role on the host
e_device=()   # trainers: the device, or empty for the launcher's --device
e_threads=()  # trainers: compute threads, or empty for the launcher's --threads
e_steps=()    # trainers: hetps-trainer --local-steps, or empty for 1
e_addr=()     # the address the other hosts reach it at (empty: decided by resolve_addresses)
e_bin=()      # where the binaries are on the host (empty: the launcher's build)
e_data=()     # trainers: the data's directory on the host, `scheduler` (none there: the
              # scheduler serves it), or empty for the launcher's --data-from and --data-dir
e_local=()    # 1: localhost, run without ssh

hostfile_error() {  # FILE LINE MESSAGE
  echo "$tool: $1:$2: $3" >&2
  exit 2
}

# Reads an MPI-style hostfile: one host a line, `HOST key=value ...`, `#` starts a comment.
# Exits 2 with FILE:LINE and the reason on any bad line.
parse_hostfile() {  # FILE
  local file=$1 number=0 line host word key value role slots device threads local_steps addr bin_dir data
  local words
  [[ -f $file && -r $file ]] || { echo "$tool: the hostfile '$file' cannot be read" >&2; exit 2; }
  while IFS= read -r line || [[ -n $line ]]; do
    number=$((number + 1))
    line=${line%%#*}
    read -r -a words <<<"$line" || true
    ((${#words[@]})) || continue
    host=${words[0]}
    [[ $host == *=* ]] && hostfile_error "$file" "$number" "the line starts with '$host'; it must start with a host name"
    role="" slots=1 device="" threads="" local_steps="" addr="" bin_dir="" data=""
    for word in "${words[@]:1}"; do
      [[ $word == *=* ]] || hostfile_error "$file" "$number" "'$word' is not key=value"
      key=${word%%=*}
      value=${word#*=}
      [[ -n $value ]] || hostfile_error "$file" "$number" "$key= needs a value"
      case $key in
        role)
          case $value in
            server|trainer) role=$value ;;
            scheduler) hostfile_error "$file" "$number" "role=scheduler: the scheduler runs where $tool runs (see --scheduler-address)" ;;
            *) hostfile_error "$file" "$number" "role '$value' is neither server nor trainer" ;;
          esac ;;
        slots)
          [[ $value =~ ^[1-9][0-9]*$ ]] || hostfile_error "$file" "$number" "slots '$value' is not a positive number"
          slots=$value ;;
        device)
          [[ $value =~ ^(auto|cpu|mps|cuda(:[0-9]+)?)$ ]] ||
            hostfile_error "$file" "$number" "device '$value' is none of auto, cpu, cuda, cuda:N, mps"
          device=$value ;;
        threads)
          [[ $value =~ ^[1-9][0-9]*$ ]] || hostfile_error "$file" "$number" "threads '$value' is not a positive number"
          threads=$value ;;
        local_steps)
          [[ $value =~ ^[1-9][0-9]*$ ]] || hostfile_error "$file" "$number" "local_steps '$value' is not a positive number"
          local_steps=$value ;;
        addr) addr=$value ;;
        bin) bin_dir=$value ;;
        data) data=$value ;;
        *) hostfile_error "$file" "$number" "unknown key '$key' (known: role, slots, device, threads, local_steps, addr, bin, data)" ;;
      esac
    done
    [[ -n $role ]] || hostfile_error "$file" "$number" "$host has no role= (server or trainer)"
    if [[ $role == server && -n $device$threads$local_steps ]]; then
      hostfile_error "$file" "$number" "device=, threads= and local_steps= are for trainers, and $host's role is server"
    fi
    if [[ $role == server && -n $data ]]; then
      hostfile_error "$file" "$number" "data= is for trainers (servers hold no data), and $host's role is server"
    fi
    e_line+=("$number") e_host+=("$host") e_role+=("$role") e_slots+=("$slots") e_device+=("$device")
    e_threads+=("$threads") e_steps+=("$local_steps") e_addr+=("$addr") e_bin+=("$bin_dir") e_data+=("$data")
    if [[ $host == localhost || $host == 127.0.0.1 ]]; then e_local+=(1); else e_local+=(0); fi
  done < "$file"
  ((${#e_host[@]})) || { echo "$tool: $file names no host" >&2; exit 2; }
}

is_loopback() { [[ $1 == localhost || $1 == 127.* || $1 == ::1 ]]; }

# Gives every entry its address and sets `scheduler_address` (unless given) and `bind_ip`: with
# every process on loopback addresses everything binds 127.0.0.1; otherwise 0.0.0.0, and the
# hosts reach this machine at its host name.
resolve_addresses() {
  local e all_loopback=1
  for ((e = 0; e < ${#e_host[@]}; e++)); do
    if [[ -z ${e_addr[e]} ]] && ((!e_local[e])); then
      local name=${e_host[e]#*@}
      e_addr[e]=$name
    fi
    [[ -z ${e_addr[e]} ]] || is_loopback "${e_addr[e]}" || all_loopback=0
  done
  if [[ -z $scheduler_address ]]; then
    if ((all_loopback)); then scheduler_address=127.0.0.1; else scheduler_address=$(hostname -f 2>/dev/null || hostname); fi
  fi
  for ((e = 0; e < ${#e_host[@]}; e++)); do
    [[ -n ${e_addr[e]} ]] || e_addr[e]=$scheduler_address
  done
  if ((all_loopback)) && is_loopback "$scheduler_address"; then bind_ip=127.0.0.1; else bind_ip=0.0.0.0; fi
}

# The command line sshd runs (with the user's shell) for PROGRAM ARGS...: the program in the
# background, stopped with SIGTERM when the connection closes (its standard input ends) or the
# shell is signalled, and the program's exit status as the command's.
remote_command() {  # PROGRAM ARGS...
  # (A background command's standard input is /dev/null: the connection's goes to fd 3 first.)
  printf 'exec 3<&0; '
  printf '%q ' "$@"
  # shellcheck disable=SC2016  # expanded by the remote shell
  printf '%s' '</dev/null 3<&- & c=$!; trap "kill -TERM $c 2>/dev/null" HUP INT TERM; ' \
    '{ cat <&3; kill -TERM $c; } >/dev/null 2>&1 & exec 3<&-; ' \
    'while :; do wait $c; s=$?; kill -0 $c 2>/dev/null || exit $s; done'
}

# ssh's standard input for every member: a FIFO that only the launcher holds open for writing
# (fd 7), so that a member's remote side sees its input end, and stops, when the launcher dies,
# even by SIGKILL. Nothing is ever written to it.
open_ssh_stdin() {
  ssh_stdin="$run_dir/.ssh-stdin"
  rm -f "$ssh_stdin"
  mkfifo "$ssh_stdin"
  exec 7<>"$ssh_stdin"
}
close_ssh_stdin() {
  exec 7>&- 2>/dev/null || true
  [[ -n ${ssh_stdin:-} ]] && rm -f "$ssh_stdin"
  return 0
}

# Runs PROGRAM ARGS... on entry E's host in place of the calling (sub)shell, which the launcher
# started in the background: its pid is then the member's, or the member's ssh client's.
on_host() {  # E PROGRAM ARGS...
  local e=$1
  shift
  if ((e_local[e])); then exec "$@" 7>&-; fi
  exec "${ssh[@]}" "${e_host[e]}" "$(remote_command "$@")" < "$ssh_stdin" 7>&-
}

host_bin() { echo "${e_bin[$1]:-$bin}"; }      # E: where entry E's binaries are
host_data() { echo "${e_data[$1]:-$data_dir}"; } # E: where entry E's data is, unless served
# E: whether entry E's trainers take their data from the scheduler (data=scheduler, or no data=
# and the launcher's --data-from scheduler).
host_data_served() {
  [[ ${e_data[$1]} == scheduler || (-z ${e_data[$1]} && $data_from == scheduler) ]]
}

# After check_job: exits 2, naming the first line of the hostfile FILE concerned, when a trainer
# host is to take its data from the scheduler and the job does not serve it.
check_served_data() {  # FILE
  local e
  for ((e = 0; e < ${#e_host[@]}; e++)); do
    if [[ ${e_role[e]} != trainer ]] || ! host_data_served "$e"; then continue; fi
    if [[ -n ${e_data[e]} ]]; then
      need_served_data "$1:${e_line[e]}: data=scheduler (${e_host[e]})"
    else
      need_served_data "--data-from scheduler, for $1:${e_line[e]} (${e_host[e]}, no data=),"
    fi
  done
}

# The shell test that a trainer reading its data under DIR has it: the files of the job's data
# section (relative ones under DIR), or else the built-in Fashion-MNIST.
data_files_check() {  # DIR
  local dir=$1 file path
  local -a files
  mapfile -t files < <(job_data_files)
  if ((${#files[@]} == 0)); then
    printf '; test -r %q || { echo %q; exit 1; }' "$dir/train-images-idx3-ubyte.gz" \
      "no Fashion-MNIST in $dir (data= or --data-dir)"
    return
  fi
  for file in "${files[@]}"; do
    if [[ $file == /* ]]; then path=$file; else path=$dir/$file; fi
    printf '; test -r %q || { echo %q; exit 1; }' "$path" \
      "no $path, which the job's data section names (data= or --data-dir)"
  done
}

# Before anything starts: every host answers over ssh and has what its role needs.
check_hosts() {
  local e program need out
  for ((e = 0; e < ${#e_host[@]}; e++)); do
    program="$(host_bin "$e")/hetps-${e_role[e]}"
    need="test -x $(printf %q "$program") || { echo 'no executable $program'; exit 1; }"
    if [[ ${e_role[e]} == trainer ]] && ! host_data_served "$e"; then
      need+=$(data_files_check "$(host_data "$e")")
    fi
    if ((e_local[e])); then
      out=$(bash -c "$need" 2>&1) || { echo "$tool: ${e_host[e]}: $out" >&2; exit 1; }
    else
      out=$("${ssh[@]}" -n "${e_host[e]}" "$need" 2>&1) ||
        { echo "$tool: ${e_host[e]} (over ssh): ${out:-ssh failed}" >&2; exit 1; }
    fi
  done
}

# --secure: each remote host gets every public key and the secret keys of its own members only,
# in a directory of its own (removed at the end); local members use the run directory's keys.
remote_keys_dir() { echo "/tmp/hetps-keys-$(basename "$run_dir")-${e_host[$1]//[^A-Za-z0-9_.-]/_}"; }
keys_shipped=()  # one entry per host that got keys
# Copies the keys to every remote host at once: each gets every public key and the secret keys
# of the members named in the arrays server_entry and trainer_entry that run there.
ship_keys() {
  ((secure)) || return 0
  local e f i dir files shipped=" "
  for ((e = 0; e < ${#e_host[@]}; e++)); do
    ((!e_local[e])) || continue
    [[ $shipped == *" ${e_host[e]} "* ]] && continue
    shipped+="${e_host[e]} "
    # shellcheck disable=SC2207
    files=($(cd "$keys" && ls ./*.pub))
    for ((i = 0; i < ${#server_entry[@]}; i++)); do
      [[ ${e_host[server_entry[i]]} == "${e_host[e]}" ]] && files+=("server-$i.key")
    done
    for ((i = 0; i < ${#trainer_entry[@]}; i++)); do
      [[ ${e_host[trainer_entry[i]]} == "${e_host[e]}" ]] && files+=("trainer-$i.key")
    done
    dir=$(remote_keys_dir "$e")
    tar -C "$keys" -cf - "${files[@]}" |
      "${ssh[@]}" "${e_host[e]}" "umask 077 && mkdir -p $(printf %q "$dir") && tar -C $(printf %q "$dir") -xf -" ||
      { echo "$tool: could not copy the keys to ${e_host[e]}" >&2; exit 1; }
    keys_shipped+=("$e")
  done
}
remove_shipped_keys() {
  local e
  for e in ${keys_shipped[@]+"${keys_shipped[@]}"}; do
    "${ssh[@]}" -n "${e_host[e]}" "rm -rf $(printf %q "$(remote_keys_dir "$e")")" 2>/dev/null || true
  done
  keys_shipped=()
}
member_curve_flags() {  # E NAME: the CURVE flags of member NAME on entry E (none without --secure)
  ((secure)) || return 0
  if ((e_local[$1])); then echo "--curve-keys $keys --key-name $2"; else echo "--curve-keys $(remote_keys_dir "$1") --key-name $2"; fi
}
