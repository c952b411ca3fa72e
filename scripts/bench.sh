#!/usr/bin/env bash
# Builds (Release, with the benchmarks) and runs the microbenchmark suite through
# `tpusim bench`, one benchmark per process (SystemC elaborates once per process).
#   scripts/bench.sh [--benchmark_filter=REGEX | --filter REGEX] [--json FILE] [--list]
# --json FILE writes every result into FILE as one Google Benchmark JSON document.
set -euo pipefail
cd "$(dirname "$0")/.."
args=()
while (($#)); do
  case "$1" in
    --benchmark_filter=*) args+=(--filter "${1#--benchmark_filter=}"); shift ;;
    --filter | --json) args+=("$1" "$2"); shift 2 ;;
    --list) args+=(--list); shift ;;
    *) echo "bench.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
bash scripts/build.sh -DTPUSIM_BENCH=ON >/dev/null
exec build/cli/tpusim bench "${args[@]}"
