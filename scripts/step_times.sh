#!/usr/bin/env bash
# Prints the simulated step time (ms) of every shipped example module and every model's
# training step, one "name<TAB>ms" line each: the before/after tables of docs/fidelity.md.
# Usage: scripts/step_times.sh [tpusim binary]   (default build/cli/tpusim)
set -euo pipefail
cd "$(dirname "$0")/.."
tpusim=${1:-build/cli/tpusim}
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
step_ms() { "$tpusim" run "$1" --timing | sed -n 's/^step time: \([0-9.]*\) ms.*/\1/p'; }
for f in examples/hlo/*.hlo examples/jax/*.hlo; do
  printf '%s\t%s\n' "$(basename "$f")" "$(step_ms "$f")"
done
for model in mnist-cnn mlp transformer-layer bert-base resnet50; do
  for dtype in f32 bf16; do
    "$tpusim" model "$model" --train --dtype "$dtype" -o "$tmp/m.hlo" >/dev/null
    printf 'tpusim model %s --train --dtype %s\t%s\n' "$model" "$dtype" "$(step_ms "$tmp/m.hlo")"
  done
done
"$tpusim" model resnet50 --batch 1024 --train --dtype bf16 --optimizer sgd --replicas 1 \
  -o "$tmp/m.hlo" >/dev/null
printf 'tpusim model resnet50 --batch 1024 --train --dtype bf16 --optimizer sgd --replicas 1\t%s\n' \
  "$(step_ms "$tmp/m.hlo")"
