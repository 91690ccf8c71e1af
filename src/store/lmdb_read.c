/*
 * lmdb_read.c -- get and range, at the newest revision or an older one.
 *
 * Reads at the newest revision walk `kv`; reads at an older revision walk `idx`
 * and take each key's newest log record at or below the revision (invariant 4
 * in lmdb_int.h keeps that record through compaction). Results are gathered
 * as pointers into the map first and copied once, into one caller-owned block,
 * before the read transaction ends.
 */
#include <stdlib.h>
#include <string.h>

#include "lib/err.h"
#include "lmdb_int.h"

/* A kv found in the map; its pointers are valid until the txn ends. */
typedef struct hit {
    const char *key;
    size_t klen;
    const char *value;
    size_t vlen;
    int64_t create_rev, mod_rev, version;
} hit_t;

typedef struct hits {
    hit_t *v;
    size_t n, cap;
    size_t bytes; /* key and value bytes, each with a NUL */
} hits_t;

static int hits_push(hits_t *h, const hit_t *x)
{
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 64;
        hit_t *v = realloc(h->v, cap * sizeof *v);
        if (!v) return KP_ENOMEM;
        h->v = v;
        h->cap = cap;
    }
    h->v[h->n++] = *x;
    h->bytes += x->klen + x->vlen + 2;
    return 0;
}

/* Copy a hit into `kv`, its bytes at *p (advanced). */
static void hit_copy(const hit_t *x, store_kv_t *kv, char **p)
{
    char *k = *p, *v = k + x->klen + 1;
    memcpy(k, x->key, x->klen);
    k[x->klen] = '\0';
    if (x->vlen) memcpy(v, x->value, x->vlen);
    v[x->vlen] = '\0';
    *kv = (store_kv_t){k, x->klen, v, x->vlen, x->create_rev, x->mod_rev, x->version};
    *p = v + x->vlen + 1;
}

static void hit_from_kvrec(hit_t *x, const MDB_val *k, const MDB_val *v)
{
    lmdb__kvrec_t kr;
    memcpy(&kr, v->mv_data, sizeof kr);
    *x = (hit_t){k->mv_data, k->mv_size, (const char *)v->mv_data + sizeof kr,
                 v->mv_size - sizeof kr, kr.create_rev, kr.mod_rev, kr.version};
}

/* Begin a read txn and check `rev` against the store's revisions. */
static int begin_at(lmdb_store_t *ls, int64_t rev, MDB_txn **txn, int64_t *cur)
{
    int64_t compact;
    int rc = lmdb__rc(mdb_txn_begin(ls->env, NULL, MDB_RDONLY, txn));
    if (rc) return rc;
    if ((rc = lmdb__meta_get(*txn, ls, "rev", cur)) ||
        (rc = lmdb__meta_get(*txn, ls, "compact", &compact)))
        goto fail;
    if (rev > *cur) rc = KP_EFUTURE;
    else if (rev && rev < compact) rc = KP_ECOMPACTED;
    if (rc) goto fail;
    return 0;
fail:
    mdb_txn_abort(*txn);
    return rc;
}

int lmdb__lookup_at(MDB_txn *txn, lmdb_store_t *ls, const char *key, size_t klen, int64_t rev,
                    int64_t *rec_rev, lmdb__logrec_t *rec, const char **value, size_t *vlen)
{
    MDB_cursor *c;
    int rc = lmdb__rc(mdb_cursor_open(txn, ls->idx, &c));
    if (rc) return rc;
    unsigned char rk[8];
    lmdb__rev_key(rev + 1, rk);
    MDB_val k = {klen, (void *)key}, d = {8, rk};
    /* The first revision above `rev`, then one back; or, if every revision of
     * the key is at or below `rev`, the last one. */
    int mrc = mdb_cursor_get(c, &k, &d, MDB_GET_BOTH_RANGE);
    if (mrc == 0) mrc = mdb_cursor_get(c, &k, &d, MDB_PREV_DUP);
    else if (mrc == MDB_NOTFOUND && (mrc = mdb_cursor_get(c, &k, &d, MDB_SET)) == 0)
        mrc = mdb_cursor_get(c, &k, &d, MDB_LAST_DUP);
    mdb_cursor_close(c);
    if (mrc) return lmdb__rc(mrc);
    *rec_rev = lmdb__rev_from_key(&d);
    if ((rc = lmdb__log_get(txn, ls, *rec_rev, rec, NULL, value, vlen))) return rc;
    return rec->type == LMDB__PUT ? 0 : KP_ENOTFOUND;
}

/* The key's state as of `rev` (`cur` is the newest revision) as a hit. */
static int find_at(MDB_txn *txn, lmdb_store_t *ls, const char *key, size_t klen, int64_t rev,
                   int64_t cur, hit_t *x)
{
    if (rev == 0 || rev == cur) {
        MDB_val k = {klen, (void *)key}, v;
        int rc = mdb_get(txn, ls->kv, &k, &v);
        if (rc) return lmdb__rc(rc);
        hit_from_kvrec(x, &k, &v);
        return 0;
    }
    lmdb__logrec_t rec;
    int64_t rrev = 0;
    const char *val;
    size_t vlen;
    int rc = lmdb__lookup_at(txn, ls, key, klen, rev, &rrev, &rec, &val, &vlen);
    if (rc) return rc;
    *x = (hit_t){key, klen, val, vlen, rec.create_rev, rrev, rec.version};
    return 0;
}

int lmdb__get(store_t *s, const char *key, size_t klen, int64_t rev, store_kv_t **out)
{
    lmdb_store_t *ls = (lmdb_store_t *)s;
    MDB_txn *txn;
    int64_t cur;
    int rc = begin_at(ls, rev, &txn, &cur);
    if (rc) return rc;
    hit_t x;
    if ((rc = find_at(txn, ls, key, klen, rev, cur, &x))) goto out;
    store_kv_t *kv = malloc(sizeof *kv + x.klen + x.vlen + 2);
    if (!kv) {
        rc = KP_ENOMEM;
        goto out;
    }
    char *p = (char *)(kv + 1);
    hit_copy(&x, kv, &p);
    *out = kv;
out:
    mdb_txn_abort(txn);
    return rc;
}

static int has_prefix(const MDB_val *k, const char *prefix, size_t plen)
{
    return k->mv_size >= plen && memcmp(k->mv_data, prefix, plen) == 0;
}

/* Position `c` on the first key under `prefix` that sorts after `after`. */
static int seek_start(MDB_cursor *c, const char *prefix, const char *after, MDB_val *k,
                      MDB_val *v)
{
    int skip_equal = after && strcmp(after, prefix) >= 0;
    const char *start = skip_equal ? after : prefix;
    *k = (MDB_val){strlen(start), (void *)start};
    int mrc = k->mv_size ? mdb_cursor_get(c, k, v, MDB_SET_RANGE)
                         : mdb_cursor_get(c, k, v, MDB_FIRST);
    if (mrc == 0 && skip_equal && k->mv_size == strlen(after) &&
        memcmp(k->mv_data, after, k->mv_size) == 0)
        mrc = mdb_cursor_get(c, k, v, MDB_NEXT_NODUP);
    return mrc;
}

/* Gather the live keys under `prefix` after `after` as of `rev` into `h`. */
static int gather(MDB_txn *txn, lmdb_store_t *ls, const char *prefix, const char *after,
                  size_t limit, int64_t rev, int64_t cur, hits_t *h, int *more)
{
    int at_newest = rev == 0 || rev == cur;
    size_t plen = strlen(prefix);
    MDB_cursor *c;
    int rc = lmdb__rc(mdb_cursor_open(txn, at_newest ? ls->kv : ls->idx, &c));
    if (rc) return rc;
    MDB_val k, v;
    int mrc;
    for (mrc = seek_start(c, prefix, after, &k, &v); mrc == 0 && has_prefix(&k, prefix, plen);
         mrc = mdb_cursor_get(c, &k, &v, MDB_NEXT_NODUP)) {
        hit_t x;
        if (at_newest) {
            hit_from_kvrec(&x, &k, &v);
        } else if ((rc = find_at(txn, ls, k.mv_data, k.mv_size, rev, cur, &x))) {
            if (rc != KP_ENOTFOUND) break;
            rc = 0; /* deleted, or not yet created, at rev */
            continue;
        }
        if (limit && h->n == limit) {
            *more = 1;
            break;
        }
        if ((rc = hits_push(h, &x))) break;
    }
    if (!rc && mrc && mrc != MDB_NOTFOUND) rc = lmdb__rc(mrc);
    mdb_cursor_close(c);
    return rc;
}

int lmdb__range(store_t *s, const char *prefix, const char *after, size_t limit, int64_t rev,
                store_range_t **out)
{
    lmdb_store_t *ls = (lmdb_store_t *)s;
    MDB_txn *txn;
    int64_t cur;
    int more = 0;
    hits_t h = {0};
    int rc = begin_at(ls, rev, &txn, &cur);
    if (rc) return rc;
    if ((rc = gather(txn, ls, prefix, after, limit, rev, cur, &h, &more))) goto out;

    store_range_t *r = malloc(sizeof *r + h.n * sizeof(store_kv_t) + h.bytes);
    if (!r) {
        rc = KP_ENOMEM;
        goto out;
    }
    r->revision = rev ? rev : cur;
    r->count = h.n;
    r->more = more;
    r->kvs = (store_kv_t *)(r + 1);
    char *p = (char *)(r->kvs + h.n);
    for (size_t i = 0; i < h.n; i++) hit_copy(&h.v[i], &r->kvs[i], &p);
    *out = r;
out:
    mdb_txn_abort(txn);
    free(h.v);
    return rc;
}
