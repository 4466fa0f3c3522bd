#!/usr/bin/env bash
# Installs the Debian packages mpiskel's build, tests and demo need, when they are missing
# (libclang-dev: the Rust skeletons' mpi crate generates its bindings to mpi.h with it;
# iproute2: network namespaces and tc for `mpiskel validate`; procps: pgrep in its tests;
# time: /usr/bin/time for the benchmarks' peak memory; python3: `make lint`'s check of module
# imports; libotf2-trace-dev: OTF2 traces are read
# through libotf2, otf2-tools: otf2-print, the tests' oracle; chromium: the tests open the
# pages of `mpiskel report` in it, headless).
# Idempotent; uses sudo when not run as root.
set -euo pipefail
packages=(make python3 gcc gfortran openmpi-bin libopenmpi-dev mpich libmpich-dev libsimgrid-dev lammps libclang-dev pkg-config iproute2 procps time libotf2-trace-dev otf2-tools chromium)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
command -v cargo >/dev/null || { echo "cargo not found: install Rust from https://rustup.rs" >&2; exit 1; }
