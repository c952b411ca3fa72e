#!/usr/bin/env bash
# Builds tpusim and runs the main job: the TensorFlow TPU guide's MNIST CNN training step
# (examples/models/mnist-cnn.hlo, Adam, global batch 200) compiled for and simulated on the
# whole v3-8 board, profiled like the TPU profiler; then the double-buffered 1024^3 bf16
# matmul kernel on one TensorCore. Traces and reports go to out/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
mkdir -p out
./build/cli/tpusim run examples/models/mnist-cnn.hlo --timing --steps 2 \
  --trace out/mnist-cnn.trace.json --summary out/mnist-cnn.summary.json \
  --html out/mnist-cnn.html
./build/cli/tpusim exec examples/kernels/matmul_db.s --config v3-8 \
  --json out/matmul_db.json --trace out/matmul_db.trace.json
echo "traces: out/mnist-cnn.trace.json, out/matmul_db.trace.json (open in https://ui.perfetto.dev)"
echo "report: out/mnist-cnn.html, out/mnist-cnn.summary.json"
