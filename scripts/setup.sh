#!/usr/bin/env bash
# Installs the Debian packages tpusim needs, only those missing. Safe to run twice.
set -euo pipefail
pkgs=(cmake g++ clang libclang-rt-14-dev pkg-config libsystemc-dev libboost-program-options-dev
      nlohmann-json3-dev libgtest-dev libgmock-dev libbenchmark-dev python3)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
