#!/usr/bin/env bash
# Checks the layering rules the folders promise (README, "Tour of the folders"):
# - no pass and no collective includes the code generator (compiler/lowering/);
# - nothing outside cli/ includes cli/ (cli/*.cc is compiled only into the tpusim binary);
# - the compiler layers below the code generator include neither it nor the driver;
# - no folder of compiler/ holds more than 32 files.
# Prints each violation; exits 1 if there is any.
set -euo pipefail
cd "$(dirname "$0")/.."
bad=0
violation() { echo "layout: $*"; bad=1; }
while IFS= read -r line; do violation "$line"; done < <(
  grep -rn '#include "compiler/lowering/' compiler/passes compiler/collectives compiler/spmd \
    compiler/hlo compiler/eval compiler/assembly compiler/target || true)
while IFS= read -r line; do violation "$line"; done < <(
  grep -rn '#include "cli/' --include=*.cc --include=*.h . | grep -v '^\./cli/' |
    grep -v '^\./build' || true)
while IFS= read -r line; do violation "$line"; done < <(
  grep -rn '#include "driver/' compiler sim isa profiler traces || true)
for d in $(find compiler -type d); do
  n=$(find "$d" -maxdepth 1 -type f | wc -l)
  [ "$n" -le 32 ] || violation "$d holds $n files (split it by what its parts are)"
done
[ "$bad" = 0 ] && echo "layout: ok"
exit "$bad"
