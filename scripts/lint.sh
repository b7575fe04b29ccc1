#!/usr/bin/env bash
# Checks the C++ sources with clang-format (.clang-format) and clang-tidy (.clang-tidy), using
# the compile commands of a build directory; fails on any finding.
#   scripts/lint.sh [--base REF | --all] [--build-dir DIR] [--jobs J]
# By default only the lines changed since a base commit are checked (and the uncommitted
# changes): a finding in a line nobody touched is not the change's to fix, and the tree has not
# been formatted in one go. The base is REF, or else the merge base with main (or origin/main),
# or, on main itself, the first parent of HEAD (what the last commit or merge brought in). Without
# any of these (e.g. a clone of one commit) there is nothing to compare and nothing is checked.
# --all          every line of every file (to count what the tree holds; not used by CI)
# --build-dir    the build whose compile_commands.json clang-tidy reads (default: build); it
#                must have been configured, and its generated wire header is built if missing
# --jobs J       clang-tidy processes at once (default: the number of cores)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir="$root/build"
base=""
all=0
jobs=$(nproc 2>/dev/null || echo 2)
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
while (($#)); do
  case $1 in
    --base) [[ $# -ge 2 ]] || { echo "lint.sh: --base needs a commit" >&2; exit 2; }; base=$2; shift 2 ;;
    --all) all=1; shift ;;
    --build-dir) [[ $# -ge 2 ]] || { echo "lint.sh: --build-dir needs a value" >&2; exit 2; }; build_dir=$2; shift 2 ;;
    --jobs) [[ $# -ge 2 && $2 =~ ^[1-9][0-9]*$ ]] || { echo "lint.sh: --jobs needs a positive whole number" >&2; exit 2; }
            jobs=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "lint.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ -n $base && $all == 1 ]] && { echo "lint.sh: --base and --all exclude each other" >&2; exit 2; }
for tool in clang-format clang-tidy git; do
  command -v "$tool" >/dev/null || {
    echo "lint.sh: $tool is missing; run scripts/install-deps.sh" >&2; exit 1; }
done
cd "$root"
build_dir=$(cd "$build_dir" 2>/dev/null && pwd) || {
  echo "lint.sh: no build directory $build_dir; configure one first (scripts/build.sh)" >&2; exit 1; }
database="$build_dir/compile_commands.json"
[[ -f $database ]] || {
  echo "lint.sh: $database is missing; configure $build_dir with scripts/build.sh" >&2; exit 1; }

# The files and, unless --all, the changed line ranges of each ("first:last", one per line).
declare -A ranges=()
if ((all)); then
  mapfile -t files < <(git ls-files -- '*.cc' '*.h')
else
  if [[ -z $base ]]; then
    for main in main origin/main; do
      git rev-parse -q --verify "$main^{commit}" >/dev/null || continue
      base=$(git merge-base HEAD "$main")
      break
    done
    if [[ -z $base || $base == $(git rev-parse HEAD) ]]; then
      base=$(git rev-parse -q --verify 'HEAD^1^{commit}' || true)
    fi
    if [[ -z $base ]]; then
      echo "lint.sh: no base commit to compare with (no main, and HEAD has no parent here); nothing checked"
      exit 0
    fi
  fi
  git rev-parse -q --verify "$base^{commit}" >/dev/null || { echo "lint.sh: '$base' is not a commit" >&2; exit 2; }
  mapfile -t files < <(git diff --name-only --diff-filter=ACMR "$base" -- '*.cc' '*.h')
  for file in "${files[@]}"; do
    # Hunk headers "@@ -a,b +c,d @@": d lines from c are new (d = 0: only a deletion).
    ranges[$file]=$(git diff -U0 "$base" -- "$file" |
      sed -n 's/^@@ -[0-9,]* +\([0-9]*\)\(,\([0-9]*\)\)\{0,1\} @@.*/\1 \3/p' |
      awk '{ n = ($2 == "") ? 1 : $2; if (n > 0) print $1 ":" ($1 + n - 1) }')
  done
  echo "lint.sh: checking the lines changed since $(git rev-parse --short "$base") in ${#files[@]} C++ files"
fi
if ((${#files[@]} == 0)); then
  echo "lint.sh: no C++ files to check"
  exit 0
fi

format_findings=0
for file in "${files[@]}"; do
  line_flags=()
  if ((!all)); then
    [[ -n ${ranges[$file]} ]] || continue
    while read -r range; do line_flags+=("--lines=$range"); done <<<"${ranges[$file]}"
  fi
  if ! clang-format --dry-run -Werror "${line_flags[@]}" "$file" 2>"$build_dir/lint-format.txt"; then
    # One finding per line to reformat (clang-format reports each column it would change).
    n=$(grep -E ': error: code should be clang-formatted' "$build_dir/lint-format.txt" | cut -d: -f1,2 | sort -u | wc -l)
    format_findings=$((format_findings + (n > 0 ? n : 1)))
    cat "$build_dir/lint-format.txt"
  fi
done
rm -f "$build_dir/lint-format.txt"

# clang-tidy needs a compile command: a source file is checked with its own, a header through the
# .cc beside it or else the first source that includes it.
mapfile -t sources < <(python3 -c '
import json, sys
for entry in json.load(open(sys.argv[1])):
    print(entry["file"])' "$database" | sed "s|^$root/||" | grep -vE '^(/|build)' | sort -u)
declare -A in_database=()
for s in "${sources[@]}"; do in_database[$s]=1; done
declare -A to_tidy=()
for file in "${files[@]}"; do
  if [[ $file == *.cc ]]; then
    [[ -n ${in_database[$file]:-} ]] && to_tidy[$file]=1
    continue
  fi
  sibling="${file%.h}.cc"
  if [[ -n ${in_database[$sibling]:-} ]]; then
    to_tidy[$sibling]=1
  else
    includer=$(grep -lF "#include \"$file\"" "${sources[@]}" 2>/dev/null | head -n 1 || true)
    [[ -n $includer ]] && to_tidy[$includer]=1
  fi
done
tidy_flags=(-p "$build_dir" --quiet)
if ((!all)); then
  # Only findings on the changed lines count, in whichever file (source or header) they are.
  tidy_flags+=(--header-filter='.*' --line-filter="$(
    for file in "${files[@]}"; do
      [[ -n ${ranges[$file]} ]] || continue
      printf '{"name":"%s","lines":[%s]},' "$file" \
        "$(tr ':' ',' <<<"${ranges[$file]}" | sed 's/.*/[&]/' | paste -sd, -)"
    done | sed 's/,$//; s/^/[/; s/$/]/')")
fi
tidy_findings=0
if ((${#to_tidy[@]})); then
  # The wire types are generated at build time; clang-tidy needs them.
  cmake --build "$build_dir" --target hetps_schemas_gen >/dev/null
  echo "lint.sh: clang-tidy on ${#to_tidy[@]} sources with $jobs jobs"
  log="$build_dir/lint-tidy.txt"
  printf '%s\n' "${!to_tidy[@]}" | sort |
    xargs -P "$jobs" -I{} sh -c 'clang-tidy "$@" {} 2>&1 || true' _ "${tidy_flags[@]}" >"$log"
  # A finding in a header is reported once per source that includes it: count each once.
  grep -E '^[^ ].*:[0-9]+:[0-9]+: (warning|error): ' "$log" | sort -u >"$log.findings" || true
  tidy_findings=$(wc -l <"$log.findings")
  if ((tidy_findings > 0)); then
    sed "s|^$root/||" "$log.findings"
    echo "lint.sh: clang-tidy's whole report, with the code of each finding, is in $log"
  fi
  rm -f "$log.findings"
fi
if ((format_findings + tidy_findings > 0)); then
  echo "lint.sh: $format_findings clang-format and $tidy_findings clang-tidy findings" >&2
  exit 1
fi
echo "lint.sh: no findings"
