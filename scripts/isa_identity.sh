#!/usr/bin/env bash
# Checks that two tpusim binaries emit byte-identical ISA programs (core 0) for every
# shipped example, every JAX module of ../shared/jax-hlo, every shipped model in several
# configurations and COUNT random difftest modules: the check a refactor of the compiler
# must pass (docs/testing.md).
# A refactor that moves kernel sources passes a sed script as PATH_MAP: it maps the old
# source paths the programs' comments name ("# matmul ... (compiler/lowering/...cc)") to
# the new ones before the comparison; nothing else may differ.
# usage: scripts/isa_identity.sh OLD_TPUSIM NEW_TPUSIM [COUNT] [PATH_MAP]
set -euo pipefail
old=$1 new=$2 count=${3:-200} path_map=${4:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/in"
cd "$(dirname "$0")/.."
for f in examples/*/*.hlo ../shared/jax-hlo/*.hlo; do
  [ -f "$f" ] && cp "$f" "$work/in/$(echo "$f" | tr '/' '_')"
done
for m in $("$new" model --list | awk 'NR > 1 {print $1}'); do
  "$new" model "$m" -o "$work/in/model_${m}_fwd.hlo" >/dev/null 2>&1
  "$new" model "$m" --train -o "$work/in/model_${m}_train.hlo" >/dev/null 2>&1
  "$new" model "$m" --train --dtype bf16 -o "$work/in/model_${m}_train_bf16.hlo" >/dev/null 2>&1
  "$new" model "$m" --train --replicas 1 -o "$work/in/model_${m}_train_r1.hlo" >/dev/null 2>&1
done
python3 scripts/difftest.py --seed 1 --count "$count" --write-modules "$work/in" > /dev/null
same=0 differ=0 refused=0
for f in "$work"/in/*.hlo; do
  a=$("$old" compile "$f" --emit isa -o "$work/old.s" 2>&1 >/dev/null; echo "rc=$?")
  b=$("$new" compile "$f" --emit isa -o "$work/new.s" 2>&1 >/dev/null; echo "rc=$?")
  if [ "$a" != "$b" ]; then
    echo "DIFFERENT outcome: $(basename "$f"): old '$a' new '$b'"; differ=$((differ + 1))
  elif [ "${a##*rc=}" != 0 ]; then
    refused=$((refused + 1))
  elif { [ -z "$path_map" ] || sed -i -f "$path_map" "$work/old.s"; } &&
       cmp -s "$work/old.s" "$work/new.s"; then
    same=$((same + 1))
  else
    echo "DIFFERENT program: $(basename "$f")"; differ=$((differ + 1))
  fi
  rm -f "$work/old.s" "$work/new.s"
done
echo "isa identity: $same identical, $refused refused by both (same error), $differ different"
[ "$differ" = 0 ]
