/*
 * Fortran entry points for OpenMPI, included by mpiskel_tracer.c.
 *
 * OpenMPI's Fortran bindings (libmpi_mpifh, used by `include 'mpif.h'` and `use mpi`) call
 * PMPI_* directly, so C wrappers never see Fortran calls. These definitions take precedence over
 * OpenMPI's weak `mpi_xxx_` symbols when the tracer is preloaded; each converts its handles and
 * calls the C wrapper above, which records the call and calls PMPI.
 *
 * Covered: the calls the tracer records (with the persistent requests' init calls, MPI_Start,
 * MPI_Startall and MPI_Request_free), except Alltoallw, Ialltoallw and the non-blocking
 * reduce-scatters, the one-sided calls it counts but for the accumulates that fetch, the
 * atomics and the active-target synchronization, and the MPI-IO calls it counts (`use mpi_f08`
 * is not covered). Names follow gfortran's
 * convention (lower case, one trailing underscore).
 */
#include <assert.h>

static_assert(sizeof(MPI_Fint) == sizeof(int), "MPI_Fint must be int for count arrays");

/* Fortran sentinels, defined in OpenMPI's libmpi. */
extern int mpi_fortran_bottom_, mpi_fortran_in_place_;
extern int mpi_fortran_status_ignore_, mpi_fortran_statuses_ignore_;

#define F_LOGICAL_TRUE 1
#define F_STATUS_INTS ((int)(sizeof(MPI_Status) / sizeof(MPI_Fint)))

static void *f_buf(void *b) {
    if (b == (void *)&mpi_fortran_bottom_) return MPI_BOTTOM;
    if (b == (void *)&mpi_fortran_in_place_) return MPI_IN_PLACE;
    return b;
}
static void f_status(MPI_Fint *f, const MPI_Status *c) {
    if ((void *)f != (void *)&mpi_fortran_status_ignore_) MPI_Status_c2f(c, f);
}
static void f_statuses(MPI_Fint *f, const MPI_Status *c, int n) {
    if ((void *)f == (void *)&mpi_fortran_statuses_ignore_) return;
    for (int i = 0; i < n; i++) MPI_Status_c2f(&c[i], f + i * F_STATUS_INTS);
}

/* Request arrays: Fortran handles in, C handles for the call, Fortran handles back. */
struct f_reqs {
    MPI_Request small[16];
    MPI_Request *r;
    MPI_Status small_st[16];
    MPI_Status *st;
};
static void f_reqs_in(struct f_reqs *q, int n, const MPI_Fint *f) {
    q->r = n <= 16 ? q->small : malloc(sizeof(MPI_Request) * (size_t)n);
    q->st = n <= 16 ? q->small_st : malloc(sizeof(MPI_Status) * (size_t)n);
    if (!q->r || !q->st) abort();
    for (int i = 0; i < n; i++) q->r[i] = MPI_Request_f2c(f[i]);
}
static void f_reqs_out(struct f_reqs *q, int n, MPI_Fint *f) {
    for (int i = 0; i < n; i++) f[i] = MPI_Request_c2f(q->r[i]);
    if (q->r != q->small) free(q->r);
    if (q->st != q->small_st) free(q->st);
}

#define T_(x) MPI_Type_f2c(*(x))
#define C_(x) MPI_Comm_f2c(*(x))
#define O_(x) MPI_Op_f2c(*(x))

void mpi_init_(MPI_Fint *ierr) { *ierr = MPI_Init(NULL, NULL); }
void mpi_init_thread_(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr) {
    int p = 0;
    *ierr = MPI_Init_thread(NULL, NULL, *required, &p);
    *provided = p;
}
void mpi_finalize_(MPI_Fint *ierr) { *ierr = MPI_Finalize(); }

#define F_SEND(FNAME, CNAME)                                                                   \
    void FNAME(void *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *dest, MPI_Fint *tag,        \
               MPI_Fint *comm, MPI_Fint *ierr) {                                               \
        *ierr = CNAME(f_buf(buf), *count, T_(dt), *dest, *tag, C_(comm));                      \
    }
F_SEND(mpi_send_, MPI_Send)
F_SEND(mpi_ssend_, MPI_Ssend)
F_SEND(mpi_rsend_, MPI_Rsend)
F_SEND(mpi_bsend_, MPI_Bsend)

#define F_ISEND(FNAME, CNAME)                                                                  \
    void FNAME(void *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *dest, MPI_Fint *tag,        \
               MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr) {                                \
        MPI_Request r;                                                                         \
        *ierr = CNAME(f_buf(buf), *count, T_(dt), *dest, *tag, C_(comm), &r);                  \
        *req = MPI_Request_c2f(r);                                                             \
    }
F_ISEND(mpi_isend_, MPI_Isend)
F_ISEND(mpi_issend_, MPI_Issend)
F_ISEND(mpi_irsend_, MPI_Irsend)
F_ISEND(mpi_irecv_, MPI_Irecv)
F_ISEND(mpi_ibsend_, MPI_Ibsend)
F_ISEND(mpi_send_init_, MPI_Send_init)
F_ISEND(mpi_ssend_init_, MPI_Ssend_init)
F_ISEND(mpi_rsend_init_, MPI_Rsend_init)
F_ISEND(mpi_bsend_init_, MPI_Bsend_init)
F_ISEND(mpi_recv_init_, MPI_Recv_init)

void mpi_start_(MPI_Fint *req, MPI_Fint *ierr) {
    MPI_Request r = MPI_Request_f2c(*req);
    *ierr = MPI_Start(&r);
    *req = MPI_Request_c2f(r);
}
void mpi_startall_(MPI_Fint *count, MPI_Fint *reqs, MPI_Fint *ierr) {
    struct f_reqs q;
    f_reqs_in(&q, *count, reqs);
    *ierr = MPI_Startall(*count, q.r);
    f_reqs_out(&q, *count, reqs);
}
void mpi_request_free_(MPI_Fint *req, MPI_Fint *ierr) {
    MPI_Request r = MPI_Request_f2c(*req);
    *ierr = MPI_Request_free(&r);
    *req = MPI_Request_c2f(r);
}

void mpi_recv_(void *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *src, MPI_Fint *tag,
               MPI_Fint *comm, MPI_Fint *status, MPI_Fint *ierr) {
    MPI_Status s;
    *ierr = MPI_Recv(f_buf(buf), *count, T_(dt), *src, *tag, C_(comm), &s);
    f_status(status, &s);
}

void mpi_sendrecv_(void *sbuf, MPI_Fint *scount, MPI_Fint *stype, MPI_Fint *dest,
                   MPI_Fint *stag, void *rbuf, MPI_Fint *rcount, MPI_Fint *rtype, MPI_Fint *src,
                   MPI_Fint *rtag, MPI_Fint *comm, MPI_Fint *status, MPI_Fint *ierr) {
    MPI_Status s;
    *ierr = MPI_Sendrecv(f_buf(sbuf), *scount, T_(stype), *dest, *stag, f_buf(rbuf), *rcount,
                         T_(rtype), *src, *rtag, C_(comm), &s);
    f_status(status, &s);
}

void mpi_sendrecv_replace_(void *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *dest,
                           MPI_Fint *stag, MPI_Fint *src, MPI_Fint *rtag, MPI_Fint *comm,
                           MPI_Fint *status, MPI_Fint *ierr) {
    MPI_Status s;
    *ierr = MPI_Sendrecv_replace(f_buf(buf), *count, T_(dt), *dest, *stag, *src, *rtag, C_(comm),
                                 &s);
    f_status(status, &s);
}

void mpi_probe_(MPI_Fint *src, MPI_Fint *tag, MPI_Fint *comm, MPI_Fint *status, MPI_Fint *ierr) {
    MPI_Status s;
    *ierr = MPI_Probe(*src, *tag, C_(comm), &s);
    f_status(status, &s);
}

void mpi_iprobe_(MPI_Fint *src, MPI_Fint *tag, MPI_Fint *comm, MPI_Fint *flag, MPI_Fint *status,
                 MPI_Fint *ierr) {
    MPI_Status s;
    int fl = 0;
    *ierr = MPI_Iprobe(*src, *tag, C_(comm), &fl, &s);
    *flag = fl ? F_LOGICAL_TRUE : 0;
    if (fl) f_status(status, &s);
}

void mpi_wait_(MPI_Fint *req, MPI_Fint *status, MPI_Fint *ierr) {
    MPI_Request r = MPI_Request_f2c(*req);
    MPI_Status s;
    *ierr = MPI_Wait(&r, &s);
    *req = MPI_Request_c2f(r);
    f_status(status, &s);
}

void mpi_test_(MPI_Fint *req, MPI_Fint *flag, MPI_Fint *status, MPI_Fint *ierr) {
    MPI_Request r = MPI_Request_f2c(*req);
    MPI_Status s;
    int fl = 0;
    *ierr = MPI_Test(&r, &fl, &s);
    *req = MPI_Request_c2f(r);
    *flag = fl ? F_LOGICAL_TRUE : 0;
    if (fl) f_status(status, &s);
}

void mpi_waitall_(MPI_Fint *count, MPI_Fint *reqs, MPI_Fint *statuses, MPI_Fint *ierr) {
    struct f_reqs q;
    f_reqs_in(&q, *count, reqs);
    *ierr = MPI_Waitall(*count, q.r, q.st);
    f_statuses(statuses, q.st, *count);
    f_reqs_out(&q, *count, reqs);
}

void mpi_testall_(MPI_Fint *count, MPI_Fint *reqs, MPI_Fint *flag, MPI_Fint *statuses,
                  MPI_Fint *ierr) {
    struct f_reqs q;
    int fl = 0;
    f_reqs_in(&q, *count, reqs);
    *ierr = MPI_Testall(*count, q.r, &fl, q.st);
    *flag = fl ? F_LOGICAL_TRUE : 0;
    if (fl) f_statuses(statuses, q.st, *count);
    f_reqs_out(&q, *count, reqs);
}

void mpi_waitany_(MPI_Fint *count, MPI_Fint *reqs, MPI_Fint *index, MPI_Fint *status,
                  MPI_Fint *ierr) {
    struct f_reqs q;
    int ci = 0;
    f_reqs_in(&q, *count, reqs);
    *ierr = MPI_Waitany(*count, q.r, &ci, &q.st[0]);
    *index = ci == MPI_UNDEFINED ? MPI_UNDEFINED : ci + 1;
    f_status(status, &q.st[0]);
    f_reqs_out(&q, *count, reqs);
}

void mpi_testany_(MPI_Fint *count, MPI_Fint *reqs, MPI_Fint *index, MPI_Fint *flag,
                  MPI_Fint *status, MPI_Fint *ierr) {
    struct f_reqs q;
    int ci = 0, fl = 0;
    f_reqs_in(&q, *count, reqs);
    *ierr = MPI_Testany(*count, q.r, &ci, &fl, &q.st[0]);
    *index = ci == MPI_UNDEFINED ? MPI_UNDEFINED : ci + 1;
    *flag = fl ? F_LOGICAL_TRUE : 0;
    if (fl) f_status(status, &q.st[0]);
    f_reqs_out(&q, *count, reqs);
}

static void f_some(int (*fn)(int, MPI_Request *, int *, int *, MPI_Status *), MPI_Fint *count,
                   MPI_Fint *reqs, MPI_Fint *outcount, MPI_Fint *indices, MPI_Fint *statuses,
                   MPI_Fint *ierr) {
    struct f_reqs q;
    int out = 0;
    f_reqs_in(&q, *count, reqs);
    *ierr = fn(*count, q.r, &out, indices, q.st);
    *outcount = out;
    if (out != MPI_UNDEFINED) {
        for (int k = 0; k < out; k++) indices[k] += 1;
        f_statuses(statuses, q.st, out);
    }
    f_reqs_out(&q, *count, reqs);
}
void mpi_waitsome_(MPI_Fint *count, MPI_Fint *reqs, MPI_Fint *outcount, MPI_Fint *indices,
                   MPI_Fint *statuses, MPI_Fint *ierr) {
    f_some(MPI_Waitsome, count, reqs, outcount, indices, statuses, ierr);
}
void mpi_testsome_(MPI_Fint *count, MPI_Fint *reqs, MPI_Fint *outcount, MPI_Fint *indices,
                   MPI_Fint *statuses, MPI_Fint *ierr) {
    f_some(MPI_Testsome, count, reqs, outcount, indices, statuses, ierr);
}

void mpi_barrier_(MPI_Fint *comm, MPI_Fint *ierr) { *ierr = MPI_Barrier(C_(comm)); }
void mpi_ibarrier_(MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr) {
    MPI_Request r;
    *ierr = MPI_Ibarrier(C_(comm), &r);
    *req = MPI_Request_c2f(r);
}
void mpi_bcast_(void *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *root, MPI_Fint *comm,
                MPI_Fint *ierr) {
    *ierr = MPI_Bcast(f_buf(buf), *count, T_(dt), *root, C_(comm));
}
void mpi_ibcast_(void *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *root, MPI_Fint *comm,
                 MPI_Fint *req, MPI_Fint *ierr) {
    MPI_Request r;
    *ierr = MPI_Ibcast(f_buf(buf), *count, T_(dt), *root, C_(comm), &r);
    *req = MPI_Request_c2f(r);
}
void mpi_reduce_(void *s, void *r, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op, MPI_Fint *root,
                 MPI_Fint *comm, MPI_Fint *ierr) {
    *ierr = MPI_Reduce(f_buf(s), f_buf(r), *count, T_(dt), O_(op), *root, C_(comm));
}

#define F_ALLREDUCE_LIKE(FNAME, CNAME)                                                         \
    void FNAME(void *s, void *r, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op, MPI_Fint *comm,  \
               MPI_Fint *ierr) {                                                               \
        *ierr = CNAME(f_buf(s), f_buf(r), *count, T_(dt), O_(op), C_(comm));                   \
    }
F_ALLREDUCE_LIKE(mpi_allreduce_, MPI_Allreduce)
F_ALLREDUCE_LIKE(mpi_scan_, MPI_Scan)
F_ALLREDUCE_LIKE(mpi_exscan_, MPI_Exscan)

#define F_IALLREDUCE_LIKE(FNAME, CNAME)                                                        \
    void FNAME(void *s, void *r, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op, MPI_Fint *comm,  \
               MPI_Fint *req, MPI_Fint *ierr) {                                                \
        MPI_Request q;                                                                         \
        *ierr = CNAME(f_buf(s), f_buf(r), *count, T_(dt), O_(op), C_(comm), &q);               \
        *req = MPI_Request_c2f(q);                                                             \
    }
F_IALLREDUCE_LIKE(mpi_iallreduce_, MPI_Iallreduce)
F_IALLREDUCE_LIKE(mpi_iscan_, MPI_Iscan)
F_IALLREDUCE_LIKE(mpi_iexscan_, MPI_Iexscan)

void mpi_ireduce_(void *s, void *r, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op, MPI_Fint *root,
                  MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr) {
    MPI_Request q;
    *ierr = MPI_Ireduce(f_buf(s), f_buf(r), *count, T_(dt), O_(op), *root, C_(comm), &q);
    *req = MPI_Request_c2f(q);
}

#define F_ROOTED(FNAME, CNAME)                                                                 \
    void FNAME(void *s, MPI_Fint *sc, MPI_Fint *st, void *r, MPI_Fint *rc, MPI_Fint *rt,       \
               MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr) {                               \
        *ierr = CNAME(f_buf(s), *sc, T_(st), f_buf(r), *rc, T_(rt), *root, C_(comm));          \
    }
F_ROOTED(mpi_gather_, MPI_Gather)
F_ROOTED(mpi_scatter_, MPI_Scatter)

#define F_IROOTED(FNAME, CNAME)                                                                \
    void FNAME(void *s, MPI_Fint *sc, MPI_Fint *st, void *r, MPI_Fint *rc, MPI_Fint *rt,       \
               MPI_Fint *root, MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr) {                \
        MPI_Request q;                                                                         \
        *ierr = CNAME(f_buf(s), *sc, T_(st), f_buf(r), *rc, T_(rt), *root, C_(comm), &q);      \
        *req = MPI_Request_c2f(q);                                                             \
    }
F_IROOTED(mpi_igather_, MPI_Igather)
F_IROOTED(mpi_iscatter_, MPI_Iscatter)

void mpi_igatherv_(void *s, MPI_Fint *sc, MPI_Fint *st, void *r, MPI_Fint *rcounts,
                   MPI_Fint *displs, MPI_Fint *rt, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *req,
                   MPI_Fint *ierr) {
    MPI_Request q;
    *ierr = MPI_Igatherv(f_buf(s), *sc, T_(st), f_buf(r), rcounts, displs, T_(rt), *root,
                         C_(comm), &q);
    *req = MPI_Request_c2f(q);
}
void mpi_iscatterv_(void *s, MPI_Fint *scounts, MPI_Fint *displs, MPI_Fint *st, void *r,
                    MPI_Fint *rc, MPI_Fint *rt, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *req,
                    MPI_Fint *ierr) {
    MPI_Request q;
    *ierr = MPI_Iscatterv(f_buf(s), scounts, displs, T_(st), f_buf(r), *rc, T_(rt), *root,
                          C_(comm), &q);
    *req = MPI_Request_c2f(q);
}

void mpi_gatherv_(void *s, MPI_Fint *sc, MPI_Fint *st, void *r, MPI_Fint *rcounts,
                  MPI_Fint *displs, MPI_Fint *rt, MPI_Fint *root, MPI_Fint *comm,
                  MPI_Fint *ierr) {
    *ierr = MPI_Gatherv(f_buf(s), *sc, T_(st), f_buf(r), rcounts, displs, T_(rt), *root,
                        C_(comm));
}
void mpi_scatterv_(void *s, MPI_Fint *scounts, MPI_Fint *displs, MPI_Fint *st, void *r,
                   MPI_Fint *rc, MPI_Fint *rt, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr) {
    *ierr = MPI_Scatterv(f_buf(s), scounts, displs, T_(st), f_buf(r), *rc, T_(rt), *root,
                         C_(comm));
}

#define F_ALL(FNAME, CNAME)                                                                    \
    void FNAME(void *s, MPI_Fint *sc, MPI_Fint *st, void *r, MPI_Fint *rc, MPI_Fint *rt,       \
               MPI_Fint *comm, MPI_Fint *ierr) {                                               \
        *ierr = CNAME(f_buf(s), *sc, T_(st), f_buf(r), *rc, T_(rt), C_(comm));                 \
    }
F_ALL(mpi_allgather_, MPI_Allgather)
F_ALL(mpi_alltoall_, MPI_Alltoall)

#define F_IALL(FNAME, CNAME)                                                                   \
    void FNAME(void *s, MPI_Fint *sc, MPI_Fint *st, void *r, MPI_Fint *rc, MPI_Fint *rt,       \
               MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr) {                                \
        MPI_Request q;                                                                         \
        *ierr = CNAME(f_buf(s), *sc, T_(st), f_buf(r), *rc, T_(rt), C_(comm), &q);             \
        *req = MPI_Request_c2f(q);                                                             \
    }
F_IALL(mpi_iallgather_, MPI_Iallgather)
F_IALL(mpi_ialltoall_, MPI_Ialltoall)

void mpi_iallgatherv_(void *s, MPI_Fint *sc, MPI_Fint *st, void *r, MPI_Fint *rcounts,
                      MPI_Fint *displs, MPI_Fint *rt, MPI_Fint *comm, MPI_Fint *req,
                      MPI_Fint *ierr) {
    MPI_Request q;
    *ierr = MPI_Iallgatherv(f_buf(s), *sc, T_(st), f_buf(r), rcounts, displs, T_(rt), C_(comm),
                            &q);
    *req = MPI_Request_c2f(q);
}
void mpi_ialltoallv_(void *s, MPI_Fint *scounts, MPI_Fint *sdispls, MPI_Fint *st, void *r,
                     MPI_Fint *rcounts, MPI_Fint *rdispls, MPI_Fint *rt, MPI_Fint *comm,
                     MPI_Fint *req, MPI_Fint *ierr) {
    MPI_Request q;
    *ierr = MPI_Ialltoallv(f_buf(s), scounts, sdispls, T_(st), f_buf(r), rcounts, rdispls,
                           T_(rt), C_(comm), &q);
    *req = MPI_Request_c2f(q);
}

/* The neighbourhood collectives but the w forms (whose datatypes are arrays to convert one by
 * one): each recorded as the messages it makes (mpiskel_tracer_coll.h). */
F_ALL(mpi_neighbor_allgather_, MPI_Neighbor_allgather)
F_ALL(mpi_neighbor_alltoall_, MPI_Neighbor_alltoall)
F_IALL(mpi_ineighbor_allgather_, MPI_Ineighbor_allgather)
F_IALL(mpi_ineighbor_alltoall_, MPI_Ineighbor_alltoall)
void mpi_neighbor_allgatherv_(void *s, MPI_Fint *sc, MPI_Fint *st, void *r, MPI_Fint *rcounts,
                              MPI_Fint *displs, MPI_Fint *rt, MPI_Fint *comm, MPI_Fint *ierr) {
    *ierr = MPI_Neighbor_allgatherv(f_buf(s), *sc, T_(st), f_buf(r), rcounts, displs, T_(rt),
                                    C_(comm));
}
void mpi_ineighbor_allgatherv_(void *s, MPI_Fint *sc, MPI_Fint *st, void *r, MPI_Fint *rcounts,
                               MPI_Fint *displs, MPI_Fint *rt, MPI_Fint *comm, MPI_Fint *req,
                               MPI_Fint *ierr) {
    MPI_Request q;
    *ierr = MPI_Ineighbor_allgatherv(f_buf(s), *sc, T_(st), f_buf(r), rcounts, displs, T_(rt),
                                     C_(comm), &q);
    *req = MPI_Request_c2f(q);
}
void mpi_neighbor_alltoallv_(void *s, MPI_Fint *scounts, MPI_Fint *sdispls, MPI_Fint *st,
                             void *r, MPI_Fint *rcounts, MPI_Fint *rdispls, MPI_Fint *rt,
                             MPI_Fint *comm, MPI_Fint *ierr) {
    *ierr = MPI_Neighbor_alltoallv(f_buf(s), scounts, sdispls, T_(st), f_buf(r), rcounts,
                                   rdispls, T_(rt), C_(comm));
}
void mpi_ineighbor_alltoallv_(void *s, MPI_Fint *scounts, MPI_Fint *sdispls, MPI_Fint *st,
                              void *r, MPI_Fint *rcounts, MPI_Fint *rdispls, MPI_Fint *rt,
                              MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr) {
    MPI_Request q;
    *ierr = MPI_Ineighbor_alltoallv(f_buf(s), scounts, sdispls, T_(st), f_buf(r), rcounts,
                                    rdispls, T_(rt), C_(comm), &q);
    *req = MPI_Request_c2f(q);
}

void mpi_allgatherv_(void *s, MPI_Fint *sc, MPI_Fint *st, void *r, MPI_Fint *rcounts,
                     MPI_Fint *displs, MPI_Fint *rt, MPI_Fint *comm, MPI_Fint *ierr) {
    *ierr = MPI_Allgatherv(f_buf(s), *sc, T_(st), f_buf(r), rcounts, displs, T_(rt), C_(comm));
}
void mpi_alltoallv_(void *s, MPI_Fint *scounts, MPI_Fint *sdispls, MPI_Fint *st, void *r,
                    MPI_Fint *rcounts, MPI_Fint *rdispls, MPI_Fint *rt, MPI_Fint *comm,
                    MPI_Fint *ierr) {
    *ierr = MPI_Alltoallv(f_buf(s), scounts, sdispls, T_(st), f_buf(r), rcounts, rdispls, T_(rt),
                          C_(comm));
}
void mpi_reduce_scatter_(void *s, void *r, MPI_Fint *rcounts, MPI_Fint *dt, MPI_Fint *op,
                         MPI_Fint *comm, MPI_Fint *ierr) {
    *ierr = MPI_Reduce_scatter(f_buf(s), f_buf(r), rcounts, T_(dt), O_(op), C_(comm));
}
void mpi_reduce_scatter_block_(void *s, void *r, MPI_Fint *rc, MPI_Fint *dt, MPI_Fint *op,
                               MPI_Fint *comm, MPI_Fint *ierr) {
    *ierr = MPI_Reduce_scatter_block(f_buf(s), f_buf(r), *rc, T_(dt), O_(op), C_(comm));
}

void mpi_comm_split_(MPI_Fint *comm, MPI_Fint *color, MPI_Fint *key, MPI_Fint *newcomm,
                     MPI_Fint *ierr) {
    MPI_Comm c;
    *ierr = MPI_Comm_split(C_(comm), *color, *key, &c);
    *newcomm = MPI_Comm_c2f(c);
}
void mpi_comm_split_type_(MPI_Fint *comm, MPI_Fint *type, MPI_Fint *key, MPI_Fint *info,
                          MPI_Fint *newcomm, MPI_Fint *ierr) {
    MPI_Comm c;
    *ierr = MPI_Comm_split_type(C_(comm), *type, *key, MPI_Info_f2c(*info), &c);
    *newcomm = MPI_Comm_c2f(c);
}
void mpi_comm_dup_(MPI_Fint *comm, MPI_Fint *newcomm, MPI_Fint *ierr) {
    MPI_Comm c;
    *ierr = MPI_Comm_dup(C_(comm), &c);
    *newcomm = MPI_Comm_c2f(c);
}
void mpi_comm_create_(MPI_Fint *comm, MPI_Fint *group, MPI_Fint *newcomm, MPI_Fint *ierr) {
    MPI_Comm c;
    *ierr = MPI_Comm_create(C_(comm), MPI_Group_f2c(*group), &c);
    *newcomm = MPI_Comm_c2f(c);
}
void mpi_cart_create_(MPI_Fint *comm, MPI_Fint *ndims, MPI_Fint *dims, MPI_Fint *periods,
                      MPI_Fint *reorder, MPI_Fint *newcomm, MPI_Fint *ierr) {
    int n = *ndims, per[64];
    if (n > 64) n = 64;
    for (int i = 0; i < n; i++) per[i] = periods[i] != 0;
    MPI_Comm c;
    *ierr = MPI_Cart_create(C_(comm), n, dims, per, *reorder != 0, &c);
    *newcomm = MPI_Comm_c2f(c);
}
void mpi_cart_sub_(MPI_Fint *comm, MPI_Fint *remain, MPI_Fint *newcomm, MPI_Fint *ierr) {
    int nd = 0, keep[64];
    MPI_Cartdim_get(C_(comm), &nd);
    if (nd > 64) nd = 64;
    for (int i = 0; i < nd; i++) keep[i] = remain[i] != 0;
    MPI_Comm c;
    *ierr = MPI_Cart_sub(C_(comm), keep, &c);
    *newcomm = MPI_Comm_c2f(c);
}
void mpi_comm_free_(MPI_Fint *comm, MPI_Fint *ierr) {
    MPI_Comm c = C_(comm);
    *ierr = MPI_Comm_free(&c);
    *comm = MPI_Comm_c2f(c);
}

/* One-sided communication: counted, not recorded (see the C wrappers). */
#define W_(x) MPI_Win_f2c(*(x))
void mpi_put_(void *o, MPI_Fint *oc, MPI_Fint *ot, MPI_Fint *target, MPI_Aint *disp,
              MPI_Fint *tc, MPI_Fint *tt, MPI_Fint *win, MPI_Fint *ierr) {
    *ierr = MPI_Put(f_buf(o), *oc, T_(ot), *target, *disp, *tc, T_(tt), W_(win));
}
void mpi_get_(void *o, MPI_Fint *oc, MPI_Fint *ot, MPI_Fint *target, MPI_Aint *disp,
              MPI_Fint *tc, MPI_Fint *tt, MPI_Fint *win, MPI_Fint *ierr) {
    *ierr = MPI_Get(f_buf(o), *oc, T_(ot), *target, *disp, *tc, T_(tt), W_(win));
}
void mpi_accumulate_(void *o, MPI_Fint *oc, MPI_Fint *ot, MPI_Fint *target, MPI_Aint *disp,
                     MPI_Fint *tc, MPI_Fint *tt, MPI_Fint *op, MPI_Fint *win, MPI_Fint *ierr) {
    *ierr = MPI_Accumulate(f_buf(o), *oc, T_(ot), *target, *disp, *tc, T_(tt), O_(op), W_(win));
}
void mpi_rput_(void *o, MPI_Fint *oc, MPI_Fint *ot, MPI_Fint *target, MPI_Aint *disp,
               MPI_Fint *tc, MPI_Fint *tt, MPI_Fint *win, MPI_Fint *req, MPI_Fint *ierr) {
    MPI_Request q;
    *ierr = MPI_Rput(f_buf(o), *oc, T_(ot), *target, *disp, *tc, T_(tt), W_(win), &q);
    *req = MPI_Request_c2f(q);
}
void mpi_rget_(void *o, MPI_Fint *oc, MPI_Fint *ot, MPI_Fint *target, MPI_Aint *disp,
               MPI_Fint *tc, MPI_Fint *tt, MPI_Fint *win, MPI_Fint *req, MPI_Fint *ierr) {
    MPI_Request q;
    *ierr = MPI_Rget(f_buf(o), *oc, T_(ot), *target, *disp, *tc, T_(tt), W_(win), &q);
    *req = MPI_Request_c2f(q);
}
void mpi_win_fence_(MPI_Fint *assert, MPI_Fint *win, MPI_Fint *ierr) {
    *ierr = MPI_Win_fence(*assert, W_(win));
}
void mpi_win_lock_(MPI_Fint *type, MPI_Fint *rank, MPI_Fint *assert, MPI_Fint *win,
                   MPI_Fint *ierr) {
    *ierr = MPI_Win_lock(*type, *rank, *assert, W_(win));
}
void mpi_win_unlock_(MPI_Fint *rank, MPI_Fint *win, MPI_Fint *ierr) {
    *ierr = MPI_Win_unlock(*rank, W_(win));
}
void mpi_win_lock_all_(MPI_Fint *assert, MPI_Fint *win, MPI_Fint *ierr) {
    *ierr = MPI_Win_lock_all(*assert, W_(win));
}
void mpi_win_unlock_all_(MPI_Fint *win, MPI_Fint *ierr) { *ierr = MPI_Win_unlock_all(W_(win)); }
void mpi_win_flush_(MPI_Fint *rank, MPI_Fint *win, MPI_Fint *ierr) {
    *ierr = MPI_Win_flush(*rank, W_(win));
}
void mpi_win_flush_all_(MPI_Fint *win, MPI_Fint *ierr) { *ierr = MPI_Win_flush_all(W_(win)); }
void mpi_win_flush_local_(MPI_Fint *rank, MPI_Fint *win, MPI_Fint *ierr) {
    *ierr = MPI_Win_flush_local(*rank, W_(win));
}
void mpi_win_flush_local_all_(MPI_Fint *win, MPI_Fint *ierr) {
    *ierr = MPI_Win_flush_local_all(W_(win));
}
void mpi_win_sync_(MPI_Fint *win, MPI_Fint *ierr) { *ierr = MPI_Win_sync(W_(win)); }

/* MPI-IO: counted, not recorded (see the C wrappers). Fortran strings arrive with their length
 * after the other arguments (gfortran passes it as size_t) and without a terminating zero. */
#define FH_(x) MPI_File_f2c(*(x))
static char *f_string(const char *s, size_t len) {
    while (len > 0 && s[len - 1] == ' ') len--;
    char *c = malloc(len + 1);
    if (!c) abort();
    memcpy(c, s, len);
    c[len] = 0;
    return c;
}
void mpi_file_open_(MPI_Fint *comm, char *name, MPI_Fint *mode, MPI_Fint *info, MPI_Fint *fh,
                    MPI_Fint *ierr, size_t name_len) {
    char *c = f_string(name, name_len);
    MPI_File f;
    *ierr = MPI_File_open(C_(comm), c, *mode, MPI_Info_f2c(*info), &f);
    *fh = MPI_File_c2f(f);
    free(c);
}
void mpi_file_close_(MPI_Fint *fh, MPI_Fint *ierr) {
    MPI_File f = FH_(fh);
    *ierr = MPI_File_close(&f);
    *fh = MPI_File_c2f(f);
}
void mpi_file_set_view_(MPI_Fint *fh, MPI_Offset *disp, MPI_Fint *et, MPI_Fint *ft, char *rep,
                        MPI_Fint *info, MPI_Fint *ierr, size_t rep_len) {
    char *c = f_string(rep, rep_len);
    *ierr = MPI_File_set_view(FH_(fh), *disp, T_(et), T_(ft), c, MPI_Info_f2c(*info));
    free(c);
}
void mpi_file_sync_(MPI_Fint *fh, MPI_Fint *ierr) { *ierr = MPI_File_sync(FH_(fh)); }

#define F_FILE_IO(FNAME, CNAME)                                                                \
    void FNAME(MPI_Fint *fh, void *b, MPI_Fint *n, MPI_Fint *t, MPI_Fint *st, MPI_Fint *ierr) { \
        MPI_Status c;                                                                          \
        *ierr = CNAME(FH_(fh), f_buf(b), *n, T_(t), &c);                                       \
        f_status(st, &c);                                                                      \
    }
F_FILE_IO(mpi_file_read_, MPI_File_read)
F_FILE_IO(mpi_file_read_all_, MPI_File_read_all)
F_FILE_IO(mpi_file_write_, MPI_File_write)
F_FILE_IO(mpi_file_write_all_, MPI_File_write_all)

#define F_FILE_IO_AT(FNAME, CNAME)                                                             \
    void FNAME(MPI_Fint *fh, MPI_Offset *at, void *b, MPI_Fint *n, MPI_Fint *t, MPI_Fint *st,  \
               MPI_Fint *ierr) {                                                               \
        MPI_Status c;                                                                          \
        *ierr = CNAME(FH_(fh), *at, f_buf(b), *n, T_(t), &c);                                  \
        f_status(st, &c);                                                                      \
    }
F_FILE_IO_AT(mpi_file_read_at_, MPI_File_read_at)
F_FILE_IO_AT(mpi_file_read_at_all_, MPI_File_read_at_all)
F_FILE_IO_AT(mpi_file_write_at_, MPI_File_write_at)
F_FILE_IO_AT(mpi_file_write_at_all_, MPI_File_write_at_all)
