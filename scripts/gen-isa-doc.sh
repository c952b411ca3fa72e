#!/usr/bin/env bash
# Regenerates docs/isa.md from isa/opcodes.def (via IsaMarkdown()).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${BUILD_DIR:-build-isa}"
cmake -S . -B "$build" -DTPUSIM_BENCH=OFF >/dev/null
cmake --build "$build" --target isa_tests -j2
TPUSIM_UPDATE_GOLDEN=1 "$build/test/isa/isa_tests" --gtest_filter=IsaDoc.CheckedInDocMatchesTable
