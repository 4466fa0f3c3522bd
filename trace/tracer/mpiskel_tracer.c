/*
 * mpiskel PMPI tracer.
 *
 * Loaded with LD_PRELOAD (or linked before the MPI library), it intercepts the MPI calls that
 * matter for performance and writes one native trace file per rank, `rank-<k>.mpt`, into the
 * directory named by MPISKEL_TRACE_DIR (default: the current directory). The format is
 * specified in trace/FORMAT.md; trace/src/native/read.rs reads it.
 *
 * Build once per MPI implementation (their ABIs differ):
 *     mpicc.openmpi -O2 -fPIC -shared -o libmpiskel-openmpi.so mpiskel_tracer.c
 *     mpicc.mpich   -O2 -fPIC -shared -o libmpiskel-mpich.so   mpiskel_tracer.c
 * `mpiskel trace` does this itself and caches the result.
 *
 * Environment:
 *     MPISKEL_TRACE_DIR     directory for the rank files (must exist)
 *     MPISKEL_INSTRUCTIONS  "1": count user-space instructions of compute gaps with
 *                           perf_event_open (recorded as absent where the kernel refuses)
 *     MPISKEL_CPU_TIME      "1": record the processor time of compute gaps (thread CPU clock,
 *                           read after gaps and calls of 20 us or more and every 20 us;
 *                           see CPU_READ_NS)
 *     MPISKEL_TIME_ONLY     "1": record MPI_Init and MPI_Finalize only (the application's time)
 *
 * Timeline: what the tracer does after a call returns (encoding its record, writing the buffer)
 * is taken out of the recorded times, so a gap is the application's own computation and the
 * trace's span is close to the untraced run's.
 *
 * Fortran: MPICH's Fortran layer calls the C MPI_* entry points, which are caught here.
 * OpenMPI's calls PMPI_* directly, so for OpenMPI this file also defines the Fortran entry
 * points (mpi_send_ …), which convert their arguments and call the C wrappers.
 *
 * Threads: calls of every thread are recorded, in one sequence per rank; in an
 * MPI_THREAD_MULTIPLE program, under a lock (see `rec_lock`).
 */
#define _GNU_SOURCE
#include <mpi.h>

#include <pthread.h>

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* One translation unit, in parts: everything but the MPI entry points stays static, so that the
 * preloaded library adds no symbol an application could collide with. */
#include "mpiskel_tracer_state.h"
#include "mpiskel_tracer_records.h"
#include "mpiskel_tracer_p2p.h"
#include "mpiskel_tracer_coll.h"

#if defined(OPEN_MPI)
#include "mpiskel_fortran_ompi.h"
#endif
