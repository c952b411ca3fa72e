#!/usr/bin/env bash
# Builds the libFuzzer configuration (clang) and runs every *_fuzz executable in
# build-fuzz for N seconds each (default 20), or for R runs each with --runs R. Each target
# starts from its corpus kept in the repo (test/fuzz/corpus/NAME) and the shipped examples
# that suit it; what it finds goes to build-fuzz/corpus/NAME. Fails on the first crash.
# --merge then minimizes the found inputs into test/fuzz/corpus/NAME (to commit).
# Usage: scripts/fuzz.sh [seconds] [--runs R] [--merge]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=20 runs="" merge=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --merge) merge=1; shift ;;
    *) secs="$1"; shift ;;
  esac
done
CXX="${CXX:-clang++}" cmake -S . -B build-fuzz -DTPUSIM_FUZZ=ON -DTPUSIM_BENCH=OFF >/dev/null
# Build only the fuzz targets (other layers need not build under clang).
targets=$(cmake --build build-fuzz --target help | sed -n 's/^\.\.\. \([A-Za-z0-9_]*_fuzz\)$/\1/p')
if [[ -z "$targets" ]]; then
  echo "no *_fuzz targets found" >&2
  exit 1
fi
# shellcheck disable=SC2086
cmake --build build-fuzz -j2 --target $targets
# Seeds beside each target's own corpus: HLO for the parser and the compiler, assembly for
# the assembler.
seeds_for() {
  case "$1" in
    hlo_parser_fuzz | pipeline_fuzz) echo "examples/hlo examples/jax" ;;
    isa_assembler_fuzz) echo "examples/kernels" ;;
    *) echo "" ;;
  esac
}
status=0
while IFS= read -r exe; do
  name=$(basename "$exe")
  found="build-fuzz/corpus/$name" kept="test/fuzz/corpus/$name"
  mkdir -p "$found" "$kept"
  limit=(-max_total_time="$secs")
  [[ -n "$runs" ]] && limit=(-runs="$runs")
  echo "== $name (${runs:+$runs runs}${runs:-${secs}s})"
  # shellcheck disable=SC2046
  if ! "$exe" "${limit[@]}" -max_len=4096 -timeout=30 -print_final_stats=1 \
       -artifact_prefix="build-fuzz/$name-" "$found" "$kept" $(seeds_for "$name") \
       2>"build-fuzz/$name.log"; then
    tail -50 "build-fuzz/$name.log" >&2
    echo "FAIL: $name crashed; see build-fuzz/$name.log and build-fuzz/$name-crash-*" >&2
    status=1
  else
    grep -E "stat::number_of_executed_units|Done" "build-fuzz/$name.log" || true
    if [[ "$merge" == 1 ]]; then
      "$exe" -merge=1 -max_len=4096 "$kept" "$found" 2>>"build-fuzz/$name.log"
      echo "   $(ls "$kept" | wc -l) inputs kept in $kept"
    fi
  fi
done < <(find build-fuzz -type f -perm -u+x -name '*_fuzz' | sort)
exit $status
