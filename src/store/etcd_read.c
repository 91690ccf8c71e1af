/*
 * etcd_read.c -- get and range through etcd's KV/Range.
 *
 * A range asks for the keys in [start, prefix end) with a limit: start is the
 * prefix, or the `after` key followed by a NUL byte (the next possible key),
 * and etcd's `more` says whether keys follow. A read at revision R reads etcd
 * revision R + ETCD__REV_OFFSET; etcd answers "compacted" and "future
 * revision" itself. Results are copied out of the response into one
 * caller-owned block, as store_range_free() expects: two passes over the
 * response, one to size the block, one to fill it.
 */
#include <stdlib.h>
#include <string.h>

#include "lib/err.h"
#include "etcd_int.h"
#include "store/etcd_pb.h"

/* One Range call; *resp is the caller's (free). */
static int range_call(etcd_store_t *es, const void *key, size_t klen, const void *end, size_t elen,
                      size_t limit, int64_t etcd_rev, unsigned flags, uint8_t **resp, size_t *len)
{
    buf_t req;
    buf_init(&req, (size_t)-1);
    int rc = etcd_pb_range(&req, key, klen, end, elen, (int64_t)limit, etcd_rev, flags);
    if (!rc)
        rc = etcd__rpc(es, "/etcdserverpb.KV/Range", &req, ETCD__READ, ETCD__TIMEOUT_MS, resp, len);
    buf_free(&req);
    return rc;
}

/* The first pass: how many kvs, how many bytes of keys and values. */
typedef struct sizing {
    size_t n, bytes;
} sizing_t;

static int size_kv(void *arg, const etcd_pb_kv_t *kv)
{
    sizing_t *z = arg;
    z->n++;
    z->bytes += kv->key_len + kv->value_len + 2;
    return 0;
}

/* The second pass: each kv into the block. */
typedef struct filling {
    store_kv_t *kvs;
    size_t i, n;
    char *p;
} filling_t;

static int fill_kv(void *arg, const etcd_pb_kv_t *kv)
{
    filling_t *f = arg;
    if (f->i == f->n) return KP_ECORRUPT; /* not the message of the first pass */
    char *k = f->p, *v = k + kv->key_len + 1;
    memcpy(k, kv->key, kv->key_len);
    k[kv->key_len] = '\0';
    memcpy(v, kv->value, kv->value_len);
    v[kv->value_len] = '\0';
    f->kvs[f->i++] = (store_kv_t){k,
                                  kv->key_len,
                                  v,
                                  kv->value_len,
                                  kv->create_rev ? kv->create_rev - ETCD__REV_OFFSET : 0,
                                  kv->mod_rev ? kv->mod_rev - ETCD__REV_OFFSET : 0,
                                  kv->version};
    f->p = v + kv->value_len + 1;
    return 0;
}

int etcd__get(store_t *s, const char *key, size_t klen, int64_t rev, store_kv_t **out)
{
    etcd_store_t *es = (etcd_store_t *)s;
    uint8_t *resp = NULL;
    size_t len = 0;
    int rc =
        range_call(es, key, klen, NULL, 0, 0, rev ? rev + ETCD__REV_OFFSET : 0, 0, &resp, &len);
    if (rc) return rc;
    etcd_pb_header_t h;
    int more;
    int64_t count;
    sizing_t z = {0};
    rc = etcd_pb_range_resp(resp, len, &h, size_kv, &z, &more, &count);
    if (!rc && !z.n) rc = KP_ENOTFOUND;
    store_kv_t *r = NULL;
    if (!rc && !(r = malloc(sizeof *r + z.bytes))) rc = KP_ENOMEM;
    if (!rc) {
        filling_t f = {r, 0, 1, (char *)(r + 1)}; /* the first kv: the key itself */
        rc = etcd_pb_range_resp(resp, len, &h, fill_kv, &f, &more, &count);
        if (rc == KP_ECORRUPT && f.i == 1) rc = 0; /* more than one: not asked for */
    }
    if (rc)
        free(r);
    else
        *out = r;
    free(resp);
    return rc;
}

int etcd__range(store_t *s, const char *prefix, const char *after, size_t limit, int64_t rev,
                store_range_t **out)
{
    etcd_store_t *es = (etcd_store_t *)s;
    char end[STORE_KEY_MAX + 2], start[STORE_KEY_MAX + 2];
    size_t end_len, start_len;
    etcd__prefix_end(prefix, end, &end_len);
    if (after && strcmp(after, prefix) >= 0) {
        start_len = strlen(after);
        memcpy(start, after, start_len);
        start[start_len++] = '\0'; /* the first key after `after` */
    } else if (*prefix) {
        start_len = strlen(prefix);
        memcpy(start, prefix, start_len);
    } else {
        start[0] = '\0';
        start_len = 1;
    }
    uint8_t *resp = NULL;
    size_t len = 0;
    int rc = range_call(es, start, start_len, end, end_len, limit, rev ? rev + ETCD__REV_OFFSET : 0,
                        0, &resp, &len);
    if (rc) return rc;
    etcd_pb_header_t h;
    int more;
    int64_t count;
    sizing_t z = {0};
    rc = etcd_pb_range_resp(resp, len, &h, size_kv, &z, &more, &count);
    store_range_t *r = NULL;
    if (!rc && !(r = malloc(sizeof *r + z.n * sizeof(store_kv_t) + z.bytes))) rc = KP_ENOMEM;
    if (!rc) {
        r->kvs = (store_kv_t *)(r + 1);
        filling_t f = {r->kvs, 0, z.n, (char *)(r->kvs + z.n)};
        rc = etcd_pb_range_resp(resp, len, &h, fill_kv, &f, &more, &count);
        r->revision = rev ? rev : h.revision - ETCD__REV_OFFSET;
        r->count = z.n;
        r->more = more;
    }
    if (rc)
        free(r);
    else
        *out = r;
    free(resp);
    return rc;
}

int etcd__current_rev(etcd_store_t *es, int64_t *out)
{
    /* A one-key read of a key that cannot exist ("\0"): just the header. */
    uint8_t *resp = NULL;
    size_t len = 0;
    int rc = range_call(es, "\0", 1, NULL, 0, 0, 0, ETCD_PB_COUNT_ONLY, &resp, &len);
    if (rc) return rc;
    etcd_pb_header_t h;
    rc = etcd_pb_header_resp(resp, len, &h);
    free(resp);
    if (!rc) *out = h.revision - ETCD__REV_OFFSET;
    return rc;
}

int etcd__check_rev(etcd_store_t *es, int64_t rev)
{
    uint8_t *resp = NULL;
    size_t len = 0;
    int rc = range_call(es, "\0", 1, NULL, 0, 0, rev + ETCD__REV_OFFSET, ETCD_PB_COUNT_ONLY, &resp,
                        &len);
    free(resp);
    return rc;
}
