#!/usr/bin/env bash
# Builds tpusim and runs every test (unit, functional, golden CLI).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
# The HTML report test renders the page in headless Chromium; it skips when Chromium
# cannot be installed.
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null 2>&1 ||
    echo "test: chromium not installed; the HTML rendering test will skip"
fi
cd build && ctest --output-on-failure -j2
