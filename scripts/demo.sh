#!/usr/bin/env bash
# The bundled example, end to end: trace a 2-D halo exchange on a periodic 4x4 grid (16 ranks,
# OpenMPI) with mpiskel's tracer, build its skeleton, run the skeleton, and print the predicted
# application time beside the one recorded.
set -euo pipefail
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cargo build --release -q
make -s -C fixtures/programs MPI=openmpi OUT="$PWD/target/fixture-programs/openmpi"
mkdir -p target/demo
trace=target/demo/halo.trace
skel=target/demo/halo.skel
echo "== 1. trace the application (halo 4x4, periodic, 200 iterations, 64 KiB messages)"
./target/release/mpiskel trace --force -o "$trace" -- \
  mpirun.openmpi --oversubscribe -np 16 target/fixture-programs/openmpi/halo 4x4 1 200 65536
./target/release/mpiskel inspect "$trace" | head -12
echo "== 2. build its skeleton"
./target/release/mpiskel build "$trace" -o "$skel" --force
echo "== 3. run the skeleton (OpenMPI) and read its prediction"
./target/release/mpiskel run "$skel" --mpi openmpi
