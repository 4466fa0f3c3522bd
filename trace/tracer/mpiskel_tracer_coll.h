/*
 * mpiskel PMPI tracer, part of mpiskel_tracer.c (which includes the parts in order, as one
 * translation unit): collectives, one-sided communication and MPI-IO (counted, not recorded), communicators.
 */

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

/* ---- neighbourhood collectives: recorded as the messages they make --------------------------- */
/* A neighbourhood collective (MPI_Neighbor_… and MPI_Ineighbor_…) is recorded as what it does:
 * an MPI_Isend to each out-neighbour and an MPI_Irecv from each in-neighbour of its communicator
 * (a Cartesian, graph or distributed-graph topology), under NEIGHBOR_TAG, and for the blocking
 * forms an MPI_Waitall of them; a non-blocking form's request completes them all where the
 * program completes it (REQ_NEIGHBOR). The whole call's time is the last record's. Neighbours
 * that are MPI_PROC_NULL (a Cartesian edge) exchange nothing. */
#define NEIGHBOR_TAG 32767

/* The in- and out-neighbours of `comm`, in the order the MPI standard gives their blocks; both
 * arrays malloc'd (freed by the caller). Returns 0 where `comm` has no topology. */
static int neighbors_of(MPI_Comm comm, int *indeg, int **src, int *outdeg, int **dst) {
    int kind = MPI_UNDEFINED;
    *indeg = *outdeg = 0;
    *src = *dst = NULL;
    PMPI_Topo_test(comm, &kind);
    if (kind == MPI_CART) {
        int nd = 0;
        PMPI_Cartdim_get(comm, &nd);
        *indeg = *outdeg = 2 * nd;
        *src = malloc(sizeof(int) * (size_t)(2 * nd + 1));
        *dst = malloc(sizeof(int) * (size_t)(2 * nd + 1));
        if (!*src || !*dst) abort();
        for (int d = 0; d < nd; d++) {
            int lo = MPI_PROC_NULL, hi = MPI_PROC_NULL;
            PMPI_Cart_shift(comm, d, 1, &lo, &hi);
            (*src)[2 * d] = (*dst)[2 * d] = lo;
            (*src)[2 * d + 1] = (*dst)[2 * d + 1] = hi;
        }
        return 1;
    }
    if (kind == MPI_GRAPH) {
        int me = 0, n = 0;
        PMPI_Comm_rank(comm, &me);
        PMPI_Graph_neighbors_count(comm, me, &n);
        *src = malloc(sizeof(int) * (size_t)(n + 1));
        *dst = malloc(sizeof(int) * (size_t)(n + 1));
        if (!*src || !*dst) abort();
        PMPI_Graph_neighbors(comm, me, n, *src);
        memcpy(*dst, *src, sizeof(int) * (size_t)n);
        *indeg = *outdeg = n;
        return 1;
    }
    if (kind == MPI_DIST_GRAPH) {
        int weighted = 0;
        PMPI_Dist_graph_neighbors_count(comm, indeg, outdeg, &weighted);
        *src = malloc(sizeof(int) * (size_t)(*indeg + 1));
        *dst = malloc(sizeof(int) * (size_t)(*outdeg + 1));
        int *sw = malloc(sizeof(int) * (size_t)(*indeg + 1));
        int *dw = malloc(sizeof(int) * (size_t)(*outdeg + 1));
        if (!*src || !*dst || !sw || !dw) abort();
        PMPI_Dist_graph_neighbors(comm, *indeg, *src, sw, *outdeg, *dst, dw);
        free(sw);
        free(dw);
        return 1;
    }
    return 0;
}

/* What one neighbourhood collective moves per neighbour: a count and type for all (`*count`,
 * `*type`) or per neighbour (`counts`, `types`). */
struct nbr_side {
    int count;
    MPI_Datatype type;
    const int *counts;
    const MPI_Datatype *types;
};
static uint64_t nbr_bytes(const struct nbr_side *s, int i) {
    int count = s->counts ? s->counts[i] : s->count;
    MPI_Datatype t = s->types ? s->types[i] : s->type;
    return type_bytes(count, t);
}

/* Records the neighbourhood collective on `comm` that ran from t_in to t_out (see above). */
static void rec_neighbor(MPI_Comm comm, const struct nbr_side *send, const struct nbr_side *recv,
                         uint64_t t_in, uint64_t t_out, uint64_t i_gap, MPI_Request *req) {
    int indeg, outdeg, *src, *dst;
    if (!neighbors_of(comm, &indeg, &src, &outdeg, &dst)) return;
    struct comm *c = comm_get(comm);
    uint32_t first = T.next_req + 1;
    int n = 0, made = 0, total = 0;
    for (int i = 0; i < outdeg; i++) total += dst[i] != MPI_PROC_NULL;
    for (int i = 0; i < indeg; i++) total += src[i] != MPI_PROC_NULL;
    /* The first record carries the gap before the call, the last the call's end. */
#define NBR_REC(OP, PEER, BYTES)                                                                 \
    do {                                                                                       \
        uint32_t id = ++T.next_req;                                                            \
        made++;                                                                                \
        int last = !req ? 0 : made == total;                                                   \
        rec_p2p(OP, t_in, last ? t_out : t_in, n == 0 ? i_gap : 0, PEER, NEIGHBOR_TAG, BYTES,  \
                c->id, id, 0);                                                                 \
        T.cpu_gap = 0;                                                                         \
        n++;                                                                                   \
    } while (0)
    for (int i = 0; i < outdeg; i++)
        if (dst[i] != MPI_PROC_NULL) NBR_REC(OP_ISEND, peer(c, dst[i]), nbr_bytes(send, i));
    for (int i = 0; i < indeg; i++)
        if (src[i] != MPI_PROC_NULL) NBR_REC(OP_IRECV, peer(c, src[i]), nbr_bytes(recv, i));
#undef NBR_REC
    if (!req) {
        ev_begin(OP_WAITALL, t_in, t_out, n == 0 ? i_gap : 0, 32 * (size_t)n);
        put_uvar((uint64_t)n);
        put_uvar((uint64_t)n);
        for (int k = 0; k < n; k++) {
            put_uvar(first + (uint32_t)k);
            put_u8(0);
        }
        commit();
    } else if (*req != MPI_REQUEST_NULL) {
        req_insert((struct req){req_key(*req), first, REQ_NEIGHBOR, NULL, n});
    }
    free(src);
    free(dst);
}

#define NEIGHBOR(CALL, REQ, SEND, RECV)                                                        \
    {                                                                                          \
        if (!TRACING) return CALL;                                                             \
        ENTER;                                                                                 \
        int rc = CALL;                                                                         \
        LEAVE;                                                                                 \
        struct nbr_side snd = SEND, rcv = RECV;                                                \
        rec_neighbor(comm, &snd, &rcv, REL(t_in), REL(t_out), i_gap, REQ);                     \
        return rc;                                                                             \
    }
#define ONE(CNT, TY) ((struct nbr_side){CNT, TY, NULL, NULL})
#define PER(CS, TY) ((struct nbr_side){0, TY, CS, NULL})
#define PERW(CS, TS) ((struct nbr_side){0, MPI_DATATYPE_NULL, CS, TS})

int MPI_Neighbor_allgather(const void *s, int scount, MPI_Datatype stype, void *r, int rcount,
                           MPI_Datatype rtype, MPI_Comm comm)
    NEIGHBOR(PMPI_Neighbor_allgather(s, scount, stype, r, rcount, rtype, comm), NULL,
             ONE(scount, stype), ONE(rcount, rtype))
int MPI_Ineighbor_allgather(const void *s, int scount, MPI_Datatype stype, void *r, int rcount,
                            MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
    NEIGHBOR(PMPI_Ineighbor_allgather(s, scount, stype, r, rcount, rtype, comm, req), req,
             ONE(scount, stype), ONE(rcount, rtype))
int MPI_Neighbor_allgatherv(const void *s, int scount, MPI_Datatype stype, void *r,
                            const int rcounts[], const int displs[], MPI_Datatype rtype,
                            MPI_Comm comm)
    NEIGHBOR(PMPI_Neighbor_allgatherv(s, scount, stype, r, rcounts, displs, rtype, comm), NULL,
             ONE(scount, stype), PER(rcounts, rtype))
int MPI_Ineighbor_allgatherv(const void *s, int scount, MPI_Datatype stype, void *r,
                             const int rcounts[], const int displs[], MPI_Datatype rtype,
                             MPI_Comm comm, MPI_Request *req)
    NEIGHBOR(PMPI_Ineighbor_allgatherv(s, scount, stype, r, rcounts, displs, rtype, comm, req),
             req, ONE(scount, stype), PER(rcounts, rtype))
int MPI_Neighbor_alltoall(const void *s, int scount, MPI_Datatype stype, void *r, int rcount,
                          MPI_Datatype rtype, MPI_Comm comm)
    NEIGHBOR(PMPI_Neighbor_alltoall(s, scount, stype, r, rcount, rtype, comm), NULL,
             ONE(scount, stype), ONE(rcount, rtype))
int MPI_Ineighbor_alltoall(const void *s, int scount, MPI_Datatype stype, void *r, int rcount,
                           MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
    NEIGHBOR(PMPI_Ineighbor_alltoall(s, scount, stype, r, rcount, rtype, comm, req), req,
             ONE(scount, stype), ONE(rcount, rtype))
int MPI_Neighbor_alltoallv(const void *s, const int scounts[], const int sdispls[],
                           MPI_Datatype stype, void *r, const int rcounts[], const int rdispls[],
                           MPI_Datatype rtype, MPI_Comm comm)
    NEIGHBOR(PMPI_Neighbor_alltoallv(s, scounts, sdispls, stype, r, rcounts, rdispls, rtype,
                                     comm),
             NULL, PER(scounts, stype), PER(rcounts, rtype))
int MPI_Ineighbor_alltoallv(const void *s, const int scounts[], const int sdispls[],
                            MPI_Datatype stype, void *r, const int rcounts[], const int rdispls[],
                            MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
    NEIGHBOR(PMPI_Ineighbor_alltoallv(s, scounts, sdispls, stype, r, rcounts, rdispls, rtype,
                                      comm, req),
             req, PER(scounts, stype), PER(rcounts, rtype))
int MPI_Neighbor_alltoallw(const void *s, const int scounts[], const MPI_Aint sdispls[],
                           const MPI_Datatype stypes[], void *r, const int rcounts[],
                           const MPI_Aint rdispls[], const MPI_Datatype rtypes[], MPI_Comm comm)
    NEIGHBOR(PMPI_Neighbor_alltoallw(s, scounts, sdispls, stypes, r, rcounts, rdispls, rtypes,
                                     comm),
             NULL, PERW(scounts, stypes), PERW(rcounts, rtypes))
int MPI_Ineighbor_alltoallw(const void *s, const int scounts[], const MPI_Aint sdispls[],
                            const MPI_Datatype stypes[], void *r, const int rcounts[],
                            const MPI_Aint rdispls[], const MPI_Datatype rtypes[], MPI_Comm comm,
                            MPI_Request *req)
    NEIGHBOR(PMPI_Ineighbor_alltoallw(s, scounts, sdispls, stypes, r, rcounts, rdispls, rtypes,
                                      comm, req),
             req, PERW(scounts, stypes), PERW(rcounts, rtypes))
#undef ONE
#undef PER
#undef PERW

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
