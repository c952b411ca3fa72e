#!/usr/bin/env bash
# Builds tpusim and runs the main job on shipped examples: the double-buffered 1024^3 bf16
# matmul kernel on one v3 TensorCore, then an HLO dot compiled for and simulated on the
# whole v3-8 board with its profile; traces and reports go to out/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
mkdir -p out
./build/cli/tpusim exec examples/kernels/matmul_db.s --config v3-8 \
  --json out/matmul_db.json --trace out/matmul_db.trace.json
# HLO in: compile, simulate the 8-core board for 10 training steps, profile.
./build/cli/tpusim run examples/hlo/dot_bf16.hlo --steps 10 --steps-per-execution 10 \
  --trace out/dot.trace.json --summary out/dot.summary.json --html out/dot.html
echo "traces: out/matmul_db.trace.json, out/dot.trace.json (open in https://ui.perfetto.dev)"
echo "report: out/dot.html, out/dot.summary.json"
