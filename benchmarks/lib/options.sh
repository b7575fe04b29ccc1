# The options every benchmark script takes (--out, --build-dir, --no-build, --help) and the
# start they share: the output directory made, the paths made absolute, the binaries built.
# Sourced after setting `tool` (the script's name, for messages) and `root`.
out="$root/benchmarks/results"
build_dir="$root/build"
build=1
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
need_value() { [[ $# -ge 2 && -n $2 ]] || { echo "$tool: $1 needs a value" >&2; exit 2; }; }

# Takes one shared option from the front of "$@": returns 0 and sets `taken` to the words it
# used, or returns 1 for an option of the script's own.
take_benchmark_flag() {
  taken=2
  case $1 in
    --out) need_value "$@"; out=$2 ;;
    --build-dir) need_value "$@"; build_dir=$2 ;;
    --no-build) build=0; taken=1 ;;
    -h|--help) usage; exit 0 ;;
    *) return 1 ;;
  esac
}

# Makes $out (and its subdirectory $1, if given), makes $out and $build_dir absolute, moves to
# the repository's root, builds the binaries unless --no-build, and sets `bin`.
prepare_benchmark() {
  mkdir -p "$out/${1:-}"
  out=$(cd "$out" && pwd)
  [[ $build_dir = /* ]] || build_dir="$PWD/$build_dir"
  cd "$root"
  if ((build)); then scripts/build.sh --build-dir "$build_dir" --binaries-only; fi
  bin="$build_dir/bin"
}
