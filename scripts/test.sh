#!/usr/bin/env bash
# Builds tpusim and runs every test (unit, functional, golden CLI).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
cd build && ctest --output-on-failure -j2
