//! Ping-pong times between two ranks of this machine under Open MPI or MPICH, for
//! `mpiskel simulate --calibrate` (the fit is `mpiskel_simulate::calibrate`).

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::error::{Context, Result};
use crate::harness;
use crate::run::Mpi;

/// The message sizes measured, bytes.
pub const SIZES: [u64; 12] =
    [0, 8, 64, 512, 1024, 4096, 16384, 65536, 131072, 262144, 1 << 20, 4 << 20];

/// The ping-pong program: for each size, after a warm-up, `reps` round trips between ranks 0
/// and 1; rank 0 prints `pingpong BYTES ONE_WAY_SECONDS` (the median of five timed batches).
const PINGPONG_C: &str = r#"#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    static const long sizes[] = {0, 8, 64, 512, 1024, 4096, 16384, 65536, 131072, 262144, 1L << 20, 4L << 20};
    int rank, n;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    char *buf = calloc(4L << 20, 1);
    for (unsigned k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        int bytes = (int)sizes[k];
        int reps = bytes <= 65536 ? 400 : 40;
        double batch[5];
        for (int b = -1; b < 5; b++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (int i = 0; i < reps; i++) {
                if (rank == 0) {
                    MPI_Send(buf, bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
                    MPI_Recv(buf, bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else if (rank == 1) {
                    MPI_Recv(buf, bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(buf, bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
                }
            }
            if (b >= 0)
                batch[b] = (MPI_Wtime() - t0) / (2.0 * reps);
        }
        qsort(batch, 5, sizeof batch[0], cmp);
        if (rank == 0)
            printf("pingpong %d %.9e\n", bytes, batch[2]);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
"#;

/// Compiles and runs the ping-pong under `mpi` in `dir`; returns (bytes, one-way seconds).
pub fn measure(mpi: Mpi, dir: &Path) -> Result<Vec<(u64, f64)>> {
    let (cc, launcher) = match mpi {
        Mpi::Openmpi => ("mpicc.openmpi", "mpirun.openmpi"),
        Mpi::Mpich => ("mpicc.mpich", "mpirun.mpich"),
        Mpi::Smpi => {
            crate::error::bail!("calibration measures this machine: give openmpi or mpich")
        }
    };
    let src = dir.join("pingpong.c");
    std::fs::write(&src, PINGPONG_C).with_context(|| format!("writing {}", src.display()))?;
    let bin = dir.join(format!("pingpong-{}", mpi.name()));
    let mut cmd = Command::new(cc);
    cmd.arg("-O2").arg("-o").arg(&bin).arg(&src);
    let out = harness::output_of_child(cmd, cc)
        .with_context(|| format!("running {cc} (is {} installed?)", mpi.name()))?;
    if !out.status.success() {
        crate::error::bail!(
            "{cc} failed on {}:\n{}",
            src.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let mut run = Command::new(launcher);
    if mpi == Mpi::Openmpi {
        run.args(["--oversubscribe", "--allow-run-as-root"]);
    }
    run.args(["-np", "2"]).arg(&bin);
    let out = harness::run_group(run, Duration::from_secs(300), launcher)?;
    if !out.status.success() {
        crate::error::bail!("{launcher} -np 2 {} failed:\n{}", bin.display(), out.stderr);
    }
    let samples: Vec<(u64, f64)> = out
        .stdout
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            (w.next()? == "pingpong").then_some(())?;
            Some((w.next()?.parse().ok()?, w.next()?.parse().ok()?))
        })
        .collect();
    if samples.len() != SIZES.len() {
        crate::error::bail!(
            "{launcher} -np 2 {}: {} of {} sizes measured:\n{}",
            bin.display(),
            samples.len(),
            SIZES.len(),
            out.stdout
        );
    }
    Ok(samples)
}
