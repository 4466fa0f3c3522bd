/*
 * mpiskel runtime: the phases' timing, the prediction of the application's time from them, and
 * the report. The state shared with mpiskel_rt.c is declared in mpiskel_rt_internal.h.
 */
#define _GNU_SOURCE /* sched_getaffinity: the processors this rank may run on */
#include "mpiskel_rt_internal.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef MPISKEL_SMPI
#include <smpi/smpi.h>
#else
#include <sched.h>
#include <unistd.h>
#endif
void sk_start(sk_phase *phases, int n) {
    sk_phases = phases;
    sk_nphases = n;
    free(sk_scales);
    sk_scales = NULL;
    free(sk_cut);
    sk_cut = calloc((size_t)n, sizeof *sk_cut);
    free(sk_ran);
    sk_ran = calloc((size_t)n, sizeof *sk_ran);
    free(sk_keep);
    sk_keep = calloc((size_t)n, sizeof *sk_keep);
    free(sk_keep_most);
    sk_keep_most = NULL;
    MPI_Barrier(MPI_COMM_WORLD);
    sk_t0 = MPI_Wtime();
}

void sk_phase_begin(int i) {
    sk_current = i;
    sk_begun = MPI_Wtime();
    if (sk_phases[i].parent < 0 && sk_main_entry < 0.0 && strcmp(sk_phases[i].name, "main_loop") == 0) {
        sk_main_entry = sk_begun - sk_t0;
    }
}

void sk_phase_end(int i) {
    sk_phases[i].seconds += MPI_Wtime() - sk_begun;
    sk_current = -1;
}

void sk_iteration_end(long it) {
    if (it == 0 && sk_current >= 0 && !sk_phases[sk_current].first_set) {
        sk_phases[sk_current].first = MPI_Wtime() - sk_begun;
        sk_phases[sk_current].first_set = 1;
    }
}

/* The computation run and cut in the phase being timed when each timed part (a kind of time
 * step, a cut inner loop) began, innermost last: sk_phase_add moves what the part added since
 * to the part's own phase, whose iterations scale it. */
#define SK_PARTS 8
static double sk_part_marks[SK_PARTS][5];
static int sk_nparts;

double sk_part_begin(void) {
    if (sk_nparts < SK_PARTS && sk_current >= 0 && sk_ran && sk_cut) {
        double *m = sk_part_marks[sk_nparts];
        m[0] = sk_ran[sk_current];
        memcpy(m + 1, sk_cut[sk_current], sizeof sk_cut[0]);
    }
    sk_nparts++;
    return MPI_Wtime();
}

void sk_phase_add(int i, double seconds) {
    sk_phases[i].seconds += seconds;
    if (sk_nparts <= 0) {
        return;
    }
    sk_nparts--;
    int c = sk_current;
    if (sk_nparts < SK_PARTS && c >= 0 && c != i && sk_ran && sk_cut) {
        const double *m = sk_part_marks[sk_nparts];
        double d = sk_ran[c] - m[0];
        sk_ran[c] -= d;
        sk_ran[i] += d;
        for (int k = 0; k < 4; k++) {
            d = sk_cut[c][k] - m[1 + k];
            sk_cut[c][k] -= d;
            sk_cut[i][k] += d;
        }
    }
}

void sk_phase_scale(int i, double scale) {
    if (!sk_scales) {
        sk_scales = malloc((size_t)sk_nphases * sizeof *sk_scales);
        if (!sk_scales) {
            return;
        }
        for (int j = 0; j < sk_nphases; j++) {
            sk_scales[j] = 1.0;
        }
    }
    if (i >= 0 && i < sk_nphases && scale > 0.0) {
        sk_scales[i] = scale;
    }
}

static double sk_scale_of(int i) {
    return sk_scales ? sk_scales[i] : 1.0;
}

void sk_inner_first(int i, double seconds) {
    sk_phases[i].first += seconds;
    sk_phases[i].first_set = 1;
}

/* Seconds of removed computation added back to the iterations phase i ran: what was removed,
 * at the pace the parts that ran kept over the whole phase. */
static double sk_restored_of(int i) {
    if (sk_keep_most && sk_keep && sk_keep[i]) {
        return sk_keep_most[i];
    }
    if (!sk_cut || sk_cut[i][0] <= 0.0) {
        return 0.0;
    }
    if (sk_cut[i][1] > 0.0) {
        return sk_cut[i][0] * sk_cut[i][2] / sk_cut[i][1];
    }
    /* Only untimed parts ran here: the pace of the rank's timed parts elsewhere, or, with none,
     * the pace the kernel was calibrated at (1). */
    double asked = 0.0, took = 0.0;
    for (int j = 0; j < sk_nphases; j++) {
        asked += sk_cut[j][1];
        took += sk_cut[j][2];
    }
    return sk_cut[i][0] * (asked > 0.0 ? took / asked : 1.0);
}

/* A first iteration this many times longer than the mean of the others waited for ranks that
 * reached the loop late; shorter, its difference is the spread of the compute durations drawn
 * (about a tenth for one iteration of NPB BT), and all iterations are averaged. */
#define SK_FIRST_LONGER @FIRST_LONGER@

/* Predicted application seconds of phase i: its own time (less its timed inner loops) plus the
 * removed computation at the pace of the part that ran, scaled by its iterations; plus each
 * inner loop's time scaled by the inner loop's. A cut loop without timed inner loops that ran
 * two iterations or more counts its first iteration once and scales the others where the first
 * replays the application's first (its compute blocks replay it), or where it is clearly the
 * longest: the first waited for the ranks that reached the loop last, which the application
 * did once (NPB CG A's set-up loop: 2.6 times the second). */
static double sk_predicted(int i);

static double sk_predicted_unscaled(int i) {
    const sk_phase *p = &sk_phases[i];
    double own = p->seconds, inner = 0.0;
    int children = 0;
    for (int j = 0; j < sk_nphases; j++) {
        if (sk_phases[j].parent == i) {
            own -= sk_phases[j].seconds;
            inner += sk_predicted(j);
            children++;
        }
    }
    if (p->run <= 0) {
        return inner;
    }
    double restored = sk_restored_of(i) * (double)p->full / (double)p->run;
    /* A cut inner loop: each iteration of the loop around it began it once in the application
     * too, so its first iterations (summed in `first`) count once per outer iteration and the
     * rest are scaled. A first inner iteration waits where the others do not — a pipelined
     * sweep's fill, until the wave reaches the rank — and scaled with the rest, that wait would
     * count as often as the iterations cut (NPB LU S on 16 ranks at 10 µs links: +8 %). */
    if (p->parent >= 0) {
        const sk_phase *o = &sk_phases[p->parent];
        if (children == 0 && p->first_set && o->run > 0 && p->run >= 2 * o->run && p->full > p->run) {
            double others = (own - p->first) / (double)(p->run - o->run);
            return p->first * (double)o->full / (double)o->run + others * (double)(p->full - o->full) +
                   restored;
        }
    }
    if (children == 0 && p->parent < 0 && p->first_set && p->run >= 2 && p->full > p->run) {
        double others = (own - p->first) / (double)(p->run - 1);
        if (p->first_apart || p->first > SK_FIRST_LONGER * others) {
            return p->first + others * (double)(p->full - 1) + restored;
        }
    }
    double predicted = own * (double)p->full / (double)p->run + restored + inner;
    /* A rank that reached the main loop before the last one waited for it in the iterations it
     * ran, as the application did once, in its first: that wait is counted once, not scaled
     * (the panels of an LU factorization start where the longest set-up ends). The last rank to
     * arrive keeps its whole time, and the prediction is the slowest rank's. */
    if (p->parent < 0 && p->full > p->run && sk_main_entry >= 0.0 && sk_main_latest > sk_main_entry &&
        strcmp(p->name, "main_loop") == 0) {
        double wait = sk_main_latest - sk_main_entry, most = p->seconds / (double)p->run;
        predicted -= (wait < most ? wait : most) * ((double)p->full / (double)p->run - 1.0);
    }
    return predicted;
}

/* Predicted application seconds of phase i, with its scale (sk_phase_scale). */
static double sk_predicted(int i) {
    return sk_predicted_unscaled(i) * sk_scale_of(i);
}

static void *sk_send_buffer;

void sk_buffer_attach(long long bytes, long long messages, long main_run) {
    long long times = 1;
    if (sk_iterations > main_run && main_run > 0) {
        times = (sk_iterations + main_run - 1) / main_run;
    }
    long long size = (bytes + messages * (long long)MPI_BSEND_OVERHEAD) * times;
    if (size > INT_MAX) {
        fprintf(stderr, "mpiskel: the buffered sends need %lld bytes; MPI attaches at most %d\n",
                size, INT_MAX);
        size = INT_MAX;
    }
    sk_send_buffer = malloc((size_t)size);
    if (!sk_send_buffer) {
        fprintf(stderr, "mpiskel: cannot allocate %lld bytes for the buffered sends\n", size);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Buffer_attach(sk_send_buffer, (int)size);
}

void sk_buffer_detach(void) {
    if (!sk_send_buffer) {
        return;
    }
    void *buffer;
    int size;
    MPI_Buffer_detach(&buffer, &size);
    free(sk_send_buffer);
    sk_send_buffer = NULL;
}

static const int *sk_slot;
static int sk_nslots;

void sk_keep_slots(const int *slots, int n) {
    sk_slot = slots;
    sk_nslots = n;
}

/* Phases where blocks ran only a short part on every rank (sk_compute_keep) restore, on every
 * rank, the most any rank restores there. Every rank takes part; phases meet by position, or
 * by the slot of their name (sk_keep_slots) where the classes' phases differ. */
static void sk_gather_keep(void) {
    int any = 0;
    MPI_Allreduce(&sk_keep_any, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (!any || sk_nphases <= 0 || !sk_keep) {
        return;
    }
    int n = sk_slot ? sk_nslots : sk_nphases;
    double *mine = calloc((size_t)n, sizeof *mine);
    double *most = calloc((size_t)n, sizeof *most);
    double *of_phase = calloc((size_t)sk_nphases, sizeof *of_phase);
    if (!mine || !most || !of_phase) {
        free(mine);
        free(most);
        free(of_phase);
        return;
    }
    for (int i = 0; i < sk_nphases; i++) {
        int at = sk_slot ? sk_slot[i] : i;
        double r = sk_keep[i] ? sk_restored_of(i) : 0.0;
        if (at >= 0 && at < n && r > mine[at]) {
            mine[at] = r;
        }
    }
    MPI_Allreduce(mine, most, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    for (int i = 0; i < sk_nphases; i++) {
        int at = sk_slot ? sk_slot[i] : i;
        of_phase[i] = at >= 0 && at < n ? most[at] : 0.0;
        if (of_phase[i] > 0.0) {
            sk_keep[i] = 1;
        }
    }
    free(mine);
    free(most);
    sk_keep_most = of_phase;
}

#ifndef MPISKEL_SMPI
/* The CPU quota, in processors, in the cgroup directory `dir` (cgroup v2's cpu.max, v1's
 * cpu.cfs_quota_us over cpu.cfs_period_us); 0 where it sets none. */
static double sk_quota_in(const char *dir) {
    char path[4352];
    double quota = 0.0, period = 0.0;
    snprintf(path, sizeof path, "%s/cpu.max", dir);
    FILE *f = fopen(path, "r");
    if (f) {
        char q[32] = "";
        if (fscanf(f, "%31s %lf", q, &period) != 2 || strcmp(q, "max") == 0) {
            period = 0.0;
        } else {
            quota = atof(q);
        }
        fclose(f);
    } else {
        snprintf(path, sizeof path, "%s/cpu.cfs_quota_us", dir);
        if ((f = fopen(path, "r"))) {
            if (fscanf(f, "%lf", &quota) != 1) {
                quota = 0.0;
            }
            fclose(f);
        }
        snprintf(path, sizeof path, "%s/cpu.cfs_period_us", dir);
        if (quota > 0.0 && (f = fopen(path, "r"))) {
            if (fscanf(f, "%lf", &period) != 1) {
                period = 0.0;
            }
            fclose(f);
        }
    }
    return quota > 0.0 && period > 0.0 ? quota / period : 0.0;
}

/* The least CPU quota, in processors, of this process's cgroups and their parents (0: none). */
static double sk_quota(void) {
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f) {
        return 0.0;
    }
    static const char *v1[] = {"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"};
    static const char *v2[] = {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"};
    char line[4096], dir[4224];
    double least = 0.0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        /* hierarchy-id:controllers:path; v2 has no controllers, v1's cpu hierarchy lists cpu */
        char *a = strchr(line, ':'), *b = a ? strchr(a + 1, ':') : NULL;
        if (!b) {
            continue;
        }
        *b = 0;
        const char *ctrl = a + 1, *at = b + 1;
        int is_v2 = ctrl[0] == 0, is_cpu = 0;
        for (const char *c = ctrl; *c; c += strcspn(c, ",") + (c[strcspn(c, ",")] ? 1 : 0)) {
            if (strncmp(c, "cpu", 3) == 0 && (c[3] == ',' || c[3] == 0)) {
                is_cpu = 1;
            }
        }
        if (!is_v2 && !is_cpu) {
            continue;
        }
        for (int k = 0; k < 2; k++) {
            snprintf(dir, sizeof dir, "%s%s", is_v2 ? v2[k] : v1[k], strcmp(at, "/") ? at : "");
            size_t root = strlen(is_v2 ? v2[k] : v1[k]);
            for (;;) {
                double q = sk_quota_in(dir);
                if (q > 0.0 && (least == 0.0 || q < least)) {
                    least = q;
                }
                char *slash = strrchr(dir, '/');
                if (strlen(dir) <= root || !slash || (size_t)(slash - dir) < root) {
                    break;
                }
                *slash = 0;
            }
        }
    }
    fclose(f);
    return least;
}

/* Processors the ranks of `node` may run on: the union of their CPU affinities (each rank may
 * be bound to a core of its own: its mask alone would count one), less the least cgroup quota
 * of any of them. */
static double sk_cores(MPI_Comm node) {
    enum { WORDS = CPU_SETSIZE / 64 };
    unsigned long long mine[WORDS], all[WORDS];
    memset(mine, 0, sizeof mine);
    cpu_set_t set;
    int known = sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0;
    for (int c = 0; known && c < CPU_SETSIZE; c++) {
        if (CPU_ISSET(c, &set)) {
            mine[c / 64] |= 1ULL << (c % 64);
        }
    }
    double cores = 0.0, quota = sk_quota(), least;
    MPI_Allreduce(mine, all, WORDS, MPI_UNSIGNED_LONG_LONG, MPI_BOR, node);
    for (int w = 0; w < WORDS; w++) {
        cores += (double)__builtin_popcountll(all[w]);
    }
    if (cores <= 0.0) {
        cores = (double)sysconf(_SC_NPROCESSORS_ONLN);
    }
    quota = quota > 0.0 ? quota : cores;
    MPI_Allreduce(&quota, &least, 1, MPI_DOUBLE, MPI_MIN, node);
    if (least < cores) {
        cores = least;
    }
    return cores > 0.0 ? cores : 1.0;
}

/* Rank 0's node as the floor below saw it, for the report: its ranks, processors, and processor
 * seconds of computation run and not run in the application's iterations. */
static int sk_node_ranks;
static double sk_node_cores, sk_node_computed, sk_node_removed;

/* Seconds this rank adds to its prediction, natively, where the compute blocks are processor
 * time (sk_processor_time) and this node holds more ranks than processors (the union of their
 * CPU affinities, or a cgroup's quota): the application's computation on the node could not have run faster than
 * its processors allow.
 * - Each rank restores the computation it did not run at the pace its kept parts ran; those
 *   parts are short and run between messages, mostly while the other ranks communicate, so
 *   they are not descheduled as the application's whole blocks were (a task farm of three
 *   workers and a master on two cores: every worker restores at pace 1.0, and the prediction
 *   misses the 40 % the workers lost to each other). The removed processor seconds of the
 *   node's ranks take at least their sum over the processors: a rank that restores less is
 *   raised to that.
 * - A loop's sampled iterations can meet fewer ranks computing at once than the application's
 *   steady state did (ranks that arrive at different moments): all the computation the
 *   prediction stands for, run and removed, in the application's iterations, takes at least
 *   the node's sum over its processors, and the prediction is raised to that. */
static double sk_cores_floor(double by_phase) {
    if (!sk_cpu_blocks || !sk_cut || !sk_ran) {
        return 0.0;
    }
    double mine[2] = {0.0, 0.0}, node_sum[2], restored = 0.0; /* computed, removed */
    for (int i = 0; i < sk_nphases; i++) {
        const sk_phase *p = &sk_phases[i];
        if (p->run <= 0) {
            continue;
        }
        double scale = (double)p->full / (double)p->run * sk_scale_of(i);
        mine[0] += sk_ran[i] * sk_cpu_per_asked * scale;
        if (sk_cut[i][0] > 0.0) {
            double cpu_per_s = sk_cut[i][1] > 0.0 ? sk_cut[i][3] / sk_cut[i][1] : sk_cpu_per_asked;
            mine[1] += sk_cut[i][0] * cpu_per_s * scale;
            restored += sk_restored_of(i) * scale;
        }
    }
    MPI_Comm node;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) !=
        MPI_SUCCESS) {
        return 0.0;
    }
    int ranks;
    MPI_Comm_size(node, &ranks);
    double least = sk_cores(node);
    MPI_Allreduce(mine, node_sum, 2, MPI_DOUBLE, MPI_SUM, node);
    MPI_Comm_free(&node);
    sk_node_ranks = ranks, sk_node_cores = least;
    sk_node_computed = node_sum[0], sk_node_removed = node_sum[1];
    if ((double)ranks <= least) {
        return 0.0;
    }
    double extra = node_sum[1] / least - restored;
    extra = extra > 0.0 ? extra : 0.0;
    double all = (node_sum[0] + node_sum[1]) / least - (by_phase + extra);
    return extra + (all > 0.0 ? all : 0.0);
}
#endif

/* Waits until every rank has finished its program, without taking the processor: a rank that
 * finishes early (a worker whose share of the work was small) would otherwise wait in the
 * report's first reduction, where the MPI library polls, and where ranks outnumber cores take
 * the cores from the ranks still running. In the application that rank was in MPI_Finalize,
 * where Open MPI waits by sleeping between polls; a skeleton of a master and three workers on
 * two cores ran 5 % longer than its application with every iteration, and its ranks were
 * switched out 2-3 times as often. Simulated time has no cores to share: a barrier there. */
static void sk_wait_for_all(void) {
#ifdef MPISKEL_SMPI
    MPI_Barrier(MPI_COMM_WORLD);
#else
    MPI_Request all;
    int done = 0;
    MPI_Ibarrier(MPI_COMM_WORLD, &all);
    for (;;) {
        MPI_Test(&all, &done, MPI_STATUS_IGNORE);
        if (done) {
            break;
        }
        struct timespec pause = {0, 100000}; /* 100 µs, as Open MPI's MPI_Finalize */
        nanosleep(&pause, NULL);
    }
#endif
}

void sk_report(const char *name, double factor, double recorded_app_s) {
    double total = MPI_Wtime() - sk_t0;
    sk_wait_for_all();
    MPI_Allreduce(&sk_main_entry, &sk_main_latest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    sk_gather_keep();
    double by_phase = 0.0, warm = 0.0, warm_most = 0.0;
    for (int i = 0; i < sk_nphases; i++) {
        if (sk_phases[i].parent < 0) {
            by_phase += sk_predicted(i);
            if (sk_phases[i].warmup > 0 && sk_phases[i].full > 0) {
                warm += (double)sk_phases[i].warmup * sk_predicted(i) / (double)sk_phases[i].full;
            }
        }
    }
    /* A skipped warm-up iteration ran, in the application, before ranks met again (a barrier, a
     * norm): it cost every rank the slowest rank's iteration. */
    MPI_Allreduce(&warm, &warm_most, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    by_phase += warm_most;
#ifndef MPISKEL_SMPI
    by_phase += sk_cores_floor(by_phase);
#endif
    double mine[2] = {total, by_phase}, most[2];
    MPI_Reduce(mine, most, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank != 0) {
        return;
    }
    double ratio = most[0] * factor;
    printf("mpiskel %s: skeleton %.6g s on %d ranks; predicted application time %.6g s "
           "(by phase), %.6g s (x%.4g); recorded %.6g s\n",
           name, most[0], size, most[1], ratio, factor, recorded_app_s);
    /* Natively, this rank's node: its ranks, the processors they may use, and the processor
     * seconds of computation its ranks did not run (in the application's iterations). */
    char node[200] = "";
#ifndef MPISKEL_SMPI
    if (sk_node_ranks > 0) {
        snprintf(node, sizeof node,
                 "\"node\":{\"ranks\":%d,\"cores\":%.6g,\"computed_s\":%.9g,\"removed_s\":%.9g},",
                 sk_node_ranks, sk_node_cores, sk_node_computed, sk_node_removed);
    }
#endif
    /* Every phase's line: a name and seven numbers, under 256 characters each. */
    size_t cap = 1024 + strlen(name) + (size_t)sk_nphases * 256;
    char *json = malloc(cap);
    if (!json) {
        fprintf(stderr, "mpiskel: no memory for the report\n");
        return;
    }
    int at = snprintf(json, cap,
                      "{\"kind\":\"mpiskel-skeleton-run\",\"skeleton\":\"%s\",\"ranks\":%d,"
                      "\"skeleton_s\":%.9g,\"predicted_s\":%.9g,\"predicted_ratio_s\":%.9g,"
                      "\"factor\":%.9g,\"recorded_app_s\":%.9g,\"smpi\":%s,"
                      "\"compute_rate\":%.6g,%s\"phases\":[",
                      name, size, most[0], most[1], ratio, factor, recorded_app_s,
#ifdef MPISKEL_SMPI
                      "true",
#else
                      "false",
#endif
                      sk_rate, node);
    for (int i = 0; i < sk_nphases && (size_t)at < cap - 256; i++) {
        const sk_phase *p = &sk_phases[i];
        at += snprintf(json + at, cap - (size_t)at,
                       "%s{\"name\":\"%s\",\"full\":%ld,\"run\":%ld,\"warmup\":%ld,"
                       "\"seconds\":%.9g,\"restored_s\":%.9g,\"predicted_s\":%.9g}",
                       i ? "," : "", p->name, p->full, p->run, p->warmup, p->seconds,
                       sk_restored_of(i),
                       sk_predicted(i) + (p->warmup > 0 && p->parent < 0 ? warm_most : 0.0));
    }
    snprintf(json + at, cap - (size_t)at, "]}");
    printf("MPISKEL_REPORT %s\n", json);
    fflush(stdout);
    if (sk_report_file) {
        FILE *f = fopen(sk_report_file, "w");
        if (f) {
            fprintf(f, "%s\n", json);
            fclose(f);
        } else {
            fprintf(stderr, "mpiskel: cannot write the report to %s\n", sk_report_file);
        }
    }
    free(json);
}
