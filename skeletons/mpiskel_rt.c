/*
 * mpiskel runtime: the compute kernel, its calibration and the calls that replace MPI's
 * where a skeleton needs more than one call. The phases' timing, prediction and report are in
 * mpiskel_rt_report.c; the state both share is declared in mpiskel_rt_internal.h. See
 * mpiskel_rt.h.
 */
#define _GNU_SOURCE /* clock_gettime and the thread's processor clock under any -std */
#include "mpiskel_rt_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef MPISKEL_SMPI
#include <smpi/smpi.h>
#endif

double sk_rate = 1e9; /* kernel iterations per second on this machine (unused under SMPI) */
static double sk_weight = 1.0; /* this rank's compute weight */
static double sk_scale = 1.0;  /* --compute-scale: every compute block times this */
static double sk_fixed_rate;   /* --compute-rate: the recording machine's kernel rate (work mode) */
#ifndef MPISKEL_SMPI
static volatile double sk_sink;
#endif
sk_phase *sk_phases;
int sk_nphases;
/* Per phase: what its time is multiplied by beyond its iterations (sk_phase_scale); NULL: 1. */
double *sk_scales;
/* Per phase, for the computation not run (sk_compute_less): seconds removed, the seconds
 * asked of and taken by the parts that ran, whose pace prices the removed ones, and the
 * processor seconds those parts took (see sk_cores_floor). */
double (*sk_cut)[4];
/* Per phase: seconds of computation asked (run, whole or the kept part of a cut block). */
double *sk_ran;
/* Whether the compute blocks are processor time (sk_processor_time), and the processor seconds
 * one asked second takes here: the recording machine's rate over this one's under
 * --compute-rate, 1 otherwise. */
#ifndef MPISKEL_SMPI
int sk_cpu_blocks;
double sk_cpu_per_asked = 1.0;
#endif
int sk_current = -1;  /* the phase being timed */
double sk_t0, sk_begun;
/* When this rank began its main loop, seconds after the common start (-1: not yet, or it has
 * none), and when the last rank did (set by sk_report). */
double sk_main_entry = -1.0, sk_main_latest = -1.0;
long sk_iterations = -1;
const char *sk_report_file;
static unsigned long long sk_state = 0x9E3779B97F4A7C15ULL;

/* xorshift64*: a uniform draw in [0, 1). */
static double sk_uniform(void) {
    sk_state ^= sk_state >> 12;
    sk_state ^= sk_state << 25;
    sk_state ^= sk_state >> 27;
    return (double)((sk_state * 0x2545F4914F6CDD1DULL) >> 11) * (1.0 / 9007199254740992.0);
}

#ifndef MPISKEL_SMPI
/* The kernel: a dependent chain of multiply-adds, which no compiler can shorten. */
static void sk_spin(long n) {
    double x = sk_sink;
    for (long i = 0; i < n; i++) {
        x = x * 0.999999999 + 1e-9;
    }
    sk_sink = x;
}

/* The time this thread has run on a processor (wall time where that clock is missing): the
 * calibration must not count the time other ranks held the core. */
static double sk_cpu_now(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0) {
        return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    }
    return MPI_Wtime();
}

/* The kernel's rate, iterations per second of this thread's processor time: batches grown to at
 * least 4 ms, then five more, timed together. The five are the rate the blocks will see; the
 * fastest of them is not: with 4 ranks on 2 cores (4 processes spinning at once), the best of
 * five batches was 1.5-3.6 % above the rate the same processes then kept for two seconds (0.8 %
 * below to 1.9 % above it for the five together), and every compute block of a skeleton ran that
 * much longer than it was asked to. */
static void sk_calibrate(void) {
    long n = 1L << 14;
    for (;;) {
        double a = sk_cpu_now();
        sk_spin(n);
        double t = sk_cpu_now() - a;
        if (t >= 0.004 || n > (1L << 40)) {
            break;
        }
        n *= 2;
    }
    double a = sk_cpu_now();
    for (int k = 0; k < 5; k++) {
        sk_spin(n);
    }
    double t = sk_cpu_now() - a;
    if (t > 0.0) {
        sk_rate = 5.0 * (double)n / t;
    }
}
#endif

void sk_init(int *argc, char ***argv) {
    for (int i = 1; i < *argc; i++) {
        if (strcmp((*argv)[i], "--iterations") == 0 && i + 1 < *argc) {
            sk_iterations = atol((*argv)[++i]);
        } else if (strcmp((*argv)[i], "--report") == 0 && i + 1 < *argc) {
            sk_report_file = (*argv)[++i];
        } else if (strcmp((*argv)[i], "--compute-scale") == 0 && i + 1 < *argc) {
            sk_scale = atof((*argv)[++i]);
        } else if (strcmp((*argv)[i], "--compute-rate") == 0 && i + 1 < *argc) {
            sk_fixed_rate = atof((*argv)[++i]);
        } else if (strcmp((*argv)[i], "--seed") == 0 && i + 1 < *argc) {
            sk_state ^= strtoull((*argv)[++i], NULL, 10) * 0xBF58476D1CE4E5B9ULL;
        }
    }
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    sk_state ^= (unsigned long long)(rank + 1) * 0xD1B54A32D192ED03ULL;
    for (int i = 0; i < 8; i++) {
        sk_uniform();
    }
#ifndef MPISKEL_SMPI
    sk_calibrate();
    if (sk_fixed_rate > 0.0) {
        sk_cpu_per_asked = sk_fixed_rate / sk_rate;
        sk_rate = sk_fixed_rate; /* a fixed amount of work per recorded second */
    }
#endif
}

long sk_main_run(long built_in, long full, long lead_full) {
    if (sk_iterations < 1) {
        return built_in;
    }
    /* Every class drops the same number of iterations, so that they stay matched. */
    long keep = sk_iterations < lead_full ? sk_iterations : lead_full;
    long run = full - (lead_full - keep);
    return run < 1 ? 1 : run;
}

long sk_steps_run(long built_in, long full) {
    if (sk_iterations < 1) {
        return built_in;
    }
    long run = sk_iterations < full ? sk_iterations : full;
    return run < built_in ? built_in : run;
}

void sk_steps_count(int first, int n_kinds, const unsigned char *kinds, long rows, long run) {
    if (!sk_phases || rows < 1 || run == rows) {
        return;
    }
    for (int k = 0; k < n_kinds; k++) {
        sk_phases[first + k].run = 0;
    }
    for (long it = 0; it < run; it++) {
        sk_phases[first + kinds[it % rows]].run++;
    }
}

void sk_rank_weight(const double *weights) {
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    sk_weight = weights[rank];
}

/* Computes for `seconds` of the recording machine, weight and scale already applied. */
static void sk_run(double seconds) {
    if (seconds <= 0.0) {
        return;
    }
    if (sk_current >= 0 && sk_ran) {
        sk_ran[sk_current] += seconds;
    }
#ifdef MPISKEL_SMPI
    smpi_execute_flops(seconds * MPISKEL_REF_FLOPS);
#else
    sk_spin((long)(seconds * sk_rate + 0.5));
#endif
}

void sk_compute(double seconds) {
    sk_run(seconds * sk_weight * sk_scale);
}

static double sk_shrink = 1.0;

void sk_processor_time(void) {
#ifndef MPISKEL_SMPI
    sk_cpu_blocks = 1;
#endif
}

void sk_compute_shrink(double share) {
    if (share > 0.0 && share <= 1.0) {
        sk_shrink = share;
    }
}

static void sk_cut_run(double seconds, double removed, double shrink, int clip);

#define SK_KEEP_SHARE @KEEP_SHARE@
#define SK_KEEP_MIN @KEEP_MIN@

/* Runs the `kept` seconds of a cut block and adds them, with the `removed` seconds that do not
 * run, to the phase being timed (sk_cut). On a real machine a part shorter than SK_KEEP_MIN
 * runs untimed (reading the clocks would cost a good share of it): what it skipped is priced at
 * the pace of the phase's timed parts (sk_restored_of). Simulated time is exact at any length. */
static void sk_run_kept(double kept, double removed) {
#ifndef MPISKEL_SMPI
    if (kept < SK_KEEP_MIN) {
        sk_run(kept);
        sk_cut[sk_current][0] += removed;
        return;
    }
#endif
    double start = MPI_Wtime();
#ifndef MPISKEL_SMPI
    double cpu = sk_cpu_now();
#endif
    sk_run(kept);
    double *c = sk_cut[sk_current];
    c[0] += removed;
    c[1] += kept;
    c[2] += MPI_Wtime() - start;
#ifdef MPISKEL_SMPI
    c[3] += kept;
#else
    c[3] += sk_cpu_now() - cpu;
#endif
}

/* Runs `seconds` less `removed`, and of that only `shrink`; adds what did not run to the phase's
 * removed computation. With `clip`, a duration shorter than `removed` runs nothing and still
 * adds `removed`: every rank adds the same, and what counts is the slowest rank's (see
 * sk_compute_drawn_less). */
static void sk_compute_cut(double seconds, double removed, double shrink, int clip) {
    sk_cut_run(seconds * sk_weight, removed, shrink, clip);
}

/* sk_compute_cut of seconds that hold the rank's weight already. */
static void sk_cut_run(double seconds, double removed, double shrink, int clip) {
    seconds *= sk_scale;
    removed *= sk_scale;
    double kept = seconds - removed;
    if (clip && kept < 0.0) {
        kept = 0.0;
    }
    if (removed <= 0.0 || kept < 0.0 || (kept == 0.0 && !clip) || sk_current < 0 || !sk_cut) {
        sk_run(seconds);
        return;
    }
    /* Each rank's own part shrinks by the same share, its own seconds added back. */
    removed += kept * (1.0 - shrink);
    kept *= shrink;
    sk_run_kept(kept, removed);
}

void sk_compute_less(double seconds, double removed) {
    sk_compute_cut(seconds, removed, sk_shrink, 0);
}

/* sk_compute_less without sk_compute_shrink: at a block where the ranks of a class differ
 * beyond their weights, the slowest rank here is not the slowest elsewhere, and each rank adding
 * back its own shrunk part would lose the waiting for this block's slowest. */
void sk_compute_less_whole(double seconds, double removed) {
    sk_compute_cut(seconds, removed, 1.0, 0);
}

/* Per phase: whether a block of it ran only a short part (sk_compute_keep), and, once the
 * report has gathered them, the most removed computation any rank restores there. */
int *sk_keep;
int sk_keep_any;
double *sk_keep_most;

void sk_compute_keep(double seconds) {
    double s = seconds * sk_weight * sk_scale;
    double kept = SK_KEEP_SHARE * s;
    if (kept < SK_KEEP_MIN) {
        kept = SK_KEEP_MIN;
    }
    if (kept >= s || sk_current < 0 || !sk_cut || !sk_keep) {
        sk_run(s);
        return;
    }
    sk_run_kept(kept, s - kept);
    sk_keep[sk_current] = 1;
    sk_keep_any = 1;
}

static const double (*sk_dists)[SK_QUANTILES];
static int sk_ndists;

void sk_distributions(const double (*dists)[SK_QUANTILES], int n) {
    sk_dists = dists;
    sk_ndists = n;
}

/* A duration drawn from distribution i (inverse CDF, linear between quantiles); 0 without it. */
static double sk_draw(int i) {
    static const double p[SK_QUANTILES] = {@QUANTILE_PROBABILITIES@};
    if (!sk_dists || i < 0 || i >= sk_ndists) {
        return 0.0;
    }
    const double *q = sk_dists[i];
    double u = sk_uniform();
    int k = 0;
    while (k < SK_QUANTILES - 2 && u >= p[k + 1]) {
        k++;
    }
    double f = (u - p[k]) / (p[k + 1] - p[k]);
    return q[k] * (1.0 - f) + q[k + 1] * f;
}

void sk_compute_drawn(int i) {
    sk_compute(sk_draw(i));
}

/* Every rank skips the same `removed` seconds of its draw and adds them back; a draw shorter
 * than that runs nothing. The waiting at the next point where ranks meet is for the slowest
 * rank, whose draw the build chose `removed` to stay under but for a bias it bounds (see
 * removal.rs of mpiskel-emit). A drawn block is not shrunk further: the ranks' random
 * deviations make a different rank the slowest in each execution, and only the time each rank
 * waits for that one would tell. */
void sk_compute_drawn_less(int i, double removed) {
    sk_compute_cut(sk_draw(i), removed, 1.0, 1);
}

void sk_compute_drawn_scaled(int i, double factor) {
    sk_compute(sk_draw(i) * factor);
}

void sk_compute_drawn_keep(int i) {
    sk_compute_keep(sk_draw(i));
}

void sk_compute_drawn_scaled_keep(int i, double factor) {
    sk_compute_keep(sk_draw(i) * factor);
}

void sk_compute_drawn_scaled_less(int i, double factor, double removed) {
    sk_compute_cut(sk_draw(i) * factor, removed, 1.0, 1);
}

void sk_compute_as_recorded(double seconds) {
    sk_run(seconds * sk_scale);
}

/* As sk_compute_drawn_less: every rank skips the same `removed` seconds and adds them back; a
 * recorded duration shorter than that runs nothing. */
void sk_compute_as_recorded_less(double seconds, double removed) {
    sk_cut_run(seconds, removed, 1.0, 1);
}

static long *sk_replay_at;
static int sk_nreplays;

long sk_replay_row(int table, long rows, long again) {
    if (table < 0 || rows < 1) {
        return 0;
    }
    if (table >= sk_nreplays) {
        int n = table + 1 > 2 * sk_nreplays ? table + 1 : 2 * sk_nreplays;
        long *grown = realloc(sk_replay_at, (size_t)n * sizeof *grown);
        if (!grown) {
            return 0;
        }
        memset(grown + sk_nreplays, 0, (size_t)(n - sk_nreplays) * sizeof *grown);
        sk_replay_at = grown;
        sk_nreplays = n;
    }
    long at = sk_replay_at[table]++;
    if (at < rows) {
        return at;
    }
    if (again < 0 || again >= rows) {
        again = 0;
    }
    return again + (at - again) % (rows - again);
}

void sk_wait_none(void) {
    MPI_Request none[1] = {MPI_REQUEST_NULL};
    MPI_Waitall(0, none, sk_statuses(1));
}

MPI_Status *sk_statuses(int n) {
    static MPI_Status *st;
    static int have;
    if (n > have) {
        MPI_Status *grown = realloc(st, sizeof(MPI_Status) * (size_t)n);
        if (!grown) {
            fprintf(stderr, "mpiskel: out of memory for %d statuses\n", n);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        st = grown;
        have = n;
    }
    return st;
}

void sk_waitall(MPI_Request *req, int n, const int *slots) {
    for (int i = 0; i < n; i++) {
        MPI_Wait(&req[slots[i]], MPI_STATUS_IGNORE);
    }
}

void sk_waitany(MPI_Request *req, int n) {
    int index;
    MPI_Waitany(n, req, &index, MPI_STATUS_IGNORE);
}

void sk_waitsome(MPI_Request *req, int n) {
    int done;
    int *index = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    if (!index) {
        sk_waitany(req, n);
        return;
    }
    MPI_Waitsome(n, req, &done, index, sk_statuses(n));
    free(index);
}

void sk_iprobe(int source, int tag, MPI_Comm comm) {
    int flag;
    MPI_Iprobe(source, tag, comm, &flag, MPI_STATUS_IGNORE);
}

void sk_poll(MPI_Comm comm) {
    sk_iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm);
}

void sk_polls(long n, MPI_Comm comm) {
    for (long i = 0; i < n; i++) {
        sk_iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm);
    }
}

int sk_cart_neighbour(MPI_Comm cart, int ndims, const int *offset) {
    int dims[8], periods[8], coords[8], rank;
    if (ndims > 8) {
        return MPI_PROC_NULL;
    }
    MPI_Cart_get(cart, ndims, dims, periods, coords);
    for (int k = 0; k < ndims; k++) {
        int x = coords[k] + offset[k];
        if (x < 0 || x >= dims[k]) {
            if (!periods[k]) {
                return MPI_PROC_NULL;
            }
            x = ((x % dims[k]) + dims[k]) % dims[k];
        }
        coords[k] = x;
    }
    MPI_Cart_rank(cart, coords, &rank);
    return rank;
}
