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

/* ---- format constants (trace/FORMAT.md) ---------------------------------------------------- */
#define FORMAT_VERSION 4
#define FLAG_INSTRUCTIONS 1
#define FLAG_CPU_TIME 2
#define TAG_EVENT 0x01
#define TAG_COMM 0x02
#define TAG_UNRECORDED 0x03
#define TAG_FOOTER 0xFF
#define CLOCK_ID_MONOTONIC 1
#define PEER_ANY (-1)
#define PEER_NULL (-2)

enum op {
    OP_INIT = 1, OP_INIT_THREAD = 2, OP_FINALIZE = 3,
    OP_SEND = 10, OP_SSEND = 11, OP_RSEND = 12, OP_BSEND = 13, OP_ISEND = 14, OP_ISSEND = 15,
    OP_IRSEND = 16,
    OP_RECV = 20, OP_IRECV = 21, OP_SENDRECV = 22, OP_SENDRECV_REPLACE = 23, OP_PROBE = 24,
    OP_IPROBE = 25,
    OP_WAIT = 30, OP_WAITALL = 31, OP_WAITANY = 32, OP_WAITSOME = 33, OP_TEST = 34,
    OP_TESTALL = 35, OP_TESTANY = 36, OP_TESTSOME = 37,
    OP_BARRIER = 40, OP_BCAST = 41, OP_REDUCE = 42, OP_ALLREDUCE = 43, OP_SCAN = 44,
    OP_EXSCAN = 45, OP_GATHER = 46, OP_GATHERV = 47, OP_SCATTER = 48, OP_SCATTERV = 49,
    OP_ALLGATHER = 50, OP_ALLGATHERV = 51, OP_ALLTOALL = 52, OP_ALLTOALLV = 53,
    OP_ALLTOALLW = 54, OP_REDUCE_SCATTER = 55, OP_REDUCE_SCATTER_BLOCK = 56,
    OP_IBARRIER = 60, OP_IBCAST = 61, OP_IREDUCE = 62, OP_IALLREDUCE = 63, OP_ISCAN = 64,
    OP_IEXSCAN = 65, OP_IGATHER = 66, OP_IGATHERV = 67, OP_ISCATTER = 68, OP_ISCATTERV = 69,
    OP_IALLGATHER = 70, OP_IALLGATHERV = 71, OP_IALLTOALL = 72, OP_IALLTOALLV = 73,
    OP_IALLTOALLW = 74, OP_IREDUCE_SCATTER = 75, OP_IREDUCE_SCATTER_BLOCK = 76,
    OP_COMM_SPLIT = 80, OP_COMM_DUP = 81, OP_COMM_CREATE = 82, OP_CART_CREATE = 83,
    OP_CART_SUB = 84, OP_COMM_FREE = 85
};

/* ---- state ---------------------------------------------------------------------------------- */
#define BUF_CAP (1u << 20)

struct comm {
    MPI_Comm handle;
    uint32_t id;
    int used;
    int size;   /* size of the group peers are named in (remote group for intercommunicators) */
    int *world; /* world rank of each member */
};

struct req {
    uint64_t key; /* handle bits; 0 = empty slot */
    uint32_t id;
    int is_recv;
    int *world; /* translation table of the request's communicator */
    int size;
};

/* A persistent request as its MPI_Send_init, Ssend_init, Rsend_init, Bsend_init or Recv_init
 * described it, kept until MPI_Request_free: each MPI_Start of it is recorded as the Isend,
 * Issend, Irsend or Irecv it starts. */
struct pers {
    uint64_t key; /* handle bits; 0 = empty slot */
    int op;       /* OP_ISEND, OP_ISSEND, OP_IRSEND or OP_IRECV */
    int64_t peer;
    int tag;
    uint64_t bytes;
    uint32_t comm;
    unsigned wild;
    int *world; /* translation table of the request's communicator */
    int size;
};

static struct {
    int active, finalized;
    int multi; /* MPI_THREAD_MULTIPLE: records are made under `rec_mutex` */
    int rank, size, fd;
    unsigned char *buf;
    size_t len, committed;
    uint64_t t0, last_exit, n_events;
    /* The tracer's own time so far (recording calls after they return), taken out of the
     * timeline so that gaps are the application's computation; and the real exit time of the
     * call whose record is open. */
    uint64_t hidden, open_exit;
    /* The least of the tracer's time between a call's return and the next call's entry time
     * (clock_floor): hidden too, at every call. */
    uint64_t floor;
    int event_open;
    int perf_fd;
    uint64_t instr_prev;
    int cpu_time;              /* record the processor time of compute gaps */
    int time_only;             /* record MPI_Init and MPI_Finalize only */
    uint64_t cpu_gap;           /* processor time of the gap before this call */
    uint64_t cpu_wall;          /* the wall clock at which the current gap began */
    uint64_t cpu_read;          /* the thread CPU clock when it was last read */
    uint64_t cpu_read_wall;     /* the wall clock at which it was last read */
    uint64_t gap_unread;        /* processor time given to gaps since it was last read */
    uint32_t next_req, next_comm;
    struct comm *comms;
    int n_comms, cap_comms;
    struct req *reqs;
    size_t cap_reqs, n_reqs;
    struct pers *pers;
    size_t cap_pers, n_pers;
    int *world_identity;
} T = {.fd = -1, .perf_fd = -1};

/* Calls the tracer does not record as events (one-sided communication, MPI-IO): counted per kind
 * (calls, bytes the origin moves, nanoseconds inside the calls) and written before the footer,
 * one record per kind made. Their time stays in the gap before the next recorded call. */
enum unrec {
    U_PUT, U_GET, U_ACCUMULATE, U_GET_ACCUMULATE, U_FETCH_AND_OP, U_COMPARE_AND_SWAP, U_RPUT,
    U_RGET, U_RACCUMULATE, U_RGET_ACCUMULATE, U_WIN_FENCE, U_WIN_LOCK, U_WIN_UNLOCK,
    U_WIN_LOCK_ALL, U_WIN_UNLOCK_ALL, U_WIN_FLUSH, U_WIN_FLUSH_ALL, U_WIN_FLUSH_LOCAL,
    U_WIN_FLUSH_LOCAL_ALL, U_WIN_SYNC, U_WIN_START, U_WIN_COMPLETE, U_WIN_POST, U_WIN_WAIT,
    U_FILE_OPEN, U_FILE_CLOSE, U_FILE_SET_VIEW, U_FILE_SYNC, U_FILE_READ, U_FILE_READ_AT,
    U_FILE_READ_ALL, U_FILE_READ_AT_ALL, U_FILE_WRITE, U_FILE_WRITE_AT, U_FILE_WRITE_ALL,
    U_FILE_WRITE_AT_ALL, U_N
};
static const char *const unrec_name[U_N] = {
    "Put", "Get", "Accumulate", "Get_accumulate", "Fetch_and_op", "Compare_and_swap", "Rput",
    "Rget", "Raccumulate", "Rget_accumulate", "Win_fence", "Win_lock", "Win_unlock",
    "Win_lock_all", "Win_unlock_all", "Win_flush", "Win_flush_all", "Win_flush_local",
    "Win_flush_local_all", "Win_sync", "Win_start", "Win_complete", "Win_post", "Win_wait",
    "File_open", "File_close", "File_set_view", "File_sync", "File_read", "File_read_at",
    "File_read_all", "File_read_at_all", "File_write", "File_write_at", "File_write_all",
    "File_write_at_all"};
static struct {
    uint64_t calls, bytes, ns;
} U[U_N];

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The tracer's own time that falls between two calls, at the least. A gap is measured from the
 * clock read that ends the tracer's work after one call to the clock read at the next call's
 * entry, so it holds, besides the application's computation, the rest of the first read and
 * the beginning of the second, and the wrapper's return and entry: about 48 ns per call here,
 * in an empty polling loop whose untraced MPI_Test takes 11 ns. Replayed as computation, a
 * program that makes a call every microsecond would run 5 % long. That time is not measured
 * at each call (reading the clock costs what it measures); its least value is measured once,
 * at MPI_Init: from one clock read to the next through a call, the least of many tries. That
 * floor is hidden at every call, so it never takes away time the application spent. */
static uint64_t probe_now(void) { return now_ns(); }
static uint64_t (*volatile probe)(void) = probe_now;

static uint64_t clock_floor(void) {
    uint64_t least = UINT64_MAX;
    for (int i = 0; i < 4096; i++) {
        uint64_t a = now_ns();
        uint64_t b = probe();
        if (b >= a && b - a < least) least = b - a;
    }
    return least == UINT64_MAX ? 0 : least;
}

/* Processor time of this thread: a compute gap's share of the core (less than its wall time
 * when the rank was descheduled). */
static uint64_t cpu_now(void) {
    struct timespec ts;
    if (!T.cpu_time || clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Gaps shorter than this are taken to have run on a processor throughout, and the thread CPU
 * clock is not read for them. In a virtual machine each read is a system call (about a
 * microsecond): read at every call's entry and exit it doubled the run of an application making
 * 200,000 calls per rank, and put a read's cost into every recorded gap. A descheduled thread is
 * away for a scheduler slice (milliseconds), so the gaps it inflates are long and are read; a
 * read costs at most a twentieth of the gap it measures. The clock is also read once this much
 * wall time has passed since it last was, at a call's entry or exit, whichever comes first.
 *
 * A read tells how much processor time the rank had since the one before, not where it had it:
 * in the gaps (the application's computation) or in the calls between them. Ranks that
 * outnumber the cores spend calls off the processor (a waiting call yields it), for
 * microseconds at a time, and computation rarely (a thread is preempted after a slice). So
 * what a read finds missing is taken from the calls first: the gap that ends at a read gets
 * what the rank ran since the read before less what the gaps since were given (their wall
 * time), at most its own wall time. (Estimated as on a processor throughout, the calls' share
 * came out of the gap a read ended: LAMMPS obstacle, a call every 6 us on 4 ranks on 2 cores,
 * was replayed a fifth short of its run; and the polling fixture program's 12 ms blocks after
 * polling loops were recorded as 3.4 ms.) */
#define CPU_READ_NS 20000u

/* Reads the thread CPU clock at wall time `t`. */
static void cpu_read_at(uint64_t t) {
    T.cpu_read = cpu_now();
    T.cpu_read_wall = t;
    T.gap_unread = 0;
}

/* The processor time of the gap that began at `T.cpu_wall` and ends at wall time `t`. */
static uint64_t gap_cpu(uint64_t t) {
    if (!T.cpu_time) return 0;
    uint64_t wall = t > T.cpu_wall ? t - T.cpu_wall : 0;
    uint64_t unread = t > T.cpu_read_wall ? t - T.cpu_read_wall : 0;
    if (wall < CPU_READ_NS && unread < CPU_READ_NS) {
        T.gap_unread += wall;
        return wall;
    }
    uint64_t before = T.cpu_read, given = T.gap_unread;
    cpu_read_at(t);
    uint64_t ran = T.cpu_read > before ? T.cpu_read - before : 0;
    uint64_t gap = ran > given ? ran - given : 0;
    return gap < wall ? gap : wall;
}

/* A gap begins at wall time `t` (a call returned, or the tracer's own work after it ended); the
 * clock is read if it is due, so that what the calls before had is not the gap's. */
static void gap_begins(uint64_t t) {
    if (!T.cpu_time) return;
    if (t > T.cpu_read_wall && t - T.cpu_read_wall >= CPU_READ_NS) cpu_read_at(t);
    T.cpu_wall = t;
}

static uint64_t instr_now(void) {
    uint64_t v = 0;
    if (T.perf_fd >= 0 && read(T.perf_fd, &v, sizeof v) != (ssize_t)sizeof v) v = 0;
    return v;
}

/* ---- output buffer -------------------------------------------------------------------------- */
static void write_all(const unsigned char *p, size_t n) {
    while (n > 0 && T.fd >= 0) {
        ssize_t w = write(T.fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return;
        }
        p += w;
        n -= (size_t)w;
    }
}

/* Writes every whole record; keeps a record in progress. */
static void flush_committed(void) {
    write_all(T.buf, T.committed);
    memmove(T.buf, T.buf + T.committed, T.len - T.committed);
    T.len -= T.committed;
    T.committed = 0;
}

/* Makes room for n more bytes. Records larger than the buffer grow it. */
static void reserve(size_t n) {
    static size_t cap = BUF_CAP;
    if (T.len + n <= cap) return;
    flush_committed();
    if (T.len + n > cap) {
        size_t ncap = cap;
        while (T.len + n > ncap) ncap *= 2;
        unsigned char *nb = realloc(T.buf, ncap);
        if (!nb) abort();
        T.buf = nb;
        cap = ncap;
    }
}

static void put_u8(unsigned v) { T.buf[T.len++] = (unsigned char)v; }
static void put_uvar(uint64_t v) {
    while (v >= 0x80) {
        T.buf[T.len++] = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    T.buf[T.len++] = (unsigned char)v;
}
static void put_svar(int64_t v) { put_uvar(((uint64_t)v << 1) ^ (uint64_t)(v >> 63)); }
static void put_u16(uint16_t v) { put_u8(v & 0xff); put_u8(v >> 8); }
static void put_u32(uint32_t v) { for (int i = 0; i < 4; i++) put_u8((v >> (8 * i)) & 0xff); }
static void put_u64(uint64_t v) { for (int i = 0; i < 8; i++) put_u8((v >> (8 * i)) & 0xff); }
static void put_str(const char *s) {
    size_t n = strlen(s);
    if (n > 4096) n = 4096;
    reserve(n + 10);
    put_uvar(n);
    memcpy(T.buf + T.len, s, n);
    T.len += n;
}
static void commit(void) {
    T.committed = T.len;
    if (T.len > BUF_CAP / 2) flush_committed();
    if (T.event_open) {
        /* The application resumes now: what the tracer did since the call returned is hidden
         * from the next gap, on the wall clock and on the processor clock. */
        T.event_open = 0;
        uint64_t now = now_ns();
        uint64_t rel = now - T.t0;
        if (rel > T.open_exit) T.hidden += rel - T.open_exit;
        T.hidden += T.floor;
        gap_begins(now);
    }
}

/* ---- communicators -------------------------------------------------------------------------- */
static struct comm *comm_find(MPI_Comm c) {
    for (int i = 0; i < T.n_comms; i++)
        if (T.comms[i].used && T.comms[i].handle == c) return &T.comms[i];
    return NULL;
}

static struct comm *comm_add(MPI_Comm c, uint32_t id, int emit) {
    if (T.n_comms == T.cap_comms) {
        T.cap_comms = T.cap_comms ? 2 * T.cap_comms : 16;
        T.comms = realloc(T.comms, (size_t)T.cap_comms * sizeof *T.comms);
        if (!T.comms) abort();
    }
    struct comm *e = &T.comms[T.n_comms++];
    e->handle = c;
    e->id = id;
    e->used = 1;
    int inter = 0;
    PMPI_Comm_test_inter(c, &inter);
    MPI_Group g, wg;
    if (inter) PMPI_Comm_remote_group(c, &g); else PMPI_Comm_group(c, &g);
    PMPI_Group_size(g, &e->size);
    PMPI_Comm_group(MPI_COMM_WORLD, &wg);
    int *ranks = malloc(sizeof(int) * (size_t)(e->size + 1));
    e->world = malloc(sizeof(int) * (size_t)(e->size + 1));
    if (!ranks || !e->world) abort();
    for (int i = 0; i < e->size; i++) ranks[i] = i;
    PMPI_Group_translate_ranks(g, e->size, ranks, wg, e->world);
    free(ranks);
    PMPI_Group_free(&g);
    PMPI_Group_free(&wg);
    if (emit) {
        reserve(32 + 10 * (size_t)e->size);
        put_u8(TAG_COMM);
        put_uvar(id);
        put_uvar((uint64_t)e->size);
        for (int i = 0; i < e->size; i++) put_uvar((uint64_t)(e->world[i] < 0 ? 0 : e->world[i]));
        commit();
    }
    return e;
}

/* The entry of a communicator, defining it in the trace the first time it is seen. */
static int rec_lock(void);
static void rec_unlock(int *held);
static struct comm *comm_get(MPI_Comm c) {
    int held = rec_lock();
    struct comm *e = comm_find(c);
    if (!e) e = comm_add(c, T.next_comm++, 1);
    rec_unlock(&held);
    return e;
}

static int64_t peer_of(const int *world, int size, int r) {
    if (r == MPI_PROC_NULL) return PEER_NULL;
    if (r == MPI_ANY_SOURCE) return PEER_ANY;
    if (r < 0 || r >= size) return PEER_NULL;
    return world[r];
}
static int64_t peer(struct comm *c, int r) { return peer_of(c->world, c->size, r); }
static int64_t root_of(struct comm *c, int r) {
    if (r == MPI_ROOT) return T.rank;
    if (r < 0 || r >= c->size) return -1;
    return c->world[r];
}

/* ---- requests ------------------------------------------------------------------------------- */
static uint64_t req_key(MPI_Request r) {
    uint64_t k = 0;
    memcpy(&k, &r, sizeof r < sizeof k ? sizeof r : sizeof k);
    return k;
}
static size_t slot_of(uint64_t k, size_t cap) { return (size_t)((k * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1); }
static size_t req_slot(uint64_t k) { return slot_of(k, T.cap_reqs); }

/* Requests are kept in an open-addressing multimap keyed by handle bits: MPI libraries hand out
 * the same handle for several requests (OpenMPI's empty request for MPI_PROC_NULL, MPICH's
 * pre-completed requests), so one handle may stand for several pending requests; a completion
 * takes the oldest (smallest id) of them. */
static void req_insert(struct req e);
static void req_grow(void) {
    struct req *old = T.reqs;
    size_t ocap = T.cap_reqs;
    T.cap_reqs = ocap ? 2 * ocap : 1024;
    T.reqs = calloc(T.cap_reqs, sizeof *T.reqs);
    if (!T.reqs) abort();
    T.n_reqs = 0;
    for (size_t i = 0; i < ocap; i++)
        if (old[i].key) req_insert(old[i]);
    free(old);
}

static void req_insert(struct req e) {
    if (2 * (T.n_reqs + 1) > T.cap_reqs) req_grow();
    size_t s = req_slot(e.key);
    while (T.reqs[s].key) s = (s + 1) & (T.cap_reqs - 1);
    T.reqs[s] = e;
    T.n_reqs++;
}

static void req_put(MPI_Request r, uint32_t id, int is_recv, struct comm *c) {
    uint64_t k = req_key(r);
    if (!k || r == MPI_REQUEST_NULL) return;
    req_insert((struct req){k, id, is_recv, c->world, c->size});
}

/* Removes the entry in slot s (backward-shift deletion keeps probe chains intact). */
static void req_del_slot(size_t s) {
    size_t m = T.cap_reqs - 1;
    T.reqs[s].key = 0;
    T.n_reqs--;
    for (size_t j = (s + 1) & m; T.reqs[j].key; j = (j + 1) & m) {
        struct req e = T.reqs[j];
        T.reqs[j].key = 0;
        size_t t = req_slot(e.key);
        while (T.reqs[t].key) t = (t + 1) & m;
        T.reqs[t] = e;
    }
}

/* Takes the oldest pending request with this handle out of the table; id 0 if unknown. */
static struct req req_take(MPI_Request r) {
    struct req none = {req_key(r), 0, 0, NULL, 0};
    uint64_t k = none.key;
    if (!k || r == MPI_REQUEST_NULL || !T.cap_reqs) return none;
    size_t m = T.cap_reqs - 1, best = (size_t)-1;
    for (size_t s = req_slot(k); T.reqs[s].key; s = (s + 1) & m)
        if (T.reqs[s].key == k && (best == (size_t)-1 || T.reqs[s].id < T.reqs[best].id)) best = s;
    if (best == (size_t)-1) return none;
    struct req e = T.reqs[best];
    req_del_slot(best);
    return e;
}

/* `is_recv` of a request of a one-sided call (MPI_Rput, MPI_Rget, …): kept in the table under
 * id 0 so that completions leave it out, as they leave out MPI_REQUEST_NULL (the call that
 * started it is counted, not recorded). */
#define REQ_ONE_SIDED 2

/* Puts a taken request back (its call did not complete it). */
static void req_restore(const struct req *e) {
    if (e->id || e->is_recv == REQ_ONE_SIDED) req_insert(*e);
}

/* ---- persistent requests --------------------------------------------------------------------- */
/* An open-addressing map from handle bits to what the request's init call described; a handle
 * names one persistent request at a time (it is freed before its handle is handed out again). */
static struct pers *pers_find(uint64_t k) {
    if (!k || !T.cap_pers) return NULL;
    for (size_t s = slot_of(k, T.cap_pers); T.pers[s].key; s = (s + 1) & (T.cap_pers - 1))
        if (T.pers[s].key == k) return &T.pers[s];
    return NULL;
}

static void pers_insert(struct pers e) {
    struct pers *same = pers_find(e.key);
    if (same) {
        *same = e;
        return;
    }
    if (2 * (T.n_pers + 1) > T.cap_pers) {
        struct pers *old = T.pers;
        size_t ocap = T.cap_pers;
        T.cap_pers = ocap ? 2 * ocap : 64;
        T.pers = calloc(T.cap_pers, sizeof *T.pers);
        if (!T.pers) abort();
        T.n_pers = 0;
        for (size_t i = 0; i < ocap; i++)
            if (old[i].key) pers_insert(old[i]);
        free(old);
    }
    size_t s = slot_of(e.key, T.cap_pers);
    while (T.pers[s].key) s = (s + 1) & (T.cap_pers - 1);
    T.pers[s] = e;
    T.n_pers++;
}

/* Forgets a freed persistent request (backward-shift deletion keeps probe chains intact). */
static void pers_remove(uint64_t k) {
    struct pers *p = pers_find(k);
    if (!p) return;
    size_t m = T.cap_pers - 1, s = (size_t)(p - T.pers);
    T.pers[s].key = 0;
    T.n_pers--;
    for (size_t j = (s + 1) & m; T.pers[j].key; j = (j + 1) & m) {
        struct pers e = T.pers[j];
        T.pers[j].key = 0;
        size_t t = slot_of(e.key, T.cap_pers);
        while (T.pers[t].key) t = (t + 1) & m;
        T.pers[t] = e;
    }
}

static void pers_define(MPI_Request r, int op, struct comm *c, int64_t peer, int tag,
                        uint64_t bytes, unsigned wild) {
    uint64_t k = req_key(r);
    if (!k || r == MPI_REQUEST_NULL) return;
    pers_insert((struct pers){k, op, peer, tag, bytes, c->id, wild, c->world, c->size});
}

/* ---- records -------------------------------------------------------------------------------- */
/* Threads. A call made inside another call of the same thread (a Fortran entry point calling
 * the C wrapper, MPI calls from a one-sided call) is not recorded: `depth` counts them, per
 * thread. In a program initialised with MPI_THREAD_MULTIPLE, threads may be in MPI calls at
 * the same time: each call's bookkeeping before it and its record after it are made under
 * `rec_mutex` (never the MPI call itself, which may wait for another thread's), so that no
 * record is lost or torn; the rank's records are in the order the calls returned. */
static _Thread_local int depth;
static pthread_mutex_t rec_mutex = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP; /* comm_get takes it too */
static int rec_lock(void) {
    if (!T.multi) return 0;
    pthread_mutex_lock(&rec_mutex);
    return 1;
}
static void rec_unlock(int *held) {
    if (*held) pthread_mutex_unlock(&rec_mutex);
    *held = 0;
}

/* ENTER's lock is released before the MPI call; LEAVE's when the wrapper returns (its record
 * made). */
#define ENTER                                                                                  \
    int enter_held = rec_lock();                                                               \
    uint64_t t_in = now_ns();                                                                  \
    uint64_t i_in = instr_now();                                                               \
    uint64_t c_gap = depth == 0 ? gap_cpu(t_in) : 0;                                          \
    depth++;                                                                                   \
    rec_unlock(&enter_held)
#define LEAVE                                                                                  \
    __attribute__((cleanup(rec_unlock))) int leave_held = rec_lock();                          \
    (void)leave_held;                                                                          \
    depth--;                                                                                   \
    uint64_t t_out = now_ns();                                                                 \
    uint64_t i_gap = i_in - T.instr_prev;                                                      \
    T.instr_prev = instr_now();                                                                \
    if (depth == 0) {                                                                          \
        T.cpu_gap = c_gap;                                                                     \
        gap_begins(t_out);                                                                     \
    }

#define RECORDING (T.active && !T.finalized && depth == 0)
#define TRACING (RECORDING && !T.time_only)

static void ev_begin(int op, uint64_t t_in, uint64_t t_out, uint64_t i_gap, size_t extra) {
    reserve(64 + extra);
    T.event_open = 1;
    T.open_exit = t_out;
    t_in = t_in > T.hidden ? t_in - T.hidden : 0;
    t_out = t_out > T.hidden ? t_out - T.hidden : 0;
    if (t_in < T.last_exit) t_in = T.last_exit;
    if (t_out < t_in) t_out = t_in;
    put_u8(TAG_EVENT);
    put_u8((unsigned)op);
    put_uvar(t_in - T.last_exit);
    put_uvar(t_out - t_in);
    if (T.perf_fd >= 0) put_uvar(i_gap + 1);
    /* The two clocks are read a few hundred nanoseconds apart: processor time beyond the wall
     * time is that skew. */
    if (T.cpu_time) put_uvar(T.cpu_gap < t_in - T.last_exit ? T.cpu_gap : t_in - T.last_exit);
    T.last_exit = t_out;
    T.n_events++;
}

static uint64_t type_bytes(int count, MPI_Datatype t) {
    int sz = 0;
    if (count <= 0 || t == MPI_DATATYPE_NULL) return 0;
    PMPI_Type_size(t, &sz);
    return (uint64_t)count * (uint64_t)(sz < 0 ? 0 : sz);
}

static uint64_t status_bytes(const MPI_Status *st) {
    int n = 0;
    if (st->MPI_SOURCE == MPI_PROC_NULL) return 0;
    PMPI_Get_count(st, MPI_BYTE, &n);
    return n == MPI_UNDEFINED || n < 0 ? 0 : (uint64_t)n;
}

static void rec_simple(int op, uint64_t t_in, uint64_t t_out, uint64_t i_gap) {
    ev_begin(op, t_in, t_out, i_gap, 0);
    commit();
}

/* Wildcard flags of a receive or probe: bit 0 MPI_ANY_SOURCE, bit 1 MPI_ANY_TAG. */
static unsigned wildcards(int source, int tag) {
    return (source == MPI_ANY_SOURCE ? 1u : 0u) | (tag == MPI_ANY_TAG ? 2u : 0u);
}

static void rec_p2p(int op, uint64_t t_in, uint64_t t_out, uint64_t i_gap, int64_t p, int tag,
                    uint64_t bytes, uint32_t comm, uint32_t req, unsigned wild) {
    ev_begin(op, t_in, t_out, i_gap, 0);
    put_svar(p);
    put_svar(tag);
    put_uvar(bytes);
    put_uvar(comm);
    put_uvar(req);
    put_u8(wild);
    commit();
}

/* One completed request: its id, and for receives what the status says. */
static void put_completed(const struct req *r, const MPI_Status *st) {
    put_uvar(r->id);
    if (r->is_recv && st && st->MPI_SOURCE != MPI_PROC_NULL && st->MPI_SOURCE >= 0) {
        int64_t src = peer_of(r->world, r->size, st->MPI_SOURCE);
        put_u8(1);
        put_uvar((uint64_t)(src < 0 ? 0 : src));
        put_svar(st->MPI_TAG);
        put_uvar(status_bytes(st));
    } else {
        put_u8(0);
    }
}

struct coll {
    struct comm *c;
    int64_t root;
    uint64_t send, recv;
    const int *scounts, *rcounts; /* per-rank element counts (v variants) */
    MPI_Datatype stype, rtype;
    const MPI_Datatype *stypes, *rtypes; /* per-rank types (w variants) */
    int n;
};

static void put_counts(const int *counts, MPI_Datatype t, const MPI_Datatype *ts, int n) {
    put_uvar((uint64_t)n);
    for (int i = 0; i < n; i++) put_uvar(type_bytes(counts[i], ts ? ts[i] : t));
}

static void rec_coll(int op, uint64_t t_in, uint64_t t_out, uint64_t i_gap, struct coll *k,
                     MPI_Request *req) {
    uint32_t rid = 0;
    if (req) {
        rid = ++T.next_req;
        req_put(*req, rid, 0, k->c);
    }
    ev_begin(op, t_in, t_out, i_gap, 20 * (size_t)(k->n + 1));
    uint64_t send = k->send, recv = k->recv;
    if (k->scounts || k->rcounts) {
        /* totals of the v/w variants are the sums of the per-rank sizes */
        if (k->scounts) { send = 0; for (int i = 0; i < k->n; i++) send += type_bytes(k->scounts[i], k->stypes ? k->stypes[i] : k->stype); }
        if (k->rcounts) { recv = 0; for (int i = 0; i < k->n; i++) recv += type_bytes(k->rcounts[i], k->rtypes ? k->rtypes[i] : k->rtype); }
    }
    put_uvar(k->c->id);
    put_svar(k->root);
    put_uvar(send);
    put_uvar(recv);
    put_u8((k->scounts ? 1u : 0u) | (k->rcounts ? 2u : 0u));
    if (k->scounts) put_counts(k->scounts, k->stype, k->stypes, k->n);
    if (k->rcounts) put_counts(k->rcounts, k->rtype, k->rtypes, k->n);
    put_uvar(rid);
    commit();
}

static void rec_comm(int op, uint64_t t_in, uint64_t t_out, uint64_t i_gap, struct comm *parent,
                     MPI_Comm created, int has_split, int color, int key) {
    /* Read before the communicator created is added: adding it may move the table `parent`
     * points into. */
    uint32_t parent_id = parent->id;
    struct comm *nc = NULL;
    int nd = 0, dims[64], periods[64], coords[64];
    if (created != MPI_COMM_NULL) {
        nc = comm_add(created, T.next_comm++, 1);
        int topo = MPI_UNDEFINED;
        PMPI_Topo_test(created, &topo);
        if (topo == MPI_CART) {
            PMPI_Cartdim_get(created, &nd);
            if (nd > 64) nd = 0;
            if (nd > 0) PMPI_Cart_get(created, nd, dims, periods, coords);
        }
    }
    ev_begin(op, t_in, t_out, i_gap, 16 + 12 * (size_t)nd);
    put_uvar(parent_id);
    put_uvar(nc ? (uint64_t)nc->id + 1 : 0);
    if (has_split) {
        put_u8(1);
        put_svar(color);
        put_svar(key);
    } else if (nd > 0) {
        /* the Cartesian topology of the communicator created (Cart_create, Cart_sub, a Comm_dup
         * of a Cartesian communicator) */
        put_u8(2);
        put_uvar((uint64_t)nd);
        for (int i = 0; i < nd; i++) {
            put_uvar((uint64_t)(dims[i] < 0 ? 0 : dims[i]));
            put_u8(periods[i] ? 1 : 0);
        }
    } else {
        put_u8(0);
    }
    commit();
}

/* ---- start and end -------------------------------------------------------------------------- */
static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGABRT, SIGTERM, SIGINT, SIGFPE, SIGILL};
static struct sigaction old_actions[sizeof fatal_signals / sizeof fatal_signals[0]];

/* On a fatal signal: write the whole records buffered so far (no footer: the file reads as
 * incomplete), then let the previous handler or the default action run. */
static void on_fatal(int sig) {
    if (T.active && !T.finalized && T.fd >= 0) {
        write_all(T.buf, T.committed);
        T.committed = T.len = 0;
    }
    for (size_t i = 0; i < sizeof fatal_signals / sizeof fatal_signals[0]; i++)
        if (fatal_signals[i] == sig) sigaction(sig, &old_actions[i], NULL);
    raise(sig);
}

static void at_exit(void) {
    if (T.active && !T.finalized && T.fd >= 0) {
        flush_committed();
        close(T.fd);
        T.fd = -1;
    }
}

static void open_counter(void) {
    const char *cpu = getenv("MPISKEL_CPU_TIME");
    T.cpu_time = cpu && strcmp(cpu, "1") == 0;
    const char *only = getenv("MPISKEL_TIME_ONLY");
    T.time_only = only && strcmp(only, "1") == 0;
    if (T.time_only) T.cpu_time = 0;
    /* With several threads in MPI, a rank's gaps run on more than one thread: the thread CPU
     * clock of the thread that makes a call does not measure them, so they are wall time. */
    if (T.multi) T.cpu_time = 0;
    const char *want = getenv("MPISKEL_INSTRUCTIONS");
    if (!want || strcmp(want, "1") != 0) return;
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.type = PERF_TYPE_HARDWARE;
    a.size = sizeof a;
    a.config = PERF_COUNT_HW_INSTRUCTIONS;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    T.perf_fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
    if (T.perf_fd >= 0) T.instr_prev = instr_now();
}

static void start(int op, uint64_t t_in, uint64_t t_out) {
    PMPI_Comm_rank(MPI_COMM_WORLD, &T.rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &T.size);
    const char *dir = getenv("MPISKEL_TRACE_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/rank-%d.mpt", dir && *dir ? dir : ".", T.rank);
    T.fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (T.fd < 0) {
        fprintf(stderr, "mpiskel tracer: rank %d: cannot create %s: %s; this rank is not traced\n",
                T.rank, path, strerror(errno));
        return;
    }
    T.buf = malloc(BUF_CAP);
    if (!T.buf) abort();
    open_counter();
    T.t0 = t_in;
    T.last_exit = 0;
    T.next_comm = 2;

    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    uint64_t unix_now = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
    uint64_t since = now_ns() - t_in;
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    char lib[MPI_MAX_LIBRARY_VERSION_STRING + 1] = "";
    int liblen = 0;
    PMPI_Get_library_version(lib, &liblen);
    lib[liblen < 0 ? 0 : (liblen > MPI_MAX_LIBRARY_VERSION_STRING ? MPI_MAX_LIBRARY_VERSION_STRING : liblen)] = 0;
    char *nl = strchr(lib, '\n');
    if (nl) *nl = 0;
    for (int i = (int)strlen(lib) - 1; i >= 0 && (lib[i] == ' ' || lib[i] == ','); i--) lib[i] = 0;

    reserve(4096 + 512);
    for (const char *m = "MPISKTR"; *m; m++) put_u8((unsigned char)*m);
    put_u8(0);
    put_u16(FORMAT_VERSION);
    put_u16((T.perf_fd >= 0 ? FLAG_INSTRUCTIONS : 0) | (T.cpu_time ? FLAG_CPU_TIME : 0));
    put_u32((uint32_t)T.rank);
    put_u32((uint32_t)T.size);
    put_u8(CLOCK_ID_MONOTONIC);
    put_u64(t_in);
    put_u64(unix_now - since);
    put_u32((uint32_t)getpid());
    put_str(host);
    put_str(lib);
    commit();

    /* MPI_COMM_WORLD is id 0 and MPI_COMM_SELF id 1; neither is written as a definition. */
    comm_add(MPI_COMM_WORLD, 0, 0);
    comm_add(MPI_COMM_SELF, 1, 0);

    T.floor = T.time_only ? 0 : clock_floor();
    T.active = 1;
    /* Init: gap 0, and the instruction count and processor time start here. */
    T.instr_prev = instr_now();
    T.cpu_gap = 0;
    T.cpu_wall = now_ns();
    cpu_read_at(T.cpu_wall);
    ev_begin(op, 0, t_out - t_in, 0, 0);
    commit();
    flush_committed();
    atexit(at_exit);
    for (size_t i = 0; i < sizeof fatal_signals / sizeof fatal_signals[0]; i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fatal;
        sigemptyset(&sa.sa_mask);
        sigaction(fatal_signals[i], &sa, &old_actions[i]);
    }
}

/* Timestamps in the file are relative to the trace start. */
#define REL(t) ((t) - T.t0)

int MPI_Init(int *argc, char ***argv) {
    uint64_t t_in = now_ns();
    int rc = PMPI_Init(argc, argv);
    uint64_t t_out = now_ns();
    if (rc == MPI_SUCCESS) start(OP_INIT, t_in, t_out);
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
    uint64_t t_in = now_ns();
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    uint64_t t_out = now_ns();
    if (rc == MPI_SUCCESS) {
        T.multi = *provided == MPI_THREAD_MULTIPLE;
        start(OP_INIT_THREAD, t_in, t_out);
    }
    return rc;
}

int MPI_Finalize(void) {
    if (!RECORDING) return PMPI_Finalize();
    ENTER;
    int rc = PMPI_Finalize();
    LEAVE;
    rec_simple(OP_FINALIZE, REL(t_in), REL(t_out), i_gap);
    for (int k = 0; k < U_N; k++) {
        if (!U[k].calls) continue;
        reserve(64);
        put_u8(TAG_UNRECORDED);
        put_str(unrec_name[k]);
        put_uvar(U[k].calls);
        put_uvar(U[k].bytes);
        put_uvar(U[k].ns);
        commit();
    }
    reserve(32);
    put_u8(TAG_FOOTER);
    put_uvar(T.n_events);
    for (const char *m = "MPISKEND"; *m; m++) put_u8((unsigned char)*m);
    commit();
    flush_committed();
    close(T.fd);
    T.fd = -1;
    T.finalized = 1;
    if (T.perf_fd >= 0) close(T.perf_fd);
    return rc;
}

/* ---- point to point ------------------------------------------------------------------------- */
#define BLOCKING_SEND(NAME, OP)                                                                \
    int MPI_##NAME(const void *buf, int count, MPI_Datatype dt, int dest, int tag,             \
                   MPI_Comm comm) {                                                            \
        if (!TRACING) return PMPI_##NAME(buf, count, dt, dest, tag, comm);                     \
        ENTER;                                                                                 \
        int rc = PMPI_##NAME(buf, count, dt, dest, tag, comm);                                 \
        LEAVE;                                                                                 \
        struct comm *c = comm_get(comm);                                                       \
        rec_p2p(OP, REL(t_in), REL(t_out), i_gap, peer(c, dest), tag, type_bytes(count, dt),   \
                c->id, 0, 0);                                                                  \
        return rc;                                                                             \
    }
BLOCKING_SEND(Send, OP_SEND)
BLOCKING_SEND(Ssend, OP_SSEND)
BLOCKING_SEND(Rsend, OP_RSEND)
BLOCKING_SEND(Bsend, OP_BSEND)

#define NONBLOCKING_SEND(NAME, OP)                                                             \
    int MPI_##NAME(const void *buf, int count, MPI_Datatype dt, int dest, int tag,             \
                   MPI_Comm comm, MPI_Request *req) {                                          \
        if (!TRACING) return PMPI_##NAME(buf, count, dt, dest, tag, comm, req);                \
        ENTER;                                                                                 \
        int rc = PMPI_##NAME(buf, count, dt, dest, tag, comm, req);                            \
        LEAVE;                                                                                 \
        struct comm *c = comm_get(comm);                                                       \
        uint32_t id = ++T.next_req;                                                            \
        req_put(*req, id, 0, c);                                                               \
        rec_p2p(OP, REL(t_in), REL(t_out), i_gap, peer(c, dest), tag, type_bytes(count, dt),   \
                c->id, id, 0);                                                                 \
        return rc;                                                                             \
    }
NONBLOCKING_SEND(Isend, OP_ISEND)
NONBLOCKING_SEND(Issend, OP_ISSEND)
NONBLOCKING_SEND(Irsend, OP_IRSEND)
/* A buffered send completes locally, as a standard one does when the library buffers it: it is
 * recorded as MPI_Isend (as SST DUMPI's reader takes it too); where the skeleton needs the
 * buffer, its deadlock check buffers the send again. */
NONBLOCKING_SEND(Ibsend, OP_ISEND)

/* Persistent requests: the init call is remembered, not recorded; each MPI_Start records the
 * send or receive it starts, under a new request id. */
#define PERSISTENT_SEND(NAME, OP)                                                              \
    int MPI_##NAME(const void *buf, int count, MPI_Datatype dt, int dest, int tag,             \
                   MPI_Comm comm, MPI_Request *req) {                                          \
        int rc = PMPI_##NAME(buf, count, dt, dest, tag, comm, req);                            \
        if (TRACING && rc == MPI_SUCCESS) {                                                    \
            struct comm *c = comm_get(comm);                                                   \
            pers_define(*req, OP, c, peer(c, dest), tag, type_bytes(count, dt), 0);            \
        }                                                                                      \
        return rc;                                                                             \
    }
PERSISTENT_SEND(Send_init, OP_ISEND)
PERSISTENT_SEND(Ssend_init, OP_ISSEND)
PERSISTENT_SEND(Rsend_init, OP_IRSEND)
PERSISTENT_SEND(Bsend_init, OP_ISEND)

int MPI_Recv_init(void *buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm,
                  MPI_Request *req) {
    int rc = PMPI_Recv_init(buf, count, dt, source, tag, comm, req);
    if (TRACING && rc == MPI_SUCCESS) {
        struct comm *c = comm_get(comm);
        pers_define(*req, OP_IRECV, c, peer(c, source), tag, type_bytes(count, dt),
                    wildcards(source, tag));
    }
    return rc;
}

/* Records one started persistent request as the call its init described. */
static void rec_start(const struct pers *d, uint64_t t_in, uint64_t t_out, uint64_t i_gap) {
    uint32_t id = ++T.next_req;
    req_insert((struct req){d->key, id, d->op == OP_IRECV, d->world, d->size});
    rec_p2p(d->op, t_in, t_out, i_gap, d->peer, d->tag, d->bytes, d->comm, id, d->wild);
}

int MPI_Start(MPI_Request *req) {
    struct pers *p = TRACING ? pers_find(req_key(*req)) : NULL;
    /* not a request the tracer saw defined (made before tracing, or a persistent collective) */
    if (!p) return PMPI_Start(req);
    struct pers d = *p;
    ENTER;
    int rc = PMPI_Start(req);
    LEAVE;
    if (rc == MPI_SUCCESS) rec_start(&d, REL(t_in), REL(t_out), i_gap);
    return rc;
}

/* One record per request started: the first holds the call's time and the gap before it, the
 * others follow it with none. */
int MPI_Startall(int n, MPI_Request reqs[]) {
    if (!TRACING || n <= 0) return PMPI_Startall(n, reqs);
    struct pers small[16];
    struct pers *d = n <= 16 ? small : malloc(sizeof(struct pers) * (size_t)n);
    if (!d) abort();
    int known = 0;
    for (int i = 0; i < n; i++) {
        struct pers *p = pers_find(req_key(reqs[i]));
        d[i] = p ? *p : (struct pers){0};
        known += p != NULL;
    }
    int rc;
    if (!known) {
        rc = PMPI_Startall(n, reqs);
    } else {
        ENTER;
        rc = PMPI_Startall(n, reqs);
        LEAVE;
        int first = 1;
        for (int i = 0; i < n && rc == MPI_SUCCESS; i++) {
            if (!d[i].key) continue;
            rec_start(&d[i], first ? REL(t_in) : REL(t_out), REL(t_out), first ? i_gap : 0);
            T.cpu_gap = 0;
            first = 0;
        }
    }
    if (d != small) free(d);
    return rc;
}

/* A freed request is forgotten: a persistent one's description, and a pending one's entry (its
 * handle may be handed out again for another request). */
int MPI_Request_free(MPI_Request *req) {
    if (TRACING) {
        pers_remove(req_key(*req));
        (void)req_take(*req);
    }
    return PMPI_Request_free(req);
}

int MPI_Recv(void *buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm,
             MPI_Status *status) {
    if (!TRACING) return PMPI_Recv(buf, count, dt, source, tag, comm, status);
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    ENTER;
    int rc = PMPI_Recv(buf, count, dt, source, tag, comm, st);
    LEAVE;
    struct comm *c = comm_get(comm);
    int64_t p = source == MPI_PROC_NULL ? PEER_NULL : peer(c, st->MPI_SOURCE);
    /* from MPI_PROC_NULL nothing arrives: keep the size the program posted */
    rec_p2p(OP_RECV, REL(t_in), REL(t_out), i_gap, p, source == MPI_PROC_NULL ? tag : st->MPI_TAG,
            source == MPI_PROC_NULL ? type_bytes(count, dt) : status_bytes(st), c->id, 0,
            wildcards(source, tag));
    return rc;
}

int MPI_Irecv(void *buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm,
              MPI_Request *req) {
    if (!TRACING) return PMPI_Irecv(buf, count, dt, source, tag, comm, req);
    ENTER;
    int rc = PMPI_Irecv(buf, count, dt, source, tag, comm, req);
    LEAVE;
    struct comm *c = comm_get(comm);
    uint32_t id = ++T.next_req;
    req_put(*req, id, 1, c);
    rec_p2p(OP_IRECV, REL(t_in), REL(t_out), i_gap, peer(c, source), tag, type_bytes(count, dt),
            c->id, id, wildcards(source, tag));
    return rc;
}

int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dest, int stag,
                 void *rbuf, int rcount, MPI_Datatype rtype, int source, int rtag, MPI_Comm comm,
                 MPI_Status *status) {
    if (!TRACING)
        return PMPI_Sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag,
                             comm, status);
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    ENTER;
    int rc = PMPI_Sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag,
                           comm, st);
    LEAVE;
    struct comm *c = comm_get(comm);
    ev_begin(OP_SENDRECV, REL(t_in), REL(t_out), i_gap, 0);
    put_svar(peer(c, dest));
    put_svar(stag);
    put_uvar(type_bytes(scount, stype));
    put_svar(source == MPI_PROC_NULL ? PEER_NULL : peer(c, st->MPI_SOURCE));
    put_svar(source == MPI_PROC_NULL ? rtag : st->MPI_TAG);
    put_uvar(source == MPI_PROC_NULL ? type_bytes(rcount, rtype) : status_bytes(st));
    put_uvar(c->id);
    commit();
    return rc;
}

int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype dt, int dest, int stag, int source,
                         int rtag, MPI_Comm comm, MPI_Status *status) {
    if (!TRACING)
        return PMPI_Sendrecv_replace(buf, count, dt, dest, stag, source, rtag, comm, status);
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    ENTER;
    int rc = PMPI_Sendrecv_replace(buf, count, dt, dest, stag, source, rtag, comm, st);
    LEAVE;
    struct comm *c = comm_get(comm);
    ev_begin(OP_SENDRECV_REPLACE, REL(t_in), REL(t_out), i_gap, 0);
    put_svar(peer(c, dest));
    put_svar(stag);
    put_uvar(type_bytes(count, dt));
    put_svar(source == MPI_PROC_NULL ? PEER_NULL : peer(c, st->MPI_SOURCE));
    put_svar(source == MPI_PROC_NULL ? rtag : st->MPI_TAG);
    put_uvar(source == MPI_PROC_NULL ? type_bytes(count, dt) : status_bytes(st));
    put_uvar(c->id);
    commit();
    return rc;
}

int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status) {
    if (!TRACING) return PMPI_Probe(source, tag, comm, status);
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    ENTER;
    int rc = PMPI_Probe(source, tag, comm, st);
    LEAVE;
    struct comm *c = comm_get(comm);
    int64_t p = source == MPI_PROC_NULL ? PEER_NULL : peer(c, st->MPI_SOURCE);
    rec_p2p(OP_PROBE, REL(t_in), REL(t_out), i_gap, p, source == MPI_PROC_NULL ? tag : st->MPI_TAG,
            status_bytes(st), c->id, 0, wildcards(source, tag));
    return rc;
}

int MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status) {
    if (!TRACING) return PMPI_Iprobe(source, tag, comm, flag, status);
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    ENTER;
    int rc = PMPI_Iprobe(source, tag, comm, flag, st);
    LEAVE;
    struct comm *c = comm_get(comm);
    int found = *flag && source != MPI_PROC_NULL;
    rec_p2p(OP_IPROBE, REL(t_in), REL(t_out), i_gap,
            found ? peer(c, st->MPI_SOURCE) : peer(c, source), found ? st->MPI_TAG : tag,
            found ? status_bytes(st) : 0, c->id, 0, wildcards(source, tag));
    return rc;
}

/* ---- completion ----------------------------------------------------------------------------- */
/* The requests given to a Wait/Test call, taken out of the table before the call. After it, the
 * completed ones are written and the others put back. `e[i].key == 0` marks a position that
 * held MPI_REQUEST_NULL. */
struct saved {
    struct req small[16];
    struct req *e;
    MPI_Status small_st[16];
    MPI_Status *st;
    int n;
};

static void save_reqs(struct saved *s, int n, const MPI_Request *reqs) {
    s->n = n < 0 ? 0 : n;
    s->e = s->n <= 16 ? s->small : malloc(sizeof(struct req) * (size_t)s->n);
    s->st = s->n <= 16 ? s->small_st : malloc(sizeof(MPI_Status) * (size_t)s->n);
    if (!s->e || !s->st) abort();
    for (int i = 0; i < s->n; i++) {
        if (reqs[i] == MPI_REQUEST_NULL) s->e[i] = (struct req){0, 0, 0, NULL, 0};
        else s->e[i] = req_take(reqs[i]);
        /* an inactive persistent request completes at once, as MPI_REQUEST_NULL does */
        if (s->e[i].key && !s->e[i].id && pers_find(s->e[i].key)) s->e[i].key = 0;
    }
}

/* Writes the completion record: `done[i]` says whether position i completed, `st_of[i]` is its
 * status. Positions not completed go back into the table. */
static void finish_completion(int op, uint64_t t_in, uint64_t t_out, uint64_t i_gap,
                              struct saved *s, const char *done, MPI_Status *const *st_of) {
    int count = 0;
    for (int i = 0; i < s->n; i++)
        count += done[i] && s->e[i].key && s->e[i].is_recv != REQ_ONE_SIDED;
    ev_begin(op, t_in, t_out, i_gap, 32 * (size_t)count);
    put_uvar((uint64_t)s->n);
    put_uvar((uint64_t)count);
    for (int i = 0; i < s->n; i++) {
        if (!s->e[i].key) continue;
        if (!done[i]) req_restore(&s->e[i]);
        else if (s->e[i].is_recv != REQ_ONE_SIDED) put_completed(&s->e[i], st_of[i]);
    }
    commit();
    if (s->e != s->small) free(s->e);
    if (s->st != s->small_st) free(s->st);
}

/* Scratch arrays sized for one call. */
#define DONE_ARRAYS(n)                                                                         \
    char done_small[16] = {0};                                                                 \
    MPI_Status *stp_small[16];                                                                 \
    char *done = (n) <= 16 ? done_small : calloc((size_t)(n), 1);                              \
    MPI_Status **st_of = (n) <= 16 ? stp_small : malloc(sizeof(MPI_Status *) * (size_t)(n));  \
    if (!done || !st_of) abort();                                                              \
    for (int i_ = 0; i_ < (n); i_++) st_of[i_] = NULL
#define FREE_DONE_ARRAYS                                                                       \
    if (done != done_small) free(done);                                                        \
    if (st_of != stp_small) free(st_of)

static int wait_test_one(int op, MPI_Request *req, int *flag, MPI_Status *status) {
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    struct saved s;
    save_reqs(&s, 1, req);
    int f = 1;
    ENTER;
    int rc = op == OP_WAIT ? PMPI_Wait(req, st) : PMPI_Test(req, &f, st);
    LEAVE;
    if (flag) *flag = f;
    char done = (char)f;
    MPI_Status *stp = st;
    finish_completion(op, REL(t_in), REL(t_out), i_gap, &s, &done, &stp);
    return rc;
}

int MPI_Wait(MPI_Request *req, MPI_Status *status) {
    if (!TRACING) return PMPI_Wait(req, status);
    return wait_test_one(OP_WAIT, req, NULL, status);
}

int MPI_Test(MPI_Request *req, int *flag, MPI_Status *status) {
    if (!TRACING) return PMPI_Test(req, flag, status);
    return wait_test_one(OP_TEST, req, flag, status);
}

static int wait_test_all(int op, int n, MPI_Request reqs[], int *flag, MPI_Status statuses[]) {
    struct saved s;
    save_reqs(&s, n, reqs);
    int f = 1;
    ENTER;
    int rc = op == OP_WAITALL ? PMPI_Waitall(n, reqs, s.st) : PMPI_Testall(n, reqs, &f, s.st);
    LEAVE;
    if (flag) *flag = f;
    if (statuses != MPI_STATUSES_IGNORE && f) memcpy(statuses, s.st, sizeof(MPI_Status) * (size_t)s.n);
    DONE_ARRAYS(s.n);
    for (int i = 0; i < s.n; i++) done[i] = (char)f, st_of[i] = &s.st[i];
    finish_completion(op, REL(t_in), REL(t_out), i_gap, &s, done, st_of);
    FREE_DONE_ARRAYS;
    return rc;
}

int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status statuses[]) {
    if (!TRACING) return PMPI_Waitall(n, reqs, statuses);
    return wait_test_all(OP_WAITALL, n, reqs, NULL, statuses);
}

int MPI_Testall(int n, MPI_Request reqs[], int *flag, MPI_Status statuses[]) {
    if (!TRACING) return PMPI_Testall(n, reqs, flag, statuses);
    return wait_test_all(OP_TESTALL, n, reqs, flag, statuses);
}

static int wait_test_any(int op, int n, MPI_Request reqs[], int *index, int *flag,
                         MPI_Status *status) {
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    struct saved s;
    save_reqs(&s, n, reqs);
    int f = 1;
    ENTER;
    int rc = op == OP_WAITANY ? PMPI_Waitany(n, reqs, index, st)
                              : PMPI_Testany(n, reqs, index, &f, st);
    LEAVE;
    if (flag) *flag = f;
    DONE_ARRAYS(s.n);
    if (f && *index != MPI_UNDEFINED && *index >= 0 && *index < s.n) {
        done[*index] = 1;
        st_of[*index] = st;
    }
    finish_completion(op, REL(t_in), REL(t_out), i_gap, &s, done, st_of);
    FREE_DONE_ARRAYS;
    return rc;
}

int MPI_Waitany(int n, MPI_Request reqs[], int *index, MPI_Status *status) {
    if (!TRACING) return PMPI_Waitany(n, reqs, index, status);
    return wait_test_any(OP_WAITANY, n, reqs, index, NULL, status);
}

int MPI_Testany(int n, MPI_Request reqs[], int *index, int *flag, MPI_Status *status) {
    if (!TRACING) return PMPI_Testany(n, reqs, index, flag, status);
    return wait_test_any(OP_TESTANY, n, reqs, index, flag, status);
}

static int wait_test_some(int op, int n, MPI_Request reqs[], int *outcount, int indices[],
                          MPI_Status statuses[]) {
    struct saved s;
    save_reqs(&s, n, reqs);
    ENTER;
    int rc = op == OP_WAITSOME ? PMPI_Waitsome(n, reqs, outcount, indices, s.st)
                               : PMPI_Testsome(n, reqs, outcount, indices, s.st);
    LEAVE;
    int out = *outcount == MPI_UNDEFINED ? 0 : *outcount;
    if (statuses != MPI_STATUSES_IGNORE && out > 0)
        memcpy(statuses, s.st, sizeof(MPI_Status) * (size_t)out);
    DONE_ARRAYS(s.n);
    for (int k = 0; k < out; k++)
        if (indices[k] >= 0 && indices[k] < s.n) done[indices[k]] = 1, st_of[indices[k]] = &s.st[k];
    finish_completion(op, REL(t_in), REL(t_out), i_gap, &s, done, st_of);
    FREE_DONE_ARRAYS;
    return rc;
}

int MPI_Waitsome(int n, MPI_Request reqs[], int *outcount, int indices[], MPI_Status statuses[]) {
    if (!TRACING) return PMPI_Waitsome(n, reqs, outcount, indices, statuses);
    return wait_test_some(OP_WAITSOME, n, reqs, outcount, indices, statuses);
}

int MPI_Testsome(int n, MPI_Request reqs[], int *outcount, int indices[], MPI_Status statuses[]) {
    if (!TRACING) return PMPI_Testsome(n, reqs, outcount, indices, statuses);
    return wait_test_some(OP_TESTSOME, n, reqs, outcount, indices, statuses);
}

/* ---- collectives ---------------------------------------------------------------------------- */
static int comm_size_of(MPI_Comm comm) {
    int n = 0, inter = 0;
    PMPI_Comm_test_inter(comm, &inter);
    if (inter) PMPI_Comm_remote_size(comm, &n); else PMPI_Comm_size(comm, &n);
    return n;
}
static int comm_rank_of(MPI_Comm comm) {
    int r = 0;
    PMPI_Comm_rank(comm, &r);
    return r;
}

/* A collective wrapper: CALL is the PMPI call, SETUP fills `k` (after the call). */
#define COLL(OP, CALL, REQ, SETUP)                                                             \
    {                                                                                          \
        if (!TRACING) return CALL;                                                             \
        ENTER;                                                                                 \
        int rc = CALL;                                                                         \
        LEAVE;                                                                                 \
        struct coll k;                                                                         \
        memset(&k, 0, sizeof k);                                                               \
        k.c = comm_get(comm);                                                                  \
        k.root = -1;                                                                           \
        k.n = comm_size_of(comm);                                                              \
        SETUP;                                                                                 \
        rec_coll(OP, REL(t_in), REL(t_out), i_gap, &k, REQ);                                   \
        return rc;                                                                             \
    }

#define IS_ROOT (root == MPI_ROOT || (root >= 0 && comm_rank_of(comm) == root))

int MPI_Barrier(MPI_Comm comm) COLL(OP_BARRIER, PMPI_Barrier(comm), NULL, (void)0)
int MPI_Ibarrier(MPI_Comm comm, MPI_Request *req)
    COLL(OP_IBARRIER, PMPI_Ibarrier(comm, req), req, (void)0)

#define BCAST_SETUP k.root = root_of(k.c, root); k.send = k.recv = type_bytes(count, dt)
int MPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm)
    COLL(OP_BCAST, PMPI_Bcast(buf, count, dt, root, comm), NULL, BCAST_SETUP)
int MPI_Ibcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, MPI_Request *req)
    COLL(OP_IBCAST, PMPI_Ibcast(buf, count, dt, root, comm, req), req, BCAST_SETUP)

#define REDUCE_SETUP                                                                           \
    k.root = root_of(k.c, root);                                                               \
    k.send = type_bytes(count, dt);                                                            \
    k.recv = IS_ROOT ? k.send : 0
int MPI_Reduce(const void *s, void *r, int count, MPI_Datatype dt, MPI_Op op, int root,
               MPI_Comm comm)
    COLL(OP_REDUCE, PMPI_Reduce(s, r, count, dt, op, root, comm), NULL, REDUCE_SETUP)
int MPI_Ireduce(const void *s, void *r, int count, MPI_Datatype dt, MPI_Op op, int root,
                MPI_Comm comm, MPI_Request *req)
    COLL(OP_IREDUCE, PMPI_Ireduce(s, r, count, dt, op, root, comm, req), req, REDUCE_SETUP)

#define SYMMETRIC_SETUP k.send = k.recv = type_bytes(count, dt)
#define ALLREDUCE_LIKE(NAME, OP, INAME, IOP)                                                   \
    int MPI_##NAME(const void *s, void *r, int count, MPI_Datatype dt, MPI_Op op,              \
                   MPI_Comm comm)                                                              \
        COLL(OP, PMPI_##NAME(s, r, count, dt, op, comm), NULL, SYMMETRIC_SETUP)                \
    int MPI_##INAME(const void *s, void *r, int count, MPI_Datatype dt, MPI_Op op,             \
                    MPI_Comm comm, MPI_Request *req)                                           \
        COLL(IOP, PMPI_##INAME(s, r, count, dt, op, comm, req), req, SYMMETRIC_SETUP)
ALLREDUCE_LIKE(Allreduce, OP_ALLREDUCE, Iallreduce, OP_IALLREDUCE)
ALLREDUCE_LIKE(Scan, OP_SCAN, Iscan, OP_ISCAN)
ALLREDUCE_LIKE(Exscan, OP_EXSCAN, Iexscan, OP_IEXSCAN)

#define GATHER_SETUP                                                                           \
    k.root = root_of(k.c, root);                                                               \
    if (IS_ROOT) {                                                                             \
        k.recv = type_bytes(rcount, rtype) * (uint64_t)k.n;                                    \
        k.send = s == MPI_IN_PLACE ? type_bytes(rcount, rtype) : type_bytes(scount, stype);    \
    } else {                                                                                   \
        k.send = type_bytes(scount, stype);                                                    \
    }
int MPI_Gather(const void *s, int scount, MPI_Datatype stype, void *r, int rcount,
               MPI_Datatype rtype, int root, MPI_Comm comm)
    COLL(OP_GATHER, PMPI_Gather(s, scount, stype, r, rcount, rtype, root, comm), NULL,
         GATHER_SETUP)
int MPI_Igather(const void *s, int scount, MPI_Datatype stype, void *r, int rcount,
                MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request *req)
    COLL(OP_IGATHER, PMPI_Igather(s, scount, stype, r, rcount, rtype, root, comm, req), req,
         GATHER_SETUP)

#define GATHERV_SETUP                                                                          \
    k.root = root_of(k.c, root);                                                               \
    if (IS_ROOT) {                                                                             \
        k.rcounts = rcounts;                                                                   \
        k.rtype = rtype;                                                                       \
        k.send = s == MPI_IN_PLACE ? 0 : type_bytes(scount, stype);                            \
    } else {                                                                                   \
        k.send = type_bytes(scount, stype);                                                    \
    }
int MPI_Gatherv(const void *s, int scount, MPI_Datatype stype, void *r, const int rcounts[],
                const int displs[], MPI_Datatype rtype, int root, MPI_Comm comm)
    COLL(OP_GATHERV, PMPI_Gatherv(s, scount, stype, r, rcounts, displs, rtype, root, comm), NULL,
         GATHERV_SETUP)
int MPI_Igatherv(const void *s, int scount, MPI_Datatype stype, void *r, const int rcounts[],
                 const int displs[], MPI_Datatype rtype, int root, MPI_Comm comm,
                 MPI_Request *req)
    COLL(OP_IGATHERV,
         PMPI_Igatherv(s, scount, stype, r, rcounts, displs, rtype, root, comm, req), req,
         GATHERV_SETUP)

#define SCATTER_SETUP                                                                          \
    k.root = root_of(k.c, root);                                                               \
    if (IS_ROOT) {                                                                             \
        k.send = type_bytes(scount, stype) * (uint64_t)k.n;                                    \
        k.recv = r == MPI_IN_PLACE ? type_bytes(scount, stype) : type_bytes(rcount, rtype);    \
    } else {                                                                                   \
        k.recv = type_bytes(rcount, rtype);                                                    \
    }
int MPI_Scatter(const void *s, int scount, MPI_Datatype stype, void *r, int rcount,
                MPI_Datatype rtype, int root, MPI_Comm comm)
    COLL(OP_SCATTER, PMPI_Scatter(s, scount, stype, r, rcount, rtype, root, comm), NULL,
         SCATTER_SETUP)
int MPI_Iscatter(const void *s, int scount, MPI_Datatype stype, void *r, int rcount,
                 MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request *req)
    COLL(OP_ISCATTER, PMPI_Iscatter(s, scount, stype, r, rcount, rtype, root, comm, req), req,
         SCATTER_SETUP)

#define SCATTERV_SETUP                                                                         \
    k.root = root_of(k.c, root);                                                               \
    if (IS_ROOT) {                                                                             \
        k.scounts = scounts;                                                                   \
        k.stype = stype;                                                                       \
        k.recv = r == MPI_IN_PLACE ? 0 : type_bytes(rcount, rtype);                            \
    } else {                                                                                   \
        k.recv = type_bytes(rcount, rtype);                                                    \
    }
int MPI_Scatterv(const void *s, const int scounts[], const int displs[], MPI_Datatype stype,
                 void *r, int rcount, MPI_Datatype rtype, int root, MPI_Comm comm)
    COLL(OP_SCATTERV, PMPI_Scatterv(s, scounts, displs, stype, r, rcount, rtype, root, comm),
         NULL, SCATTERV_SETUP)
int MPI_Iscatterv(const void *s, const int scounts[], const int displs[], MPI_Datatype stype,
                  void *r, int rcount, MPI_Datatype rtype, int root, MPI_Comm comm,
                  MPI_Request *req)
    COLL(OP_ISCATTERV,
         PMPI_Iscatterv(s, scounts, displs, stype, r, rcount, rtype, root, comm, req), req,
         SCATTERV_SETUP)

#define ALLGATHER_SETUP                                                                        \
    k.recv = type_bytes(rcount, rtype) * (uint64_t)k.n;                                        \
    k.send = s == MPI_IN_PLACE ? type_bytes(rcount, rtype) : type_bytes(scount, stype)
int MPI_Allgather(const void *s, int scount, MPI_Datatype stype, void *r, int rcount,
                  MPI_Datatype rtype, MPI_Comm comm)
    COLL(OP_ALLGATHER, PMPI_Allgather(s, scount, stype, r, rcount, rtype, comm), NULL,
         ALLGATHER_SETUP)
int MPI_Iallgather(const void *s, int scount, MPI_Datatype stype, void *r, int rcount,
                   MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
    COLL(OP_IALLGATHER, PMPI_Iallgather(s, scount, stype, r, rcount, rtype, comm, req), req,
         ALLGATHER_SETUP)

#define ALLGATHERV_SETUP                                                                       \
    k.rcounts = rcounts;                                                                       \
    k.rtype = rtype;                                                                           \
    k.send = s == MPI_IN_PLACE ? type_bytes(rcounts[comm_rank_of(comm)], rtype)                \
                               : type_bytes(scount, stype)
int MPI_Allgatherv(const void *s, int scount, MPI_Datatype stype, void *r, const int rcounts[],
                   const int displs[], MPI_Datatype rtype, MPI_Comm comm)
    COLL(OP_ALLGATHERV, PMPI_Allgatherv(s, scount, stype, r, rcounts, displs, rtype, comm), NULL,
         ALLGATHERV_SETUP)
int MPI_Iallgatherv(const void *s, int scount, MPI_Datatype stype, void *r, const int rcounts[],
                    const int displs[], MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
    COLL(OP_IALLGATHERV,
         PMPI_Iallgatherv(s, scount, stype, r, rcounts, displs, rtype, comm, req), req,
         ALLGATHERV_SETUP)

#define ALLTOALL_SETUP                                                                         \
    k.recv = type_bytes(rcount, rtype) * (uint64_t)k.n;                                        \
    k.send = s == MPI_IN_PLACE ? k.recv : type_bytes(scount, stype) * (uint64_t)k.n
int MPI_Alltoall(const void *s, int scount, MPI_Datatype stype, void *r, int rcount,
                 MPI_Datatype rtype, MPI_Comm comm)
    COLL(OP_ALLTOALL, PMPI_Alltoall(s, scount, stype, r, rcount, rtype, comm), NULL,
         ALLTOALL_SETUP)
int MPI_Ialltoall(const void *s, int scount, MPI_Datatype stype, void *r, int rcount,
                  MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
    COLL(OP_IALLTOALL, PMPI_Ialltoall(s, scount, stype, r, rcount, rtype, comm, req), req,
         ALLTOALL_SETUP)

#define ALLTOALLV_SETUP                                                                        \
    k.rcounts = rcounts;                                                                       \
    k.rtype = rtype;                                                                           \
    k.scounts = s == MPI_IN_PLACE ? rcounts : scounts;                                         \
    k.stype = s == MPI_IN_PLACE ? rtype : stype
int MPI_Alltoallv(const void *s, const int scounts[], const int sdispls[], MPI_Datatype stype,
                  void *r, const int rcounts[], const int rdispls[], MPI_Datatype rtype,
                  MPI_Comm comm)
    COLL(OP_ALLTOALLV,
         PMPI_Alltoallv(s, scounts, sdispls, stype, r, rcounts, rdispls, rtype, comm), NULL,
         ALLTOALLV_SETUP)
int MPI_Ialltoallv(const void *s, const int scounts[], const int sdispls[], MPI_Datatype stype,
                   void *r, const int rcounts[], const int rdispls[], MPI_Datatype rtype,
                   MPI_Comm comm, MPI_Request *req)
    COLL(OP_IALLTOALLV,
         PMPI_Ialltoallv(s, scounts, sdispls, stype, r, rcounts, rdispls, rtype, comm, req), req,
         ALLTOALLV_SETUP)

#define ALLTOALLW_SETUP                                                                        \
    k.rcounts = rcounts;                                                                       \
    k.rtypes = rtypes;                                                                         \
    k.scounts = s == MPI_IN_PLACE ? rcounts : scounts;                                         \
    k.stypes = s == MPI_IN_PLACE ? rtypes : stypes
int MPI_Alltoallw(const void *s, const int scounts[], const int sdispls[],
                  const MPI_Datatype stypes[], void *r, const int rcounts[], const int rdispls[],
                  const MPI_Datatype rtypes[], MPI_Comm comm)
    COLL(OP_ALLTOALLW,
         PMPI_Alltoallw(s, scounts, sdispls, stypes, r, rcounts, rdispls, rtypes, comm), NULL,
         ALLTOALLW_SETUP)
int MPI_Ialltoallw(const void *s, const int scounts[], const int sdispls[],
                   const MPI_Datatype stypes[], void *r, const int rcounts[], const int rdispls[],
                   const MPI_Datatype rtypes[], MPI_Comm comm, MPI_Request *req)
    COLL(OP_IALLTOALLW,
         PMPI_Ialltoallw(s, scounts, sdispls, stypes, r, rcounts, rdispls, rtypes, comm, req),
         req, ALLTOALLW_SETUP)

#define REDUCE_SCATTER_SETUP                                                                   \
    k.rcounts = rcounts;                                                                       \
    k.rtype = dt;                                                                              \
    {                                                                                          \
        uint64_t total = 0;                                                                    \
        for (int i = 0; i < k.n; i++) total += type_bytes(rcounts[i], dt);                     \
        k.send = total;                                                                        \
    }
int MPI_Reduce_scatter(const void *s, void *r, const int rcounts[], MPI_Datatype dt, MPI_Op op,
                       MPI_Comm comm)
    COLL(OP_REDUCE_SCATTER, PMPI_Reduce_scatter(s, r, rcounts, dt, op, comm), NULL,
         REDUCE_SCATTER_SETUP)
int MPI_Ireduce_scatter(const void *s, void *r, const int rcounts[], MPI_Datatype dt, MPI_Op op,
                        MPI_Comm comm, MPI_Request *req)
    COLL(OP_IREDUCE_SCATTER, PMPI_Ireduce_scatter(s, r, rcounts, dt, op, comm, req), req,
         REDUCE_SCATTER_SETUP)

#define REDUCE_SCATTER_BLOCK_SETUP                                                             \
    k.recv = type_bytes(rcount, dt);                                                           \
    k.send = k.recv * (uint64_t)k.n
int MPI_Reduce_scatter_block(const void *s, void *r, int rcount, MPI_Datatype dt, MPI_Op op,
                             MPI_Comm comm)
    COLL(OP_REDUCE_SCATTER_BLOCK, PMPI_Reduce_scatter_block(s, r, rcount, dt, op, comm), NULL,
         REDUCE_SCATTER_BLOCK_SETUP)
int MPI_Ireduce_scatter_block(const void *s, void *r, int rcount, MPI_Datatype dt, MPI_Op op,
                              MPI_Comm comm, MPI_Request *req)
    COLL(OP_IREDUCE_SCATTER_BLOCK, PMPI_Ireduce_scatter_block(s, r, rcount, dt, op, comm, req),
         req, REDUCE_SCATTER_BLOCK_SETUP)

/* ---- one-sided communication: counted, not recorded ------------------------------------------ */
/* Counts a one-sided call of `kind` that moved `bytes` and began at `t_in`. */
static void unrec_count(int kind, uint64_t bytes, uint64_t t_in) {
    U[kind].ns += now_ns() - t_in;
    U[kind].calls++;
    U[kind].bytes += bytes;
}

/* Remembers the request of a request-based one-sided call (see REQ_ONE_SIDED). */
static void one_sided_request(MPI_Request r) {
    uint64_t k = req_key(r);
    if (k && r != MPI_REQUEST_NULL) req_insert((struct req){k, 0, REQ_ONE_SIDED, NULL, 0});
}

/* A one-sided call: counted, and the request of a request-based one (`REQ`, NULL for the
 * others) remembered, so that the completion that completes it leaves it out (REQ_ONE_SIDED). */
#define UNRECORDED_REQ(KIND, BYTES, CALL, REQ)                                                 \
    do {                                                                                       \
        if (!TRACING) return CALL;                                                             \
        uint64_t u_in = now_ns();                                                              \
        depth++;                                                                               \
        int u_rc = CALL;                                                                       \
        depth--;                                                                               \
        int u_held = rec_lock();                                                               \
        unrec_count(KIND, BYTES, u_in);                                                        \
        MPI_Request *u_req = (REQ);                                                            \
        if (u_req) one_sided_request(*u_req);                                                  \
        rec_unlock(&u_held);                                                                   \
        return u_rc;                                                                           \
    } while (0)
#define UNRECORDED(KIND, BYTES, CALL) UNRECORDED_REQ(KIND, BYTES, CALL, (MPI_Request *)NULL)

int MPI_Put(const void *o, int oc, MPI_Datatype ot, int target, MPI_Aint disp, int tc,
            MPI_Datatype tt, MPI_Win win) {
    UNRECORDED(U_PUT, type_bytes(oc, ot), PMPI_Put(o, oc, ot, target, disp, tc, tt, win));
}
int MPI_Get(void *o, int oc, MPI_Datatype ot, int target, MPI_Aint disp, int tc,
            MPI_Datatype tt, MPI_Win win) {
    UNRECORDED(U_GET, type_bytes(oc, ot), PMPI_Get(o, oc, ot, target, disp, tc, tt, win));
}
int MPI_Accumulate(const void *o, int oc, MPI_Datatype ot, int target, MPI_Aint disp, int tc,
                   MPI_Datatype tt, MPI_Op op, MPI_Win win) {
    UNRECORDED(U_ACCUMULATE, type_bytes(oc, ot),
               PMPI_Accumulate(o, oc, ot, target, disp, tc, tt, op, win));
}
int MPI_Get_accumulate(const void *o, int oc, MPI_Datatype ot, void *r, int rc,
                       MPI_Datatype rt, int target, MPI_Aint disp, int tc, MPI_Datatype tt,
                       MPI_Op op, MPI_Win win) {
    UNRECORDED(U_GET_ACCUMULATE, type_bytes(oc, ot) + type_bytes(rc, rt),
               PMPI_Get_accumulate(o, oc, ot, r, rc, rt, target, disp, tc, tt, op, win));
}
int MPI_Fetch_and_op(const void *o, void *r, MPI_Datatype t, int target, MPI_Aint disp,
                     MPI_Op op, MPI_Win win) {
    UNRECORDED(U_FETCH_AND_OP, 2 * type_bytes(1, t),
               PMPI_Fetch_and_op(o, r, t, target, disp, op, win));
}
int MPI_Compare_and_swap(const void *o, const void *c, void *r, MPI_Datatype t, int target,
                         MPI_Aint disp, MPI_Win win) {
    UNRECORDED(U_COMPARE_AND_SWAP, 2 * type_bytes(1, t),
               PMPI_Compare_and_swap(o, c, r, t, target, disp, win));
}
int MPI_Rput(const void *o, int oc, MPI_Datatype ot, int target, MPI_Aint disp, int tc,
             MPI_Datatype tt, MPI_Win win, MPI_Request *req) {
    UNRECORDED_REQ(U_RPUT, type_bytes(oc, ot),
                   PMPI_Rput(o, oc, ot, target, disp, tc, tt, win, req), req);
}
int MPI_Rget(void *o, int oc, MPI_Datatype ot, int target, MPI_Aint disp, int tc,
             MPI_Datatype tt, MPI_Win win, MPI_Request *req) {
    UNRECORDED_REQ(U_RGET, type_bytes(oc, ot),
                   PMPI_Rget(o, oc, ot, target, disp, tc, tt, win, req), req);
}
int MPI_Raccumulate(const void *o, int oc, MPI_Datatype ot, int target, MPI_Aint disp, int tc,
                    MPI_Datatype tt, MPI_Op op, MPI_Win win, MPI_Request *req) {
    UNRECORDED_REQ(U_RACCUMULATE, type_bytes(oc, ot),
                   PMPI_Raccumulate(o, oc, ot, target, disp, tc, tt, op, win, req), req);
}
int MPI_Rget_accumulate(const void *o, int oc, MPI_Datatype ot, void *r, int rc,
                        MPI_Datatype rt, int target, MPI_Aint disp, int tc, MPI_Datatype tt,
                        MPI_Op op, MPI_Win win, MPI_Request *req) {
    UNRECORDED_REQ(U_RGET_ACCUMULATE, type_bytes(oc, ot) + type_bytes(rc, rt),
                   PMPI_Rget_accumulate(o, oc, ot, r, rc, rt, target, disp, tc, tt, op, win,
                                        req),
                   req);
}
int MPI_Win_fence(int assert, MPI_Win win) {
    UNRECORDED(U_WIN_FENCE, 0, PMPI_Win_fence(assert, win));
}
int MPI_Win_lock(int type, int rank, int assert, MPI_Win win) {
    UNRECORDED(U_WIN_LOCK, 0, PMPI_Win_lock(type, rank, assert, win));
}
int MPI_Win_unlock(int rank, MPI_Win win) { UNRECORDED(U_WIN_UNLOCK, 0, PMPI_Win_unlock(rank, win)); }
int MPI_Win_lock_all(int assert, MPI_Win win) {
    UNRECORDED(U_WIN_LOCK_ALL, 0, PMPI_Win_lock_all(assert, win));
}
int MPI_Win_unlock_all(MPI_Win win) { UNRECORDED(U_WIN_UNLOCK_ALL, 0, PMPI_Win_unlock_all(win)); }
int MPI_Win_flush(int rank, MPI_Win win) { UNRECORDED(U_WIN_FLUSH, 0, PMPI_Win_flush(rank, win)); }
int MPI_Win_flush_all(MPI_Win win) { UNRECORDED(U_WIN_FLUSH_ALL, 0, PMPI_Win_flush_all(win)); }
int MPI_Win_flush_local(int rank, MPI_Win win) {
    UNRECORDED(U_WIN_FLUSH_LOCAL, 0, PMPI_Win_flush_local(rank, win));
}
int MPI_Win_flush_local_all(MPI_Win win) {
    UNRECORDED(U_WIN_FLUSH_LOCAL_ALL, 0, PMPI_Win_flush_local_all(win));
}
int MPI_Win_sync(MPI_Win win) { UNRECORDED(U_WIN_SYNC, 0, PMPI_Win_sync(win)); }
int MPI_Win_start(MPI_Group group, int assert, MPI_Win win) {
    UNRECORDED(U_WIN_START, 0, PMPI_Win_start(group, assert, win));
}
int MPI_Win_complete(MPI_Win win) { UNRECORDED(U_WIN_COMPLETE, 0, PMPI_Win_complete(win)); }
int MPI_Win_post(MPI_Group group, int assert, MPI_Win win) {
    UNRECORDED(U_WIN_POST, 0, PMPI_Win_post(group, assert, win));
}
int MPI_Win_wait(MPI_Win win) { UNRECORDED(U_WIN_WAIT, 0, PMPI_Win_wait(win)); }

/* ---- MPI-IO: counted, not recorded ------------------------------------------------------------ */
int MPI_File_open(MPI_Comm comm, const char *name, int mode, MPI_Info info, MPI_File *fh) {
    UNRECORDED(U_FILE_OPEN, 0, PMPI_File_open(comm, name, mode, info, fh));
}
int MPI_File_close(MPI_File *fh) { UNRECORDED(U_FILE_CLOSE, 0, PMPI_File_close(fh)); }
int MPI_File_set_view(MPI_File fh, MPI_Offset disp, MPI_Datatype et, MPI_Datatype ft,
                      const char *rep, MPI_Info info) {
    UNRECORDED(U_FILE_SET_VIEW, 0, PMPI_File_set_view(fh, disp, et, ft, rep, info));
}
int MPI_File_sync(MPI_File fh) { UNRECORDED(U_FILE_SYNC, 0, PMPI_File_sync(fh)); }
int MPI_File_read(MPI_File fh, void *b, int n, MPI_Datatype t, MPI_Status *st) {
    UNRECORDED(U_FILE_READ, type_bytes(n, t), PMPI_File_read(fh, b, n, t, st));
}
int MPI_File_read_at(MPI_File fh, MPI_Offset at, void *b, int n, MPI_Datatype t,
                     MPI_Status *st) {
    UNRECORDED(U_FILE_READ_AT, type_bytes(n, t), PMPI_File_read_at(fh, at, b, n, t, st));
}
int MPI_File_read_all(MPI_File fh, void *b, int n, MPI_Datatype t, MPI_Status *st) {
    UNRECORDED(U_FILE_READ_ALL, type_bytes(n, t), PMPI_File_read_all(fh, b, n, t, st));
}
int MPI_File_read_at_all(MPI_File fh, MPI_Offset at, void *b, int n, MPI_Datatype t,
                         MPI_Status *st) {
    UNRECORDED(U_FILE_READ_AT_ALL, type_bytes(n, t), PMPI_File_read_at_all(fh, at, b, n, t, st));
}
int MPI_File_write(MPI_File fh, const void *b, int n, MPI_Datatype t, MPI_Status *st) {
    UNRECORDED(U_FILE_WRITE, type_bytes(n, t), PMPI_File_write(fh, b, n, t, st));
}
int MPI_File_write_at(MPI_File fh, MPI_Offset at, const void *b, int n, MPI_Datatype t,
                      MPI_Status *st) {
    UNRECORDED(U_FILE_WRITE_AT, type_bytes(n, t), PMPI_File_write_at(fh, at, b, n, t, st));
}
int MPI_File_write_all(MPI_File fh, const void *b, int n, MPI_Datatype t, MPI_Status *st) {
    UNRECORDED(U_FILE_WRITE_ALL, type_bytes(n, t), PMPI_File_write_all(fh, b, n, t, st));
}
int MPI_File_write_at_all(MPI_File fh, MPI_Offset at, const void *b, int n, MPI_Datatype t,
                          MPI_Status *st) {
    UNRECORDED(U_FILE_WRITE_AT_ALL, type_bytes(n, t),
               PMPI_File_write_at_all(fh, at, b, n, t, st));
}

/* ---- communicators -------------------------------------------------------------------------- */
int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm) {
    if (!TRACING) return PMPI_Comm_split(comm, color, key, newcomm);
    ENTER;
    int rc = PMPI_Comm_split(comm, color, key, newcomm);
    LEAVE;
    rec_comm(OP_COMM_SPLIT, REL(t_in), REL(t_out), i_gap, comm_get(comm), *newcomm, 1,
             color == MPI_UNDEFINED ? -1 : color, key);
    return rc;
}

/* Recorded as the MPI_Comm_split it is equivalent to: the colour is the lowest world rank of
 * the new communicator (what its members share and no other group has), -1 for none. */
int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info,
                        MPI_Comm *newcomm) {
    if (!TRACING) return PMPI_Comm_split_type(comm, split_type, key, info, newcomm);
    ENTER;
    int rc = PMPI_Comm_split_type(comm, split_type, key, info, newcomm);
    LEAVE;
    int color = -1;
    if (*newcomm != MPI_COMM_NULL) {
        MPI_Group g, wg;
        int size = 0;
        PMPI_Comm_group(*newcomm, &g);
        PMPI_Comm_group(MPI_COMM_WORLD, &wg);
        PMPI_Group_size(g, &size);
        for (int i = 0; i < size; i++) {
            int w = MPI_UNDEFINED;
            PMPI_Group_translate_ranks(g, 1, &i, wg, &w);
            if (w != MPI_UNDEFINED && (color < 0 || w < color)) color = w;
        }
        PMPI_Group_free(&g);
        PMPI_Group_free(&wg);
    }
    rec_comm(OP_COMM_SPLIT, REL(t_in), REL(t_out), i_gap, comm_get(comm), *newcomm, 1, color, key);
    return rc;
}

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm) {
    if (!TRACING) return PMPI_Comm_dup(comm, newcomm);
    ENTER;
    int rc = PMPI_Comm_dup(comm, newcomm);
    LEAVE;
    rec_comm(OP_COMM_DUP, REL(t_in), REL(t_out), i_gap, comm_get(comm), *newcomm, 0, 0, 0);
    return rc;
}

int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm) {
    if (!TRACING) return PMPI_Comm_create(comm, group, newcomm);
    ENTER;
    int rc = PMPI_Comm_create(comm, group, newcomm);
    LEAVE;
    rec_comm(OP_COMM_CREATE, REL(t_in), REL(t_out), i_gap, comm_get(comm), *newcomm, 0, 0, 0);
    return rc;
}

int MPI_Cart_create(MPI_Comm comm, int ndims, const int dims[], const int periods[], int reorder,
                    MPI_Comm *newcomm) {
    if (!TRACING) return PMPI_Cart_create(comm, ndims, dims, periods, reorder, newcomm);
    ENTER;
    int rc = PMPI_Cart_create(comm, ndims, dims, periods, reorder, newcomm);
    LEAVE;
    rec_comm(OP_CART_CREATE, REL(t_in), REL(t_out), i_gap, comm_get(comm), *newcomm, 0, 0, 0);
    return rc;
}

int MPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm) {
    if (!TRACING) return PMPI_Cart_sub(comm, remain_dims, newcomm);
    ENTER;
    int rc = PMPI_Cart_sub(comm, remain_dims, newcomm);
    LEAVE;
    rec_comm(OP_CART_SUB, REL(t_in), REL(t_out), i_gap, comm_get(comm), *newcomm, 0, 0, 0);
    return rc;
}

int MPI_Comm_free(MPI_Comm *comm) {
    if (!TRACING) return PMPI_Comm_free(comm);
    struct comm *c = comm_get(*comm);
    ENTER;
    int rc = PMPI_Comm_free(comm);
    LEAVE;
    rec_comm(OP_COMM_FREE, REL(t_in), REL(t_out), i_gap, c, MPI_COMM_NULL, 0, 0, 0);
    c->used = 0; /* its world table stays: pending requests may still point at it */
    return rc;
}

#if defined(OPEN_MPI)
#include "mpiskel_fortran_ompi.h"
#endif
