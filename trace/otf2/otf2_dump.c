/* mpiskel-otf2-dump ANCHOR OUT: reads an OTF2 trace with the reference library (libotf2) and
 * writes what mpiskel needs into OUT as lines of text, one record per line, for
 * trace/src/otf2.rs to parse (mpiskel builds this program when it first reads an OTF2 trace):
 *
 *   C <ticks per second> <global offset>           clock properties
 *   S <string id> <text to the end of the line>    a string (newlines replaced by spaces)
 *   R <region id> <name string id>                 a region
 *   L <location id> <number of events>             a location
 *   G <group id> <type> <n> <members…>             a group: type L (MPI locations, in rank
 *                                                  order), R (ranks), S (self), O (other)
 *   M <comm id> <group id>                         a communicator
 *   E|X <location> <time> <region>                 enter, leave
 *   s <location> <time> <peer> <comm> <tag> <bytes>         MpiSend (r: MpiRecv)
 *   i <location> <time> <peer> <comm> <tag> <bytes> <req>   MpiIsend (j: MpiIrecv)
 *   I|q|t|x <location> <time> <req>               MpiIsendComplete, MpiIrecvRequest,
 *                                                  MpiRequestTest, MpiRequestCancelled
 *   c <location> <time> <op> <comm> <root> <sent> <received>  MpiCollectiveEnd
 *
 * Events come in time order over all locations (the global event reader). Exits 1 with a
 * message on standard error when libotf2 cannot read the trace. */

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <otf2/otf2.h>

static FILE *out;
static uint64_t *locs;
static size_t n_locs, cap_locs;

static OTF2_CallbackCode def_clock(void *u, uint64_t res, uint64_t off, uint64_t len,
                                   uint64_t real) {
    (void)u, (void)len, (void)real;
    fprintf(out, "C %" PRIu64 " %" PRIu64 "\n", res, off);
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode def_string(void *u, OTF2_StringRef self, const char *s) {
    (void)u;
    fprintf(out, "S %" PRIu32 " ", self);
    for (; s && *s; s++) fputc(*s == '\n' || *s == '\r' ? ' ' : *s, out);
    fputc('\n', out);
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode def_region(void *u, OTF2_RegionRef self, OTF2_StringRef name,
                                    OTF2_StringRef canon, OTF2_StringRef descr,
                                    OTF2_RegionRole role, OTF2_Paradigm par, OTF2_RegionFlag fl,
                                    OTF2_StringRef file, uint32_t b, uint32_t e) {
    (void)u, (void)descr, (void)role, (void)par, (void)fl, (void)file, (void)b, (void)e;
    (void)name;
    fprintf(out, "R %" PRIu32 " %" PRIu32 "\n", self, canon);
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode def_location(void *u, OTF2_LocationRef self, OTF2_StringRef name,
                                      OTF2_LocationType type, uint64_t events,
                                      OTF2_LocationGroupRef group) {
    (void)name, (void)type, (void)group;
    OTF2_Reader *reader = u;
    OTF2_Reader_SelectLocation(reader, self);
    if (n_locs == cap_locs) {
        size_t cap = cap_locs ? 2 * cap_locs : 64;
        uint64_t *more = realloc(locs, cap * sizeof *locs);
        if (!more) return OTF2_CALLBACK_INTERRUPT;
        locs = more, cap_locs = cap;
    }
    locs[n_locs++] = self;
    fprintf(out, "L %" PRIu64 " %" PRIu64 "\n", self, events);
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode def_group(void *u, OTF2_GroupRef self, OTF2_StringRef name,
                                   OTF2_GroupType type, OTF2_Paradigm par, OTF2_GroupFlag fl,
                                   uint32_t n, const uint64_t *members) {
    (void)u, (void)name, (void)fl;
    char t = 'O';
    if (type == OTF2_GROUP_TYPE_COMM_LOCATIONS && par == OTF2_PARADIGM_MPI) t = 'L';
    else if (type == OTF2_GROUP_TYPE_COMM_GROUP) t = 'R';
    else if (type == OTF2_GROUP_TYPE_COMM_SELF) t = 'S';
    fprintf(out, "G %" PRIu32 " %c %" PRIu32, self, t, n);
    for (uint32_t i = 0; i < n; i++) fprintf(out, " %" PRIu64, members[i]);
    fputc('\n', out);
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode def_comm(void *u, OTF2_CommRef self, OTF2_StringRef name,
                                  OTF2_GroupRef group, OTF2_CommRef parent, OTF2_CommFlag fl) {
    (void)u, (void)name, (void)parent, (void)fl;
    fprintf(out, "M %" PRIu32 " %" PRIu32 "\n", self, group);
    return OTF2_CALLBACK_SUCCESS;
}

#define HEAD OTF2_LocationRef l, OTF2_TimeStamp t, void *u, OTF2_AttributeList *a
#define LT "%" PRIu64 " %" PRIu64
#define UNUSED (void)u, (void)a

static OTF2_CallbackCode ev_enter(HEAD, OTF2_RegionRef r) {
    UNUSED;
    fprintf(out, "E " LT " %" PRIu32 "\n", l, t, r);
    return OTF2_CALLBACK_SUCCESS;
}
static OTF2_CallbackCode ev_leave(HEAD, OTF2_RegionRef r) {
    UNUSED;
    fprintf(out, "X " LT " %" PRIu32 "\n", l, t, r);
    return OTF2_CALLBACK_SUCCESS;
}
static OTF2_CallbackCode p2p(char k, OTF2_LocationRef l, OTF2_TimeStamp t, uint32_t peer,
                             OTF2_CommRef c, uint32_t tag, uint64_t len) {
    fprintf(out, "%c " LT " %" PRIu32 " %" PRIu32 " %" PRIu32 " %" PRIu64, k, l, t, peer, c,
            tag, len);
    return OTF2_CALLBACK_SUCCESS;
}
static OTF2_CallbackCode ev_send(HEAD, uint32_t peer, OTF2_CommRef c, uint32_t tag, uint64_t n) {
    UNUSED;
    p2p('s', l, t, peer, c, tag, n);
    fputc('\n', out);
    return OTF2_CALLBACK_SUCCESS;
}
static OTF2_CallbackCode ev_recv(HEAD, uint32_t peer, OTF2_CommRef c, uint32_t tag, uint64_t n) {
    UNUSED;
    p2p('r', l, t, peer, c, tag, n);
    fputc('\n', out);
    return OTF2_CALLBACK_SUCCESS;
}
static OTF2_CallbackCode ev_isend(HEAD, uint32_t peer, OTF2_CommRef c, uint32_t tag, uint64_t n,
                                  uint64_t req) {
    UNUSED;
    p2p('i', l, t, peer, c, tag, n);
    fprintf(out, " %" PRIu64 "\n", req);
    return OTF2_CALLBACK_SUCCESS;
}
static OTF2_CallbackCode ev_irecv(HEAD, uint32_t peer, OTF2_CommRef c, uint32_t tag, uint64_t n,
                                  uint64_t req) {
    UNUSED;
    p2p('j', l, t, peer, c, tag, n);
    fprintf(out, " %" PRIu64 "\n", req);
    return OTF2_CALLBACK_SUCCESS;
}
static OTF2_CallbackCode req(char k, OTF2_LocationRef l, OTF2_TimeStamp t, uint64_t r) {
    fprintf(out, "%c " LT " %" PRIu64 "\n", k, l, t, r);
    return OTF2_CALLBACK_SUCCESS;
}
static OTF2_CallbackCode ev_isend_done(HEAD, uint64_t r) { UNUSED; return req('I', l, t, r); }
static OTF2_CallbackCode ev_irecv_req(HEAD, uint64_t r) { UNUSED; return req('q', l, t, r); }
static OTF2_CallbackCode ev_test(HEAD, uint64_t r) { UNUSED; return req('t', l, t, r); }
static OTF2_CallbackCode ev_cancel(HEAD, uint64_t r) { UNUSED; return req('x', l, t, r); }
static OTF2_CallbackCode ev_coll(HEAD, OTF2_CollectiveOp op, OTF2_CommRef c, uint32_t root,
                                 uint64_t sent, uint64_t recvd) {
    UNUSED;
    fprintf(out, "c " LT " %d %" PRIu32 " %" PRIu32 " %" PRIu64 " %" PRIu64 "\n", l, t, (int)op,
            c, root, sent, recvd);
    return OTF2_CALLBACK_SUCCESS;
}

/* libotf2's own messages: the first one kept (it names the cause), none printed. */
static char first_error[256];

static OTF2_ErrorCode on_error(void *u, const char *file, uint64_t line, const char *fn,
                               OTF2_ErrorCode code, const char *fmt, va_list va) {
    (void)u, (void)file, (void)line, (void)fn;
    if (!first_error[0] && fmt) vsnprintf(first_error, sizeof first_error, fmt, va);
    return code;
}

/* Writes the trace whose anchor file is `anchor` to `path`; 0 on success, otherwise a message
 * in `err` (of `errlen` bytes). */
static int dump(const char *anchor, const char *path, char *err, size_t errlen) {
    first_error[0] = 0;
    OTF2_Error_RegisterCallback(on_error, NULL);
    OTF2_Reader *reader = OTF2_Reader_Open(anchor);
    if (!reader) {
        snprintf(err, errlen, "libotf2 cannot open it as an OTF2 anchor file (%s)", first_error);
        return 1;
    }
    out = fopen(path, "w");
    if (!out) {
        snprintf(err, errlen, "cannot write %s", path);
        OTF2_Reader_Close(reader);
        return 1;
    }
    int rc = 0;
    OTF2_ErrorCode e = OTF2_Reader_SetSerialCollectiveCallbacks(reader);
    OTF2_GlobalDefReader *gdr = e == OTF2_SUCCESS ? OTF2_Reader_GetGlobalDefReader(reader) : NULL;
    if (!gdr) {
        snprintf(err, errlen, "libotf2 finds no global definitions: %s", OTF2_Error_GetName(e));
        rc = 1;
        goto done;
    }
    OTF2_GlobalDefReaderCallbacks *dc = OTF2_GlobalDefReaderCallbacks_New();
    OTF2_GlobalDefReaderCallbacks_SetClockPropertiesCallback(dc, def_clock);
    OTF2_GlobalDefReaderCallbacks_SetStringCallback(dc, def_string);
    OTF2_GlobalDefReaderCallbacks_SetRegionCallback(dc, def_region);
    OTF2_GlobalDefReaderCallbacks_SetLocationCallback(dc, def_location);
    OTF2_GlobalDefReaderCallbacks_SetGroupCallback(dc, def_group);
    OTF2_GlobalDefReaderCallbacks_SetCommCallback(dc, def_comm);
    OTF2_Reader_RegisterGlobalDefCallbacks(reader, gdr, dc, reader);
    OTF2_GlobalDefReaderCallbacks_Delete(dc);
    uint64_t n = 0;
    e = OTF2_Reader_ReadAllGlobalDefinitions(reader, gdr, &n);
    OTF2_Reader_CloseGlobalDefReader(reader, gdr);
    if (e != OTF2_SUCCESS) {
        snprintf(err, errlen, "libotf2 cannot read the global definitions: %s (%s)",
                 OTF2_Error_GetName(e), first_error);
        rc = 1;
        goto done;
    }
    /* Every location: its local definitions (the mappings of its ids to the global ones),
     * then its event reader, before the global event reader merges them. */
    e = OTF2_Reader_OpenDefFiles(reader);
    if (e == OTF2_SUCCESS) {
        for (size_t k = 0; k < n_locs; k++) {
            OTF2_DefReader *dr = OTF2_Reader_GetDefReader(reader, locs[k]);
            if (dr) {
                uint64_t d = 0;
                OTF2_Reader_ReadAllLocalDefinitions(reader, dr, &d);
                OTF2_Reader_CloseDefReader(reader, dr);
            }
        }
        OTF2_Reader_CloseDefFiles(reader);
    }
    e = OTF2_Reader_OpenEvtFiles(reader);
    if (e != OTF2_SUCCESS) {
        snprintf(err, errlen, "libotf2 cannot open the event files: %s", OTF2_Error_GetName(e));
        rc = 1;
        goto done;
    }
    for (size_t k = 0; k < n_locs; k++) OTF2_Reader_GetEvtReader(reader, locs[k]);
    OTF2_GlobalEvtReader *ger = NULL;
    ger = OTF2_Reader_GetGlobalEvtReader(reader);
    if (!ger) {
        snprintf(err, errlen, "libotf2 gives no event reader");
        rc = 1;
        goto done;
    }
    OTF2_GlobalEvtReaderCallbacks *ec = OTF2_GlobalEvtReaderCallbacks_New();
    OTF2_GlobalEvtReaderCallbacks_SetEnterCallback(ec, ev_enter);
    OTF2_GlobalEvtReaderCallbacks_SetLeaveCallback(ec, ev_leave);
    OTF2_GlobalEvtReaderCallbacks_SetMpiSendCallback(ec, ev_send);
    OTF2_GlobalEvtReaderCallbacks_SetMpiRecvCallback(ec, ev_recv);
    OTF2_GlobalEvtReaderCallbacks_SetMpiIsendCallback(ec, ev_isend);
    OTF2_GlobalEvtReaderCallbacks_SetMpiIrecvCallback(ec, ev_irecv);
    OTF2_GlobalEvtReaderCallbacks_SetMpiIsendCompleteCallback(ec, ev_isend_done);
    OTF2_GlobalEvtReaderCallbacks_SetMpiIrecvRequestCallback(ec, ev_irecv_req);
    OTF2_GlobalEvtReaderCallbacks_SetMpiRequestTestCallback(ec, ev_test);
    OTF2_GlobalEvtReaderCallbacks_SetMpiRequestCancelledCallback(ec, ev_cancel);
    OTF2_GlobalEvtReaderCallbacks_SetMpiCollectiveEndCallback(ec, ev_coll);
    OTF2_Reader_RegisterGlobalEvtCallbacks(reader, ger, ec, NULL);
    OTF2_GlobalEvtReaderCallbacks_Delete(ec);
    e = OTF2_Reader_ReadAllGlobalEvents(reader, ger, &n);
    OTF2_Reader_CloseGlobalEvtReader(reader, ger);
    OTF2_Reader_CloseEvtFiles(reader);
    if (e != OTF2_SUCCESS) {
        snprintf(err, errlen, "libotf2 cannot read the events: %s (%s)", OTF2_Error_GetName(e),
                 first_error);
        rc = 1;
    }
done:
    if (fclose(out) != 0 && rc == 0) {
        snprintf(err, errlen, "cannot write %s", path);
        rc = 1;
    }
    out = NULL;
    OTF2_Reader_Close(reader);
    free(locs);
    locs = NULL, n_locs = cap_locs = 0;
    return rc;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s ANCHOR OUT\n", argv[0]);
        return 2;
    }
    char err[512] = "";
    if (dump(argv[1], argv[2], err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    return 0;
}
