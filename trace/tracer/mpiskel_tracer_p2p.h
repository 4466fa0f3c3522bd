/*
 * mpiskel PMPI tracer, part of mpiskel_tracer.c (which includes the parts in order, as one
 * translation unit): point-to-point calls and their completion.
 */

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
    int count = 0, given = s->n;
    for (int i = 0; i < s->n; i++) {
        int many = s->e[i].key && s->e[i].is_recv == REQ_NEIGHBOR;
        if (many) given += s->e[i].size - 1;
        if (done[i] && s->e[i].key && s->e[i].is_recv != REQ_ONE_SIDED)
            count += many ? s->e[i].size : 1;
    }
    /* A neighbourhood collective's request stands for its messages' requests: a call given it
     * is given them all, and one that completes one request completes them all. */
    if (given != s->n) {
        op = op == OP_WAIT ? OP_WAITALL
           : op == OP_TEST ? OP_TESTALL
           : op == OP_WAITANY ? OP_WAITSOME
           : op == OP_TESTANY ? OP_TESTSOME
           : op;
    }
    ev_begin(op, t_in, t_out, i_gap, 32 * (size_t)count);
    put_uvar((uint64_t)given);
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
