#!/usr/bin/env bash
# Install the Debian packages tessera needs, if any are missing. Safe to run again.
set -euo pipefail
pkgs=(build-essential meson ninja-build pkg-config libyaml-dev check libjansson-dev
      libsdl2-dev libpng-dev libcairo2-dev fonts-dejavu-core libprotobuf-c-dev protobuf-c-compiler zlib1g-dev libopenmpi-dev openmpi-bin
      clang libclang-rt-14-dev xvfb)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
