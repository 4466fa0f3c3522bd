/*
 * mpiskel runtime: what every skeleton shares.
 *
 *   sk_init      parse options, calibrate the compute kernel (well under a second)
 *   sk_compute   busy computation for a number of seconds of the recording machine
 *   sk_phase_*   time the phases of the program
 *   sk_report    one human line and one JSON record: skeleton time, per-phase times and
 *                the predicted application time
 *
 * Build with -DMPISKEL_SMPI under SimGrid (smpicc): compute blocks then run as simulated work,
 * sk_compute(s) = smpi_execute_flops(s * MPISKEL_REF_FLOPS), so runs are deterministic.
 */
#ifndef MPISKEL_RT_H
#define MPISKEL_RT_H

#include <mpi.h>

#ifndef MPISKEL_REF_FLOPS
/* Flop rate of the recording machine, for SimGrid runs (traces from SMPI: 1 Gflop/s). */
#define MPISKEL_REF_FLOPS 1e9
#endif

/* One timed part of the program: a loop of the trace or the calls between loops. */
typedef struct {
    const char *name;
    long full;      /* iterations in the application */
    long run;       /* iterations this skeleton runs */
    double seconds; /* measured */
    int parent;     /* for an inner loop timed on its own: its phase; otherwise -1 */
    int first_apart; /* its first iteration replays the application's first: counted once */
    double first;   /* seconds of its first iteration (set by sk_iteration_end); for an inner
                     * loop, of its first iteration in each iteration of its phase, summed
                     * (sk_inner_first) */
    int first_set;
    long warmup;    /* copies of one of its iterations elsewhere in the application that this
                     * skeleton skips (an untimed warm-up iteration), each priced at the slowest
                     * rank's mean iteration */
} sk_phase;

/* Options: --iterations N (main loop iterations), --report FILE (also write the JSON there),
 * --compute-scale X (every compute block times X; what `mpiskel retune --app-time` sets),
 * --compute-rate R (R kernel iterations per recorded second instead of calibrating: a fixed
 * amount of work, which takes longer on a slower processor; `mpiskel retune --work`),
 * --seed N (another sequence of drawn compute durations: runs with different seeds show how
 * much the prediction depends on the draws). */
void sk_init(int *argc, char ***argv);
/* The main loop's iterations: the value built in, or as many fewer as --iterations asks of the
 * class with lead_full iterations. */
long sk_main_run(long built_in, long full, long lead_full);
/* A main loop of time steps: the `built_in` steps of its table, or the --iterations N asked (at
 * most the application's `full`, at least the table's, so that every kind of step runs), the
 * table read over again. */
long sk_steps_run(long built_in, long full);
/* Sets the iterations of the phases of the `n_kinds` kinds of step (`first` onwards) to the
 * steps of each kind among the `run` that read the table `kinds` of `rows` steps over again. */
void sk_steps_count(int first, int n_kinds, const unsigned char *kinds, long rows, long run);

void sk_compute(double seconds);
/* Scales every compute block of this rank by weights[rank]. */
void sk_rank_weight(const double *weights);

/* Quantiles per compute distribution: minimum, 1 %, 5 %, 10 %, 25 %, median, 75 %, 90 %,
 * 95 %, 99 %, 99.9 %, maximum. */
#define SK_QUANTILES @QUANTILES@
/* Registers the program's distributions of compute durations (quantiles, seconds). */
void sk_distributions(const double (*dists)[SK_QUANTILES], int n);
/* Busy computation for a duration drawn from distribution i (inverse CDF, linear between
 * quantiles; the generator is seeded by the rank, so runs repeat). */
void sk_compute_drawn(int i);
/* sk_compute and sk_compute_drawn less `removed` seconds of the recording machine, which are
 * not run: the time they would take here, at the pace the rest of the block ran, is added to
 * the prediction of the phase being timed, per iteration run (the compute cut; every rank removes
 * the same). */
void sk_compute_less(double seconds, double removed);
/* sk_compute_less whose kept part always runs whole (a block with per-rank factors). */
void sk_compute_less_whole(double seconds, double removed);
/* A block right before a collective of every rank, outside the main loop: runs only a short
 * part of it (5 % of this rank's duration, at least 50 us); at the report, every rank adds back
 * to the phase the most that any rank skipped, at the pace its kept parts ran (every rank waited
 * for the one that computed longest). Phases are matched by their position, or by the slots
 * sk_keep_slots gives where the classes' phases differ. */
void sk_compute_keep(double seconds);
/* Where the classes have different phases: the slot of each of this class's phases (after
 * sk_start) among all classes' phase names, `n` slots in all; sk_compute_keep's phases are
 * gathered by slot. */
void sk_keep_slots(const int *slots, int n);
/* The compute blocks are processor time (the trace recorded it). Natively, where a node holds
 * more ranks than processors (the union of their CPU affinities, or a cgroup's quota), the
 * prediction is then held to what the node's processors could run: the computation the
 * skeleton did not run, and all the computation the prediction stands for, take at least their
 * sum over the processors.
 * Under SimGrid the platform shares the hosts itself. */
void sk_processor_time(void);
/* Every block cut with sk_compute_less (not the drawn ones) runs only this share of what it
 * keeps; the rest is added back to the prediction as its removed part is. */
void sk_compute_shrink(double share);
/* sk_compute_drawn less `removed` seconds, added back as sk_compute_less does; a draw shorter
 * than `removed` runs nothing and still adds `removed` (every rank adds the same: what counts
 * is the slowest rank's draw, which the build keeps above `removed` but for a bounded bias). */
void sk_compute_drawn_less(int i, double removed);
/* sk_compute_drawn and sk_compute_drawn_less with the draw multiplied by `factor` (this rank's
 * factor at a block where the ranks of its class compute differently). */
void sk_compute_drawn_scaled(int i, double factor);
void sk_compute_drawn_scaled_less(int i, double factor, double removed);
/* sk_compute_keep of a duration drawn from distribution i (times `factor`, in the scaled form):
 * a block before a collective of every rank whose ranks' durations the build draws. */
void sk_compute_drawn_keep(int i);
void sk_compute_drawn_scaled_keep(int i, double factor);
/* Busy computation for `seconds` of the recording machine as this rank recorded them (a value
 * of a replay table: its weight is in it already). */
void sk_compute_as_recorded(double seconds);
/* sk_compute_as_recorded less `removed` seconds, added back as sk_compute_drawn_less does. */
void sk_compute_as_recorded_less(double seconds, double removed);
/* The row of replay table `table` (of `rows` rows) its next execution on this rank runs: 0, 1,
 * …, rows − 1, then from row `again` on again (past the rows of a first iteration replayed
 * apart, which the application ran once). */
long sk_replay_row(int table, long rows, long again);

/* Timing of phases; sk_start synchronises all ranks and starts the clock. */
void sk_start(sk_phase *phases, int n);
void sk_phase_begin(int i);
void sk_phase_end(int i);
/* Ends iteration `it` of the phase being timed: the first one's time is kept, to be counted
 * once (it absorbs the ranks' different arrival at the loop, which the application waited for
 * once, not in every iteration). */
void sk_iteration_end(long it);
/* Begins a part of the phase being timed that is timed as a phase of its own (a kind of time
 * step, a cut inner loop); returns the time. */
double sk_part_begin(void);
/* Adds seconds to phase i (the part begun last, timed inside its phase), and moves the
 * computation the part ran and cut to phase i. */
void sk_phase_add(int i, double seconds);
/* Adds the seconds of an inner loop's first iteration (timed inside its phase) to phase i's
 * first: the loop around it ran it once per iteration, and so did the application. */
void sk_inner_first(int i, double seconds);
/* Phase i is the part a skeleton runs of a stretch between two collectives of all ranks that
 * folds into no loop: its time, times `scale` (the stretch's recorded span over the part's),
 * stands for the whole stretch. Call after sk_start. */
void sk_phase_scale(int i, double scale);

/* Buffered sends (MPI_Bsend): attaches a buffer for `bytes` in `messages` messages, what the
 * skeleton sends buffered with `main_run` iterations of its main loop; more iterations
 * (--iterations) attach in proportion. sk_buffer_detach returns once every buffered message
 * has left. */
void sk_buffer_attach(long long bytes, long long messages, long main_run);
void sk_buffer_detach(void);

/* Gathers the times, prints the report on rank 0. factor: application time / skeleton time
 * expected on the recording machine (the single-ratio prediction). A rank that gets here first
 * waits for the others asleep (MPI_Ibarrier, tested every 100 µs), as an application's rank
 * waits in Open MPI's MPI_Finalize, not polling on a core the others need. */
void sk_report(const char *name, double factor, double recorded_app_s);

/* A status array of at least n entries (MPI_STATUSES_IGNORE trips GCC's -Wstringop-overflow
 * with MPICH's headers). */
MPI_Status *sk_statuses(int n);
/* The wait of a call that had no request to complete in the application (MPI_Waitall over
 * none): it costs nothing, where a progress poll would cost SimGrid's simulated probe time. */
void sk_wait_none(void);

/* Helpers that keep the generated code short. */
void sk_waitall(MPI_Request *req, int n, const int *slots);
void sk_waitany(MPI_Request *req, int n);
void sk_waitsome(MPI_Request *req, int n);
void sk_iprobe(int source, int tag, MPI_Comm comm);
void sk_poll(MPI_Comm comm);
/* n polls that find nothing (MPI_Iprobe of any source and tag): what the application's polling
   loop cost before the call that follows. */
void sk_polls(long n, MPI_Comm comm);
int sk_cart_neighbour(MPI_Comm cart, int ndims, const int *offset);

#endif
