#!/usr/bin/env bash
# Plots the matmul MXU % against the batch per core from a `tpusim bench --json` file:
#   scripts/plot_benchmarks.sh BENCH.json [OUT.png]   (default docs/img/mxu_vs_batch_per_core.png)
# Needs python3 and gnuplot (Debian: gnuplot-nox).
set -euo pipefail
json="$1"
png="${2:-docs/img/mxu_vs_batch_per_core.png}"
command -v gnuplot >/dev/null || { echo "plot_benchmarks.sh: needs gnuplot (apt-get install gnuplot-nox)" >&2; exit 1; }
data=$(mktemp)
trap 'rm -f "$data"' EXIT
# First line: the board; then rows "batch mxu_pct mxu_busy_pct" of BM_MatmulBatchPerCore.
python3 - "$json" > "$data" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
rows = sorted((int(b["name"].split("/")[1]), b["mxu_pct"], b["mxu_busy_pct"])
              for b in doc["benchmarks"] if b["name"].startswith("BM_MatmulBatchPerCore/"))
if not rows:
    sys.exit("plot_benchmarks.sh: no BM_MatmulBatchPerCore results in " + sys.argv[1])
print("#", doc["context"].get("tpusim_config", "v3-8"))
for row in rows:
    print(*row)
PY
board=$(head -1 "$data" | cut -c3-)
mkdir -p "$(dirname "$png")"
gnuplot <<GP
set terminal pngcairo size 900,540 font "sans,11"
set output "$png"
set title "Simulated $board: matmul [cores x M, 4096] x [4096, 4096] bf16, data parallel"
set xlabel "batch per core M (rows)"
set ylabel "% of the MXUs' peak"
set logscale x 2
set xrange [0.8:1300]
set yrange [0:100]
set grid
set key left top
set arrow from 128, graph 0 to 128, graph 1 nohead dashtype 2 lc rgb "gray40"
set label "128 rows per core" at 128, graph 0.94 offset 0.5,0 tc rgb "gray30"
plot "$data" using 1:2 with linespoints lw 2 pt 7 title "MXU utilization (useful FLOPs / peak)", \
     "$data" using 1:3 with linespoints lw 1 pt 6 dashtype 3 title "MXU busy (rows streamed, incl. padding to 8)"
GP
echo "wrote $png"
