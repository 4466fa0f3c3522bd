/*
 * mpiskel runtime: the state that mpiskel_rt.c (computation) and mpiskel_rt_report.c (phases,
 * prediction, report) share. Not for skeletons, which include mpiskel_rt.h only.
 */
#ifndef MPISKEL_RT_INTERNAL_H
#define MPISKEL_RT_INTERNAL_H

#include "mpiskel_rt.h"

/* Kernel iterations per second on this machine (unused under SMPI). */
extern double sk_rate;
/* The phases (sk_start) and, per phase: what its time is multiplied by beyond its iterations
 * (sk_phase_scale; NULL: 1); for the computation not run, the seconds removed, the seconds asked
 * of and taken by the parts that ran, and the processor seconds those parts took; the seconds
 * of computation asked. */
extern sk_phase *sk_phases;
extern int sk_nphases;
extern double *sk_scales;
extern double (*sk_cut)[4];
extern double *sk_ran;
#ifndef MPISKEL_SMPI
/* Whether the compute blocks are processor time, and the processor seconds one asked second
 * takes here. */
extern int sk_cpu_blocks;
extern double sk_cpu_per_asked;
#endif
/* The phase being timed (-1: none), when the timing began and when this phase began. */
extern int sk_current;
extern double sk_t0, sk_begun;
/* When this rank began its main loop after the common start (-1: not yet, or none), and when
 * the last rank did (set by sk_report). */
extern double sk_main_entry, sk_main_latest;
/* --iterations (-1: as built) and --report. */
extern long sk_iterations;
extern const char *sk_report_file;
/* Per phase: whether a block of it ran only a short part (sk_compute_keep); whether any did;
 * once gathered by the report, the most removed computation any rank restores there. */
extern int *sk_keep;
extern int sk_keep_any;
extern double *sk_keep_most;

#endif
