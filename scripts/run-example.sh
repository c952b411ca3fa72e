#!/usr/bin/env bash
# Builds tpusim and runs the main job on a shipped example: the double-buffered
# 1024^3 bf16 matmul kernel on one v3 TensorCore, writing a Chrome trace to out/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
mkdir -p out
./build/cli/tpusim exec examples/kernels/matmul_db.s --config v3-8 \
  --json out/matmul_db.json --trace out/matmul_db.trace.json
echo "trace: out/matmul_db.trace.json (open in https://ui.perfetto.dev or chrome://tracing)"
