#!/usr/bin/env bash
# The bundled example: trace a 2-D halo exchange on a periodic 4x4 grid (16 ranks, OpenMPI)
# with mpiskel's tracer, then show what was recorded.
set -euo pipefail
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cargo build --release -q
make -s -C fixtures/programs MPI=openmpi OUT="$PWD/target/fixture-programs/openmpi"
out=target/demo/halo.trace
mkdir -p target/demo
./target/release/mpiskel trace --force -o "$out" -- \
  mpirun.openmpi --oversubscribe -np 16 target/fixture-programs/openmpi/halo 4x4 1 20 65536
./target/release/mpiskel inspect "$out"
