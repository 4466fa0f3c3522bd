/*
 * mpiskel PMPI tracer, part of mpiskel_tracer.c (which includes the parts in order, as one
 * translation unit): the records, and the start and end of tracing (MPI_Init, MPI_Finalize).
 */

/* ---- records -------------------------------------------------------------------------------- */
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
     * time is that skew, where one thread calls MPI (with several, a thread's gap may span
     * other threads' records). */
    if (T.cpu_time)
        put_uvar(T.multi || T.cpu_gap < t_in - T.last_exit ? T.cpu_gap : t_in - T.last_exit);
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
    if (r->is_recv == REQ_NEIGHBOR) {
        for (int k = 0; k < r->size; k++) {
            put_uvar(r->id + (uint32_t)k);
            put_u8(0);
        }
        return;
    }
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
    C.wall = now_ns();
    cpu_read_at(C.wall);
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
