/*
 * encrypt_store.c -- a store that keeps some values encrypted (encrypt.h):
 * a store_ops_t around another store, sealing values on their way in and
 * opening them on their way out (gets, ranges, watch events and their
 * previous values), for the keys its config covers.
 *
 * Everything above it (the watch cache, the REST verbs, the controllers)
 * sees plain values and is unchanged. Keys the config does not cover pass
 * straight to the inner store: a write or get costs a prefix comparison per
 * rule, a range or watch over a prefix no rule touches is the inner one
 * itself (no copy, no lock, no wrapper). Only a range that holds covered
 * keys is copied, into one block as backends allocate it (store.c's
 * store_range_free() frees one block).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/err.h"
#include "lib/log.h"
#include "store/encrypt_int.h"
#include "store/store_int.h"

typedef struct enc_store {
    store_t base;
    store_t *inner;
    store_enc_t *enc;
} enc_store_t;

typedef struct enc_watch {
    store_watch_t base;
    store_watch_t *inner;
    const store_enc_t *enc;
    store_event_t ev; /* the event handed out, its values in vals */
    char *vals[2];    /* opened kv and prev values, freed at the next call */
    int failed;       /* a value did not open: KP_ECORRUPT from then on */
} enc_watch_t;

#define ES(s)           ((enc_store_t *)(s))
#define EW(w)           ((enc_watch_t *)(w))
#define REWRITE_PAGE    500
#define REWRITE_RETRIES 20

static const store_ops_t enc_ops;
static const store_watch_ops_t enc_watch_ops;

/* Open one stored value of `key`: 0 with *val (NULL: the stored bytes are
 * the value), or KP_ECORRUPT logged with the key and why. */
static int open_logged(const enc_rule_t *r, const char *key, const char *stored, size_t n,
                       char **val, size_t *len)
{
    char why[512];
    int rc = store_enc__open(r, key, stored, n, val, len, NULL, why, sizeof why);
    if (rc == KP_ECORRUPT) log_error("store", "unable to transform key \"%s\": %s", key, why);
    return rc;
}

/* ---- writes and reads ---- */

static int es_write(store_t *s, store__op_t op, const char *key, size_t klen, const void *value,
                    size_t vlen, int64_t expect_rev, int64_t *out_rev)
{
    store_t *in = ES(s)->inner;
    const enc_rule_t *r = op == STORE__DELETE ? NULL : store_enc__rule(ES(s)->enc, key);
    if (!r) return in->ops->write(in, op, key, klen, value, vlen, expect_rev, out_rev);
    char *sealed;
    size_t slen;
    int rc = store_enc__seal(r, key, value, vlen, &sealed, &slen);
    if (rc) return rc;
    rc = in->ops->write(in, op, key, klen, sealed ? sealed : value, sealed ? slen : vlen,
                        expect_rev, out_rev);
    free(sealed);
    return rc;
}

static int es_get(store_t *s, const char *key, size_t klen, int64_t rev, store_kv_t **out)
{
    store_t *in = ES(s)->inner;
    int rc = in->ops->get(in, key, klen, rev, out);
    const enc_rule_t *r = rc ? NULL : store_enc__rule(ES(s)->enc, key);
    if (!r) return rc;
    store_kv_t *kv = *out;
    char *val;
    size_t len;
    if ((rc = open_logged(r, key, kv->value, kv->value_len, &val, &len))) {
        free(kv);
        *out = NULL;
        return rc;
    }
    if (!val) return 0;
    /* One allocation holds kv, key and value, as backends give it. */
    store_kv_t *nk = malloc(sizeof *nk + kv->key_len + 1 + len + 1);
    if (!nk) {
        free(val);
        free(kv);
        *out = NULL;
        return KP_ENOMEM;
    }
    *nk = *kv;
    char *p = (char *)(nk + 1);
    memcpy(p, kv->key, kv->key_len + 1);
    nk->key = p;
    memcpy(p + kv->key_len + 1, val, len + 1);
    nk->value = p + kv->key_len + 1;
    nk->value_len = len;
    free(val);
    free(kv);
    *out = nk;
    return 0;
}

static int es_range(store_t *s, const char *prefix, const char *after, size_t limit, int64_t rev,
                    store_range_t **out)
{
    store_t *in = ES(s)->inner;
    int rc = in->ops->range(in, prefix, after, limit, rev, out);
    if (rc || !store_enc__touches(ES(s)->enc, prefix)) return rc;
    store_range_t *r = *out;
    char **vals = calloc(r->count ? r->count : 1, sizeof *vals);
    size_t *lens = calloc(r->count ? r->count : 1, sizeof *lens);
    size_t bytes = sizeof *r + r->count * sizeof *r->kvs, opened = 0;
    rc = vals && lens ? 0 : KP_ENOMEM;
    for (size_t i = 0; !rc && i < r->count; i++) {
        const store_kv_t *kv = &r->kvs[i];
        const enc_rule_t *rule = store_enc__rule(ES(s)->enc, kv->key);
        if (rule) rc = open_logged(rule, kv->key, kv->value, kv->value_len, &vals[i], &lens[i]);
        if (vals[i])
            opened++;
        else
            lens[i] = kv->value_len;
        bytes += kv->key_len + 1 + lens[i] + 1;
    }
    store_range_t *nr = NULL;
    if (!rc && opened && !(nr = malloc(bytes))) rc = KP_ENOMEM;
    if (nr) { /* the struct, then kvs, then each key and value */
        *nr = *r;
        nr->kvs = (store_kv_t *)(nr + 1);
        char *p = (char *)(nr->kvs + r->count);
        for (size_t i = 0; i < r->count; i++) {
            store_kv_t *kv = &nr->kvs[i];
            *kv = r->kvs[i];
            memcpy(p, r->kvs[i].key, kv->key_len + 1);
            kv->key = p;
            p += kv->key_len + 1;
            memcpy(p, vals[i] ? vals[i] : r->kvs[i].value, lens[i] + 1);
            kv->value = p;
            kv->value_len = lens[i];
            p += lens[i] + 1;
        }
    }
    for (size_t i = 0; vals && i < r->count; i++)
        free(vals[i]);
    free(vals);
    free(lens);
    if (rc || nr) {
        store_range_free(r);
        *out = nr;
    }
    return rc;
}

/* ---- watches ---- */

static int ew_next(store_watch_t *w, int timeout_ms, const store_event_t **ev)
{
    enc_watch_t *ew = EW(w);
    for (int i = 0; i < 2; i++) {
        free(ew->vals[i]);
        ew->vals[i] = NULL;
    }
    if (ew->failed) return KP_ECORRUPT;
    const store_event_t *in;
    int rc = ew->inner->ops->next(ew->inner, timeout_ms, &in);
    if (rc) return rc;
    const enc_rule_t *r = in->type == STORE_PROGRESS ? NULL : store_enc__rule(ew->enc, in->kv.key);
    if (!r) {
        *ev = in;
        return 0;
    }
    ew->ev = *in;
    store_kv_t *kvs[2] = {in->type == STORE_PUT ? &ew->ev.kv : NULL,
                          in->has_prev ? &ew->ev.prev : NULL};
    for (int i = 0; i < 2; i++) {
        size_t len;
        if (!kvs[i]) continue;
        rc = open_logged(r, kvs[i]->key, kvs[i]->value, kvs[i]->value_len, &ew->vals[i], &len);
        if (rc) {
            ew->failed = rc == KP_ECORRUPT;
            return rc;
        }
        if (ew->vals[i]) {
            kvs[i]->value = ew->vals[i];
            kvs[i]->value_len = len;
        }
    }
    *ev = &ew->ev;
    return 0;
}

static int64_t ew_revision(const store_watch_t *w)
{
    return store_watch_revision(EW(w)->inner);
}

static void ew_progress(store_watch_t *w, int on)
{
    store_watch_progress(EW(w)->inner, on);
}

static void ew_request_progress(store_watch_t *w)
{
    store_watch_request_progress(EW(w)->inner);
}

static void ew_cancel(store_watch_t *w)
{
    store_watch_cancel(EW(w)->inner);
}

static void ew_close(store_watch_t *w)
{
    enc_watch_t *ew = EW(w);
    store_watch_close(ew->inner);
    free(ew->vals[0]);
    free(ew->vals[1]);
    free(ew);
}

static const store_watch_ops_t enc_watch_ops = {
    .next = ew_next,
    .revision = ew_revision,
    .progress = ew_progress,
    .request_progress = ew_request_progress,
    .cancel = ew_cancel,
    .close = ew_close,
};

static int es_watch_open(store_t *s, const char *prefix, int64_t after_rev, store_watch_t **out)
{
    store_t *in = ES(s)->inner;
    int rc = in->ops->watch_open(in, prefix, after_rev, out);
    if (rc || !store_enc__touches(ES(s)->enc, prefix)) return rc;
    enc_watch_t *ew = calloc(1, sizeof *ew);
    if (!ew) {
        store_watch_close(*out);
        *out = NULL;
        return KP_ENOMEM;
    }
    ew->base.ops = &enc_watch_ops;
    ew->inner = *out;
    ew->enc = ES(s)->enc;
    *out = &ew->base;
    return 0;
}

/* ---- the rest: the inner store's ---- */

static void es_close(store_t *s)
{
    store_close(ES(s)->inner);
    store_enc_free(ES(s)->enc);
    free(s);
}

static int es_status(store_t *s, store_status_t *out)
{
    return store_status(ES(s)->inner, out);
}

static int es_revision(store_t *s, int64_t *out)
{
    return store_revision(ES(s)->inner, out);
}

static int es_compact(store_t *s, int64_t rev)
{
    return store_compact(ES(s)->inner, rev);
}

static int es_backup(store_t *s, const char *path, int64_t *out_rev)
{
    return store_backup(ES(s)->inner, path, out_rev);
}

static int es_stale(store_t *s, const char *key, size_t klen, int64_t rev)
{
    store_t *in = ES(s)->inner;
    const enc_rule_t *r = store_enc__rule(ES(s)->enc, key);
    store_kv_t *kv = NULL;
    if (!r || in->ops->get(in, key, klen, rev, &kv)) return 0;
    char *val = NULL;
    size_t len;
    int stale = 0;
    if (kv->mod_rev != rev ||
        store_enc__open(r, key, kv->value, kv->value_len, &val, &len, &stale, NULL, 0))
        stale = 0;
    free(val);
    free(kv);
    return stale;
}

static int es_health(store_t *s, char *why, size_t len)
{
    return store_health(ES(s)->inner, why, len);
}

static const store_ops_t enc_ops = {
    .name = "encrypted",
    .close = es_close,
    .write = es_write,
    .get = es_get,
    .range = es_range,
    .status = es_status,
    .revision = es_revision,
    .watch_open = es_watch_open,
    .compact = es_compact,
    .backup = es_backup,
    .health = es_health,
    .stale = es_stale,
};

int store_enc_wrap(store_t *inner, store_enc_t *e, store_t **out)
{
    *out = NULL;
    enc_store_t *es = inner && e ? calloc(1, sizeof *es) : NULL;
    if (!es) {
        store_close(inner);
        store_enc_free(e);
        return inner && e ? KP_ENOMEM : KP_EINVAL;
    }
    es->base.ops = &enc_ops;
    es->inner = inner;
    es->enc = e;
    *out = &es->base;
    return 0;
}

const store_enc_t *store_enc_of(store_t *s)
{
    return s && s->ops == &enc_ops ? ES(s)->enc : NULL;
}

/* ---- rewriting under the writing key ---- */

/* Rewrite one stored kv if a key other than the writing one reads it; a
 * value written meanwhile is read again. *done gets 1 if it was written. */
static int rewrite_one(enc_store_t *es, const enc_rule_t *r, const store_kv_t *first, int *done,
                       char *why, size_t whylen)
{
    store_t *in = es->inner;
    store_kv_t *cur = NULL;
    const store_kv_t *kv = first;
    int rc = 0;
    *done = 0;
    for (int attempt = 0; attempt < REWRITE_RETRIES; attempt++) {
        char *val = NULL, *sealed = NULL;
        size_t len = 0, slen = 0;
        int stale = 0;
        char bad[400];
        rc = store_enc__open(r, kv->key, kv->value, kv->value_len, &val, &len, &stale, bad,
                             sizeof bad);
        if (rc == KP_ECORRUPT) snprintf(why, whylen, "key \"%s\": %s", kv->key, bad);
        if (rc || !stale) {
            free(val);
            break;
        }
        if (!val) len = kv->value_len;
        const char *plain = val ? val : kv->value;
        int64_t rev;
        rc = store_enc__seal(r, kv->key, plain, len, &sealed, &slen);
        if (!rc)
            rc = in->ops->write(in, STORE__UPDATE, kv->key, kv->key_len, sealed ? sealed : plain,
                                sealed ? slen : len, kv->mod_rev, &rev);
        free(val);
        free(sealed);
        if (!rc) *done = 1;
        if (rc != KP_ECONFLICT) break;
        /* Written meanwhile (perhaps already under the new key): read it again. */
        char key[STORE_KEY_MAX + 1];
        snprintf(key, sizeof key, "%s", kv->key);
        free(cur);
        cur = NULL;
        rc = in->ops->get(in, key, strlen(key), 0, &cur);
        if (rc) break;
        kv = cur;
    }
    free(cur);
    return rc == KP_ENOTFOUND ? 0 : rc; /* deleted meanwhile: nothing to rewrite */
}

int store_enc_rewrite(store_t *s, size_t *total, size_t *rewritten, char *why, size_t whylen)
{
    *total = *rewritten = 0;
    if (why && whylen) why[0] = '\0';
    char spare[8];
    if (!why || !whylen) why = spare, whylen = sizeof spare;
    if (!store_enc_of(s)) return KP_EINVAL;
    enc_store_t *es = ES(s);
    store_t *in = es->inner;
    int rc = 0;
    for (size_t i = 0; i < es->enc->nrules && !rc; i++) {
        const enc_rule_t *r = &es->enc->rules[i];
        char after[STORE_KEY_MAX + 1] = "";
        for (;;) {
            store_range_t *page;
            if ((rc = in->ops->range(in, r->prefix, *after ? after : NULL, REWRITE_PAGE, 0, &page)))
                break;
            for (size_t k = 0; k < page->count && !rc; k++) {
                const store_kv_t *kv = &page->kvs[k];
                /* A key a longer prefix's rule covers is rewritten in its own pass. */
                if (store_enc__rule(es->enc, kv->key) != r) continue;
                int done;
                (*total)++;
                rc = rewrite_one(es, r, kv, &done, why, whylen);
                *rewritten += (size_t)done;
            }
            int more = page->more && page->count;
            if (page->count) snprintf(after, sizeof after, "%s", page->kvs[page->count - 1].key);
            store_range_free(page);
            if (rc || !more) break;
        }
    }
    if (rc && !why[0]) snprintf(why, whylen, "%s", err_str(rc));
    return rc;
}
