/*
 * mpiskel PMPI tracer, part of mpiskel_tracer.c (which includes the parts in order, as one
 * translation unit): the format's constants, the tracer's state, its clocks, the output buffer, communicators and requests.
 */

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
    int multi; /* initialised with MPI_THREAD_MULTIPLE */
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
    uint32_t next_req, next_comm;
    struct comm *comms;
    int n_comms, cap_comms;
    struct req *reqs;
    size_t cap_reqs, n_reqs;
    struct pers *pers;
    size_t cap_pers, n_pers;
    int *world_identity;
} T = {.fd = -1, .perf_fd = -1};

/* The processor clock of the calling thread, as the gaps read it: each thread its own, since a
 * thread's clock measures that thread only. Under MPI_THREAD_MULTIPLE a call's gap is then the
 * processor time its thread had since that thread's last call: the computation of a rank's
 * threads is each counted once, in the gap of the thread's next call, also where threads
 * computed at the same time (a record's gap may then exceed the wall time since the rank's
 * previous record). A thread's first call takes all the time it ran before it. */
static _Thread_local struct {
    uint64_t wall;      /* the wall clock at which the thread's current gap began */
    uint64_t read;      /* the thread CPU clock when it was last read */
    uint64_t read_wall; /* the wall clock at which it was last read */
    uint64_t unread;    /* processor time given to gaps since it was last read */
} C;

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
    C.read = cpu_now();
    C.read_wall = t;
    C.unread = 0;
}

/* The processor time of the gap that began at `C.wall` and ends at wall time `t`. */
static uint64_t gap_cpu(uint64_t t) {
    if (!T.cpu_time) return 0;
    uint64_t wall = t > C.wall ? t - C.wall : 0;
    uint64_t unread = t > C.read_wall ? t - C.read_wall : 0;
    if (wall < CPU_READ_NS && unread < CPU_READ_NS) {
        C.unread += wall;
        return wall;
    }
    uint64_t before = C.read, given = C.unread;
    cpu_read_at(t);
    uint64_t ran = C.read > before ? C.read - before : 0;
    uint64_t gap = ran > given ? ran - given : 0;
    return gap < wall ? gap : wall;
}

/* A gap begins at wall time `t` (a call returned, or the tracer's own work after it ended); the
 * clock is read if it is due, so that what the calls before had is not the gap's. */
static void gap_begins(uint64_t t) {
    if (!T.cpu_time) return;
    if (t > C.read_wall && t - C.read_wall >= CPU_READ_NS) cpu_read_at(t);
    C.wall = t;
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

/* Threads. A call made inside another call of the same thread (a Fortran entry point calling
 * the C wrapper, MPI calls from a one-sided call) is not recorded: `depth` counts them, per
 * thread. Threads may be in MPI calls at the same time, also in programs that asked for a
 * lower thread level (DOLFINx, initialised without MPI_THREAD_MULTIPLE, partitions its mesh
 * through PT-Scotch's threads): each call's bookkeeping before it and its record after it are
 * always made under `rec_mutex` (never the MPI call itself, which may wait for another
 * thread's), so that no record is lost or torn; the rank's records are in the order the calls
 * returned. The lock is one uncontended atomic operation where one thread calls MPI. */
static _Thread_local int depth;
static pthread_mutex_t rec_mutex = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP; /* comm_get takes it too */
static int rec_lock(void) {
    pthread_mutex_lock(&rec_mutex);
    return 1;
}
static void rec_unlock(int *held) {
    if (*held) pthread_mutex_unlock(&rec_mutex);
    *held = 0;
}

/* The entry of a communicator, defining it in the trace the first time it is seen. */
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
/* `is_recv` of the request of a non-blocking neighbourhood collective (MPI_Ineighbor_…): it was
 * recorded as the sends and receives it makes, under the ids `id` … `id + size - 1` (`size` is
 * their number here, not a communicator's), and the completion that completes it completes
 * them all. */
#define REQ_NEIGHBOR 3

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
