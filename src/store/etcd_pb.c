/*
 * etcd_pb.c -- etcd's v3 messages in protobuf (etcd_pb.h).
 *
 * Field numbers, by message (etcdserverpb unless said):
 *   ResponseHeader     cluster_id 1, member_id 2, revision 3, raft_term 4
 *   mvccpb.KeyValue    key 1, create_revision 2, mod_revision 3, version 4,
 *                      value 5, lease 6
 *   mvccpb.Event       type 1 (PUT 0, DELETE 1), kv 2, prev_kv 3
 *   RangeRequest       key 1, range_end 2, limit 3, revision 4, keys_only 8,
 *                      count_only 9
 *   RangeResponse      header 1, kvs 2, more 3, count 4
 *   PutRequest         key 1, value 2
 *   DeleteRangeRequest key 1
 *   RequestOp          request_range 1, request_put 2, request_delete_range 3
 *   ResponseOp         response_range 1, response_put 2, ... (oneof)
 *   Compare            result 1 (EQUAL 0, GREATER 1), target 2 (CREATE 1,
 *                      MOD 2), key 3, create_revision 5, mod_revision 6
 *   TxnRequest         compare 1, success 2, failure 3
 *   TxnResponse        header 1, succeeded 2, responses 3
 *   CompactionRequest  revision 1, physical 2
 *   WatchRequest       create_request 1, cancel_request 2, progress_request 3
 *   WatchCreateRequest key 1, range_end 2, start_revision 3,
 *                      progress_notify 4, prev_kv 6, fragment 8
 *   WatchCancelRequest watch_id 1
 *   WatchResponse      header 1, watch_id 2, created 3, canceled 4,
 *                      compact_revision 5, cancel_reason 6, fragment 7,
 *                      events 11
 *   StatusResponse     header 1, version 2, dbSize 3, leader 4, raftIndex 5,
 *                      raftTerm 6, dbSizeInUse 9
 *   SnapshotResponse   header 1, remaining_bytes 2, blob 3
 * Compare's target value is a oneof: written even when 0 (create_revision
 * 0 is "the key does not exist").
 */
#include "store/etcd_pb.h"

#include <string.h>

#include "lib/err.h"
#include "lib/pbwire.h"

/* ---- encoding ---- */

static void put_int(pbw_t *w, uint32_t field, int64_t v)
{
    if (!v) return; /* proto3: a zero is not written */
    pbw_tag(w, field, PBW_VARINT);
    pbw_varint(w, (uint64_t)v);
}

static void put_int_always(pbw_t *w, uint32_t field, int64_t v)
{
    pbw_tag(w, field, PBW_VARINT);
    pbw_varint(w, (uint64_t)v);
}

static void put_bytes(pbw_t *w, uint32_t field, const void *p, size_t n)
{
    if (p) pbw_bytes(w, field, p, n);
}

static void range_body(pbw_t *w, const void *key, size_t klen, const void *end, size_t elen,
                       int64_t limit, int64_t rev, unsigned flags)
{
    put_bytes(w, 1, key, klen);
    put_bytes(w, 2, end, elen);
    put_int(w, 3, limit);
    put_int(w, 4, rev);
    put_int(w, 8, (flags & ETCD_PB_KEYS_ONLY) != 0);
    put_int(w, 9, (flags & ETCD_PB_COUNT_ONLY) != 0);
}

int etcd_pb_range(buf_t *b, const void *key, size_t klen, const void *end, size_t elen,
                  int64_t limit, int64_t rev, unsigned flags)
{
    pbw_t w = {.b = b};
    range_body(&w, key, klen, end, elen, limit, rev, flags);
    return w.rc;
}

int etcd_pb_write_txn(buf_t *b, int op, const void *key, size_t klen, const void *value,
                      size_t vlen, int64_t expect)
{
    if (op != ETCD_PB_CREATE && op != ETCD_PB_PUT && op != ETCD_PB_DELETE) return KP_EINVAL;
    pbw_t w = {.b = b};
    size_t cmp = pbw_begin(&w, 1);
    if (op == ETCD_PB_CREATE || !expect) {
        put_int(&w, 1, op == ETCD_PB_CREATE ? 0 : 1); /* EQUAL, or GREATER */
        put_int(&w, 2, 1);                            /* CREATE */
        put_bytes(&w, 3, key, klen);
        put_int_always(&w, 5, 0);
    } else {
        put_int(&w, 2, 2); /* MOD, EQUAL */
        put_bytes(&w, 3, key, klen);
        put_int_always(&w, 6, expect);
    }
    pbw_end(&w, cmp);
    size_t then = pbw_begin(&w, 2);
    size_t req = pbw_begin(&w, op == ETCD_PB_DELETE ? 3 : 2);
    put_bytes(&w, 1, key, klen);
    if (op != ETCD_PB_DELETE && vlen) put_bytes(&w, 2, value, vlen);
    pbw_end(&w, req);
    pbw_end(&w, then);
    if (op != ETCD_PB_CREATE) {
        size_t otherwise = pbw_begin(&w, 3);
        size_t range = pbw_begin(&w, 1);
        range_body(&w, key, klen, NULL, 0, 0, 0, ETCD_PB_KEYS_ONLY);
        pbw_end(&w, range);
        pbw_end(&w, otherwise);
    }
    return w.rc;
}

int etcd_pb_compact(buf_t *b, int64_t rev, int physical)
{
    pbw_t w = {.b = b};
    put_int(&w, 1, rev);
    put_int(&w, 2, physical != 0);
    return w.rc;
}

int etcd_pb_watch_create(buf_t *b, const void *key, size_t klen, const void *end, size_t elen,
                         int64_t start_rev, int progress_notify, int fragment)
{
    pbw_t w = {.b = b};
    size_t create = pbw_begin(&w, 1);
    put_bytes(&w, 1, key, klen);
    put_bytes(&w, 2, end, elen);
    put_int(&w, 3, start_rev);
    put_int(&w, 4, progress_notify != 0);
    put_int(&w, 6, 1); /* prev_kv */
    put_int(&w, 8, fragment != 0);
    pbw_end(&w, create);
    return w.rc;
}

int etcd_pb_watch_progress(buf_t *b)
{
    pbw_t w = {.b = b};
    pbw_bytes(&w, 3, "", 0); /* an empty WatchProgressRequest, present */
    return w.rc;
}

int etcd_pb_watch_cancel(buf_t *b, int64_t watch_id)
{
    pbw_t w = {.b = b};
    size_t cancel = pbw_begin(&w, 2);
    put_int(&w, 1, watch_id);
    pbw_end(&w, cancel);
    return w.rc;
}

/* ---- decoding ---- */

/* The next field of r: 1, 0 at the end, or KP_ECORRUPT. */
static int next(pbr_t *r, pbr_val_t *f)
{
    if (r->p == r->end) return 0;
    return pbr_field(r, f) ? KP_ECORRUPT : 1;
}

/* f's value as a varint field, or KP_ECORRUPT for another wire type. */
static int want_varint(const pbr_val_t *f, uint64_t *v)
{
    if (f->wt != PBW_VARINT) return KP_ECORRUPT;
    *v = f->u;
    return 0;
}

static int want_len(const pbr_val_t *f)
{
    return f->wt == PBW_LEN ? 0 : KP_ECORRUPT;
}

static int header(const uint8_t *p, size_t n, etcd_pb_header_t *h)
{
    pbr_t r = {p, p + n};
    pbr_val_t f;
    int more = 0, rc = 0;
    memset(h, 0, sizeof *h);
    while (!rc && (more = next(&r, &f)) == 1) {
        uint64_t v = 0;
        if (f.num >= 1 && f.num <= 4 && (rc = want_varint(&f, &v))) break;
        if (f.num == 1)
            h->cluster_id = v;
        else if (f.num == 2)
            h->member_id = v;
        else if (f.num == 3)
            h->revision = (int64_t)v;
        else if (f.num == 4)
            h->raft_term = v;
    }
    return rc ? rc : more;
}

static int kv(const uint8_t *p, size_t n, etcd_pb_kv_t *out)
{
    pbr_t r = {p, p + n};
    pbr_val_t f;
    int more = 0, rc = 0;
    memset(out, 0, sizeof *out);
    out->key = out->value = (const uint8_t *)"";
    while (!rc && (more = next(&r, &f)) == 1) {
        uint64_t v = 0;
        if (f.num == 1 || f.num == 5) {
            if ((rc = want_len(&f))) break;
            if (f.num == 1)
                out->key = f.data, out->key_len = f.len;
            else
                out->value = f.data, out->value_len = f.len;
            continue;
        }
        if (f.num >= 2 && f.num <= 6 && (rc = want_varint(&f, &v))) break;
        if (f.num == 2)
            out->create_rev = (int64_t)v;
        else if (f.num == 3)
            out->mod_rev = (int64_t)v;
        else if (f.num == 4)
            out->version = (int64_t)v;
        else if (f.num == 6)
            out->lease = (int64_t)v;
    }
    return rc ? rc : more;
}

int etcd_pb_header_resp(const uint8_t *p, size_t n, etcd_pb_header_t *h)
{
    pbr_t r = {p, p + n};
    pbr_val_t f;
    int more;
    memset(h, 0, sizeof *h);
    /* etcd sends the header once, as the first field: what follows (a
     * range's every kv) is not read, so that any response's header costs
     * the same, however big the response */
    while ((more = next(&r, &f)) == 1)
        if (f.num == 1) return want_len(&f) ? KP_ECORRUPT : header(f.data, f.len, h);
    return more;
}

int etcd_pb_range_resp(const uint8_t *p, size_t n, etcd_pb_header_t *h, etcd_pb_kv_fn each,
                       void *arg, int *more_out, int64_t *count)
{
    pbr_t r = {p, p + n};
    pbr_val_t f;
    int more = 0, rc = 0;
    memset(h, 0, sizeof *h);
    *more_out = 0;
    *count = 0;
    while (!rc && (more = next(&r, &f)) == 1) {
        uint64_t v = 0;
        if (f.num == 1) {
            rc = want_len(&f) ? KP_ECORRUPT : header(f.data, f.len, h);
        } else if (f.num == 2) {
            etcd_pb_kv_t k;
            rc = want_len(&f) ? KP_ECORRUPT : kv(f.data, f.len, &k);
            if (!rc && each) rc = each(arg, &k);
        } else if (f.num == 3 || f.num == 4) {
            if ((rc = want_varint(&f, &v))) break;
            if (f.num == 3)
                *more_out = v != 0;
            else
                *count = (int64_t)v;
        }
    }
    return rc ? rc : more;
}

/* The first kv of a RangeResponse, if any. */
static int first_kv(void *arg, const etcd_pb_kv_t *k)
{
    etcd_pb_txn_result_t *t = arg;
    if (!t->found) {
        t->kv = *k;
        t->found = 1;
    }
    return 0;
}

int etcd_pb_txn_resp(const uint8_t *p, size_t n, etcd_pb_txn_result_t *out)
{
    pbr_t r = {p, p + n};
    pbr_val_t f;
    int more = 0, rc = 0, ops = 0;
    memset(out, 0, sizeof *out);
    while (!rc && (more = next(&r, &f)) == 1) {
        uint64_t v = 0;
        if (f.num == 1) {
            rc = want_len(&f) ? KP_ECORRUPT : header(f.data, f.len, &out->h);
        } else if (f.num == 2) {
            rc = want_varint(&f, &v);
            out->succeeded = v != 0;
        } else if (f.num == 3 && !ops++) { /* the first ResponseOp */
            if ((rc = want_len(&f))) break;
            pbr_t o = {f.data, f.data + f.len};
            pbr_val_t g;
            int m = 0;
            while (!rc && (m = next(&o, &g)) == 1) {
                if (g.num != 1) continue; /* not a range */
                etcd_pb_header_t h;
                int64_t count;
                int rmore;
                rc = want_len(&g)
                         ? KP_ECORRUPT
                         : etcd_pb_range_resp(g.data, g.len, &h, first_kv, out, &rmore, &count);
            }
            if (!rc && m < 0) rc = m;
        }
    }
    return rc ? rc : more;
}

/* One Event's fields into *ev. */
static int event(const uint8_t *p, size_t n, etcd_pb_event_t *ev)
{
    pbr_t r = {p, p + n};
    pbr_val_t f;
    int more = 0, rc = 0;
    memset(ev, 0, sizeof *ev);
    ev->kv.key = ev->kv.value = (const uint8_t *)"";
    while (!rc && (more = next(&r, &f)) == 1) {
        uint64_t v = 0;
        if (f.num == 1) {
            rc = want_varint(&f, &v);
            ev->type = (int)v;
        } else if (f.num == 2) {
            rc = want_len(&f) ? KP_ECORRUPT : kv(f.data, f.len, &ev->kv);
        } else if (f.num == 3) {
            rc = want_len(&f) ? KP_ECORRUPT : kv(f.data, f.len, &ev->prev);
            ev->has_prev = 1;
        }
    }
    return rc ? rc : more;
}

int etcd_pb_watch_resp(const uint8_t *p, size_t n, etcd_pb_watch_resp_t *out, etcd_pb_event_fn each,
                       void *arg)
{
    pbr_t r = {p, p + n};
    pbr_val_t f;
    int more = 0, rc = 0;
    memset(out, 0, sizeof *out);
    out->cancel_reason = "";
    while (!rc && (more = next(&r, &f)) == 1) {
        uint64_t v = 0;
        switch (f.num) {
        case 1:
            rc = want_len(&f) ? KP_ECORRUPT : header(f.data, f.len, &out->h);
            break;
        case 2:
            rc = want_varint(&f, &v), out->watch_id = (int64_t)v;
            break;
        case 3:
            rc = want_varint(&f, &v), out->created = v != 0;
            break;
        case 4:
            rc = want_varint(&f, &v), out->canceled = v != 0;
            break;
        case 5:
            rc = want_varint(&f, &v), out->compact_revision = (int64_t)v;
            break;
        case 6:
            if (!(rc = want_len(&f)))
                out->cancel_reason = (const char *)f.data, out->cancel_reason_len = f.len;
            break;
        case 7:
            rc = want_varint(&f, &v), out->fragment = v != 0;
            break;
        case 11: {
            etcd_pb_event_t ev;
            rc = want_len(&f) ? KP_ECORRUPT : event(f.data, f.len, &ev);
            if (!rc) out->events++;
            if (!rc && each) rc = each(arg, &ev);
            break;
        }
        default:
            break;
        }
    }
    return rc ? rc : more;
}

int etcd_pb_status_resp(const uint8_t *p, size_t n, etcd_pb_status_t *out)
{
    pbr_t r = {p, p + n};
    pbr_val_t f;
    int more = 0, rc = 0;
    memset(out, 0, sizeof *out);
    while (!rc && (more = next(&r, &f)) == 1) {
        uint64_t v = 0;
        if (f.num == 1) {
            rc = want_len(&f) ? KP_ECORRUPT : header(f.data, f.len, &out->h);
        } else if (f.num == 2) {
            if ((rc = want_len(&f))) break;
            size_t len = f.len < sizeof out->version ? f.len : sizeof out->version - 1;
            memcpy(out->version, f.data, len);
            out->version[len] = '\0';
        } else if ((f.num >= 3 && f.num <= 6) || f.num == 9) {
            if ((rc = want_varint(&f, &v))) break;
            if (f.num == 3)
                out->db_size = (int64_t)v;
            else if (f.num == 4)
                out->leader = v;
            else if (f.num == 5)
                out->raft_index = v;
            else if (f.num == 6)
                out->raft_term = v;
            else
                out->db_size_in_use = (int64_t)v;
        }
    }
    return rc ? rc : more;
}

int etcd_pb_snapshot_resp(const uint8_t *p, size_t n, etcd_pb_snapshot_t *out)
{
    pbr_t r = {p, p + n};
    pbr_val_t f;
    int more = 0, rc = 0;
    memset(out, 0, sizeof *out);
    out->blob = (const uint8_t *)"";
    while (!rc && (more = next(&r, &f)) == 1) {
        uint64_t v = 0;
        if (f.num == 1) {
            rc = want_len(&f) ? KP_ECORRUPT : header(f.data, f.len, &out->h);
        } else if (f.num == 2) {
            rc = want_varint(&f, &v);
            out->remaining_bytes = v;
        } else if (f.num == 3) {
            if (!(rc = want_len(&f))) out->blob = f.data, out->blob_len = f.len;
        }
    }
    return rc ? rc : more;
}
