#!/usr/bin/env bash
# Builds the libFuzzer configuration (clang) and runs every *_fuzz executable in
# build-fuzz for N seconds each (default 20). Fails on the first crash.
# Usage: scripts/fuzz.sh [seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-20}"
CXX="${CXX:-clang++}" cmake -S . -B build-fuzz -DTPUSIM_FUZZ=ON -DTPUSIM_BENCH=OFF >/dev/null
# Build only the fuzz targets (other layers need not build under clang).
targets=$(cmake --build build-fuzz --target help | sed -n 's/^\.\.\. \([A-Za-z0-9_]*_fuzz\)$/\1/p')
if [[ -z "$targets" ]]; then
  echo "no *_fuzz targets found" >&2
  exit 1
fi
# shellcheck disable=SC2086
cmake --build build-fuzz -j2 --target $targets
mkdir -p build-fuzz/corpus
status=0
while IFS= read -r exe; do
  name=$(basename "$exe")
  corpus="build-fuzz/corpus/$name"
  mkdir -p "$corpus"
  echo "== $name (${secs}s)"
  if ! "$exe" -max_total_time="$secs" -max_len=4096 -print_final_stats=1 \
       -artifact_prefix="build-fuzz/$name-" "$corpus" 2>"build-fuzz/$name.log"; then
    tail -50 "build-fuzz/$name.log" >&2
    echo "FAIL: $name crashed; see build-fuzz/$name.log and build-fuzz/$name-crash-*" >&2
    status=1
  else
    grep -E "stat::number_of_executed_units|Done" "build-fuzz/$name.log" || true
  fi
done < <(find build-fuzz -type f -perm -u+x -name '*_fuzz' | sort)
exit $status
