#!/usr/bin/env bash
# Runs the Google Benchmark suite, one benchmark per process (SystemC elaborates once per
# process). Extra args (e.g. --benchmark_filter=Matmul) pass through; --json FILE also
# writes each benchmark's JSON into FILE as one array.
set -euo pipefail
cd "$(dirname "$0")/.."
json=""
args=()
while (($#)); do
  case "$1" in
    --json) json="$2"; shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
bash scripts/build.sh -DTPUSIM_BENCH=ON >/dev/null
bin=build/bench/tpusim_bench
tmp=$(mktemp -d)
i=0
for name in $("$bin" --benchmark_list_tests "${args[@]}"); do
  "$bin" --benchmark_filter="^${name}\$" --benchmark_out="$tmp/$i.json" \
    --benchmark_out_format=json
  i=$((i + 1))
done
if [ -n "$json" ]; then
  python3 -c 'import json,sys; print(json.dumps([json.load(open(f)) for f in sys.argv[1:]], indent=1))' \
    "$tmp"/*.json > "$json.tmp" && mv "$json.tmp" "$json"
fi
rm -rf "$tmp"
