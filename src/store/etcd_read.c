/*
 * etcd_read.c -- get and range through etcd's /v3/kv/range.
 *
 * A range asks for the keys in [start, prefix end) with a limit: start is the
 * prefix, or the `after` key followed by a NUL byte (the next possible key),
 * and etcd's `more` says whether keys follow. A read at revision R reads etcd
 * revision R + ETCD__REV_OFFSET; etcd answers "compacted" and "future
 * revision" itself. Results are copied into one caller-owned block, as
 * store_range_free() expects.
 */
#include <stdlib.h>
#include <string.h>

#include "lib/err.h"
#include "etcd_int.h"

static json_t *rev_str(int64_t rev)
{
    char b[32];
    snprintf(b, sizeof b, "%lld", (long long)rev);
    return json_string(b);
}

/* A decoded kv before it is copied into the result block. */
typedef struct dkv {
    char *key, *value;
    size_t klen, vlen;
    int64_t create_rev, mod_rev, version;
} dkv_t;

static int decode_kv(const json_t *kv, dkv_t *d)
{
    memset(d, 0, sizeof *d);
    int rc = etcd__bytes(kv, "key", &d->key, &d->klen);
    if (!rc) rc = etcd__bytes(kv, "value", &d->value, &d->vlen);
    d->create_rev = etcd__rev(kv, "create_revision");
    d->mod_rev = etcd__rev(kv, "mod_revision");
    d->version = etcd__int(kv, "version");
    return rc;
}

static void copy_kv(const dkv_t *d, store_kv_t *kv, char **p)
{
    char *k = *p, *v = k + d->klen + 1;
    memcpy(k, d->key, d->klen + 1);
    memcpy(v, d->value, d->vlen + 1);
    *kv = (store_kv_t){k, d->klen, v, d->vlen, d->create_rev, d->mod_rev, d->version};
    *p = v + d->vlen + 1;
}

int etcd__get(store_t *s, const char *key, size_t klen, int64_t rev, store_kv_t **out)
{
    etcd_store_t *es = (etcd_store_t *)s;
    json_t *k = etcd__b64(key, klen);
    json_t *req = k ? json_pack("{s:o}", "key", k) : NULL;
    if (!req) return KP_ENOMEM;
    if (rev) json_object_set_new(req, "revision", rev_str(rev + ETCD__REV_OFFSET));
    json_t *resp;
    int rc = etcd__call(es, "/v3/kv/range", req, ETCD__READ, ETCD__TIMEOUT_MS, &resp);
    json_decref(req);
    if (rc) return rc;
    json_t *kv = json_array_get(json_object_get(resp, "kvs"), 0);
    dkv_t d = {0};
    if (!kv) rc = KP_ENOTFOUND;
    else rc = decode_kv(kv, &d);
    if (!rc) {
        store_kv_t *r = malloc(sizeof *r + d.klen + d.vlen + 2);
        if (!r) {
            rc = KP_ENOMEM;
        } else {
            char *p = (char *)(r + 1);
            copy_kv(&d, r, &p);
            *out = r;
        }
    }
    free(d.key);
    free(d.value);
    json_decref(resp);
    return rc;
}

/* The request for keys under `prefix` after `after`, as of etcd revision. */
static json_t *range_req(const char *prefix, const char *after, size_t limit, int64_t etcd_rev)
{
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
    json_t *req = json_pack("{s:o,s:o}", "key", etcd__b64(start, start_len), "range_end",
                            etcd__b64(end, end_len));
    if (!req) return NULL;
    if (limit) json_object_set_new(req, "limit", rev_str((int64_t)limit));
    if (etcd_rev) json_object_set_new(req, "revision", rev_str(etcd_rev));
    return req;
}

int etcd__range(store_t *s, const char *prefix, const char *after, size_t limit, int64_t rev,
                store_range_t **out)
{
    etcd_store_t *es = (etcd_store_t *)s;
    json_t *req = range_req(prefix, after, limit, rev ? rev + ETCD__REV_OFFSET : 0);
    if (!req) return KP_ENOMEM;
    json_t *resp;
    int rc = etcd__call(es, "/v3/kv/range", req, ETCD__READ, ETCD__TIMEOUT_MS, &resp);
    json_decref(req);
    if (rc) return rc;

    json_t *kvs = json_object_get(resp, "kvs");
    size_t n = json_array_size(kvs), bytes = 0, got = 0;
    dkv_t *d = calloc(n ? n : 1, sizeof *d);
    if (!d) rc = KP_ENOMEM;
    for (; !rc && got < n; got++) {
        rc = decode_kv(json_array_get(kvs, got), &d[got]);
        bytes += d[got].klen + d[got].vlen + 2;
        if (rc) got++; /* free what it decoded */
    }
    store_range_t *r = NULL;
    if (!rc && !(r = malloc(sizeof *r + n * sizeof(store_kv_t) + bytes))) rc = KP_ENOMEM;
    if (!rc) {
        r->revision = rev ? rev : etcd__header_rev(resp) - ETCD__REV_OFFSET;
        r->count = n;
        r->more = json_is_true(json_object_get(resp, "more"));
        r->kvs = (store_kv_t *)(r + 1);
        char *p = (char *)(r->kvs + n);
        for (size_t i = 0; i < n; i++) copy_kv(&d[i], &r->kvs[i], &p);
        *out = r;
    }
    for (size_t i = 0; d && i < got; i++) {
        free(d[i].key);
        free(d[i].value);
    }
    free(d);
    json_decref(resp);
    return rc;
}

int etcd__current_rev(etcd_store_t *es, int64_t *out)
{
    /* A one-key read of a key that cannot exist ("\0"): just the header. */
    json_t *req = json_pack("{s:s}", "key", "AA==");
    if (!req) return KP_ENOMEM;
    json_t *resp;
    int rc = etcd__call(es, "/v3/kv/range", req, ETCD__READ, ETCD__TIMEOUT_MS, &resp);
    json_decref(req);
    if (rc) return rc;
    *out = etcd__header_rev(resp) - ETCD__REV_OFFSET;
    json_decref(resp);
    return 0;
}

int etcd__check_rev(etcd_store_t *es, int64_t rev)
{
    json_t *req = json_pack("{s:s,s:o}", "key", "AA==", "revision",
                            rev_str(rev + ETCD__REV_OFFSET));
    if (!req) return KP_ENOMEM;
    json_t *resp;
    int rc = etcd__call(es, "/v3/kv/range", req, ETCD__READ, ETCD__TIMEOUT_MS, &resp);
    json_decref(req);
    json_decref(resp);
    return rc;
}
