/*
 * lmdb_watch.c -- watches as cursors over the log (see WATCH in lmdb_int.h).
 *
 * A watch remembers one number, the revision it has read up to. next() hands
 * out buffered events; when they run out it reads the following records of
 * `log` in one read transaction (at most LMDB__WATCH_BATCH of them), keeps
 * those under its prefix, and copies them with their previous values into its
 * own buffer. If nothing is new it sleeps on its own condition variable, which
 * a commit in this process signals when it wrote a key under the prefix
 * (lmdb__watch_wake_locked()), and store_watch_request_progress() signals
 * (and has the next commit's bookkeeping signal it again: a commit under way
 * at the request may be past what fill() may read yet).
 * A commit here that wrote nothing under the prefix does not wake it; it
 * extends the watch's quiet range instead (lmdb__watch_quiet_locked()), and
 * the watch moves its revision past that range without reading it. Every
 * LMDB__WATCH_POLL_MS while idle it does so (reporting progress if asked),
 * and reads past what another process committed, noticed by an LMDB
 * transaction id this process did not commit.
 *
 * Quiet range (quiet_lo, quiet_hi], under ls->mu: every revision in it was
 * committed by this process in batches that followed one another with no
 * revision between, each durable and with no key under the prefix. So a
 * watch whose revision lies in it may move to quiet_hi and miss nothing.
 *
 * Exactly once and in order: records are read in revision order starting just
 * above the watch's revision, which then moves past them. No gap: before each
 * read the watch checks the compaction revision in the same transaction; if
 * compaction passed it, the watch fails with KP_ECOMPACTED for good.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "lmdb_int.h"

struct lmdb_watch {
    store_watch_t base;
    lmdb_store_t *ls;
    char *prefix;
    size_t plen;
    int64_t rev;        /* read up to here */
    size_t txnid;       /* LMDB transaction id of the last read */
    int failed;         /* sticky error */
    int progress;       /* report STORE_PROGRESS events */
    int64_t reported;   /* newest revision handed out as an event or progress */
    store_event_t tick; /* the STORE_PROGRESS event */
    int cancelled;      /* guarded by ls->mu, as are the four below */
    int kicked;         /* woken: read again before sleeping */
    int asked;          /* progress requested: the next commit's bookkeeping wakes it */
    int touched;        /* the batch being announced wrote under the prefix */
    int64_t quiet_lo, quiet_hi; /* see Quiet range above */
    pthread_cond_t cv;  /* signalled on kicked, cancel, close; CLOCK_MONOTONIC */
    lmdb_watch_t *next_w, **prev_w; /* in ls->watches */
    store_event_t *evs; /* buffered events, [pos, n) not yet handed out */
    size_t n, pos, cap;
    buf_t bytes;        /* keys and values of the buffered events */
};

static const store_watch_ops_t lmdb_watch_ops;

/* Events hold offsets into w->bytes while it may still move; they become
 * pointers in fix_pointers(). */
static int put_bytes(lmdb_watch_t *w, const char *p, size_t n, const char **slot)
{
    size_t off = w->bytes.len;
    int rc = buf_append(&w->bytes, p, n);
    if (!rc) rc = buf_append(&w->bytes, "", 1);
    *slot = (const char *)(uintptr_t)off;
    return rc;
}

static void fix_pointers(lmdb_watch_t *w)
{
    for (size_t i = 0; i < w->n; i++) {
        store_event_t *e = &w->evs[i];
        e->kv.key = w->bytes.p + (uintptr_t)e->kv.key;
        e->kv.value = w->bytes.p + (uintptr_t)e->kv.value;
        if (e->has_prev) {
            e->prev.key = w->bytes.p + (uintptr_t)e->prev.key;
            e->prev.value = w->bytes.p + (uintptr_t)e->prev.value;
        }
    }
}

/* Buffer the record at `rev` as an event. */
static int add_event(lmdb_watch_t *w, MDB_txn *txn, int64_t rev, const lmdb__logrec_t *rec,
                     const char *key, const char *val, size_t vlen)
{
    if (w->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 16;
        store_event_t *evs = realloc(w->evs, cap * sizeof *evs);
        if (!evs) return KP_ENOMEM;
        w->evs = evs;
        w->cap = cap;
    }
    store_event_t *e = &w->evs[w->n];
    memset(e, 0, sizeof *e);
    e->type = rec->type == LMDB__PUT ? STORE_PUT : STORE_DELETE;
    e->kv = (store_kv_t){.key_len = rec->key_len, .value_len = e->type == STORE_PUT ? vlen : 0,
                         .create_rev = rec->create_rev, .mod_rev = rev, .version = rec->version};
    int rc = put_bytes(w, key, rec->key_len, &e->kv.key);
    if (!rc) rc = put_bytes(w, val, e->kv.value_len, &e->kv.value);
    if (!rc && rec->prev_rev) {
        /* The previous record is kept: it is the key's newest at or below the
         * compaction revision, or above it (invariant 4). */
        lmdb__logrec_t prec;
        const char *pval;
        size_t plen;
        rc = lmdb__log_get(txn, w->ls, rec->prev_rev, &prec, NULL, &pval, &plen);
        if (rc) return rc == KP_ENOTFOUND ? KP_ECORRUPT : rc;
        e->has_prev = 1;
        e->prev = (store_kv_t){.key_len = rec->key_len, .value_len = plen,
                               .create_rev = prec.create_rev, .mod_rev = rec->prev_rev,
                               .version = prec.version};
        rc = put_bytes(w, key, rec->key_len, &e->prev.key);
        if (!rc) rc = put_bytes(w, pval, plen, &e->prev.value);
    }
    if (!rc) w->n++;
    return rc;
}

/* The newest revision a watch may deliver, given that a read transaction saw
 * `visible`. Revisions this process committed count once their commit
 * returned (notify_rev). A revision visible while no commit of this process
 * ran, before and after the read, came from another process's commit. */
static int64_t durable_limit(lmdb_store_t *ls, uint64_t seq_before, int busy_before,
                             int64_t visible)
{
    pthread_mutex_lock(&ls->mu);
    /* Not while UNSYNCED: what is visible then may not be durable (S2). */
    if (!busy_before && !ls->committing && ls->commit_seq == seq_before && !ls->unsynced &&
        visible > ls->notify_rev)
        ls->notify_rev = visible;
    int64_t limit = ls->notify_rev;
    pthread_mutex_unlock(&ls->mu);
    return limit;
}

/* Read the records after w->rev into the buffer. */
static int fill(lmdb_watch_t *w)
{
    lmdb_store_t *ls = w->ls;
    MDB_txn *txn;
    MDB_cursor *c = NULL;
    int64_t cur, compact;
    w->n = w->pos = 0;
    buf_reset(&w->bytes);

    pthread_mutex_lock(&ls->mu);
    uint64_t seq = ls->commit_seq;
    int busy = ls->committing;
    pthread_mutex_unlock(&ls->mu);

    int rc = lmdb__rc(mdb_txn_begin(ls->env, NULL, MDB_RDONLY, &txn));
    if (rc) return rc;
    w->txnid = mdb_txn_id(txn);
    if ((rc = lmdb__meta_get(txn, ls, "rev", &cur)) ||
        (rc = lmdb__meta_get(txn, ls, "compact", &compact)))
        goto out;
    if (w->rev < compact) {
        rc = KP_ECOMPACTED;
        goto out;
    }
    cur = durable_limit(ls, seq, busy, cur);
    if (w->rev >= cur) goto out;
    if ((rc = lmdb__rc(mdb_cursor_open(txn, ls->log, &c)))) goto out;

    unsigned char rk[8];
    lmdb__rev_key(w->rev + 1, rk);
    MDB_val k = {8, rk}, v;
    int mrc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
    int seen = 0;
    for (; mrc == 0 && seen < LMDB__WATCH_BATCH; seen++) {
        int64_t rev = lmdb__rev_from_key(&k);
        if (rev > cur) break;
        if (rev != w->rev + 1) { /* invariant 1: no gaps above the compaction point */
            rc = KP_ECORRUPT;
            goto out;
        }
        lmdb__logrec_t rec;
        if (v.mv_size < sizeof rec) {
            rc = KP_ECORRUPT;
            goto out;
        }
        memcpy(&rec, v.mv_data, sizeof rec);
        const char *key = (const char *)v.mv_data + sizeof rec;
        if (rec.key_len >= w->plen && memcmp(key, w->prefix, w->plen) == 0) {
            if (w->n && w->bytes.len >= LMDB__WATCH_BYTES) break;
            size_t vlen = v.mv_size - sizeof rec - rec.key_len;
            if ((rc = add_event(w, txn, rev, &rec, key, key + rec.key_len, vlen))) goto out;
        }
        w->rev = rev;
        mrc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
    }
    if (mrc && mrc != MDB_NOTFOUND) rc = lmdb__rc(mrc);
    __atomic_fetch_add(&ls->watch_reads, (uint64_t)seen, __ATOMIC_RELAXED);
out:
    if (c) mdb_cursor_close(c);
    mdb_txn_abort(txn);
    if (rc) {
        w->n = 0;
        w->failed = rc;
    } else {
        fix_pointers(w);
    }
    return rc;
}

/* Did another process commit since this watch last read? ls->mu held. A
 * commit of ours whose bookkeeping is still to come counts as another's:
 * that costs one read, never a missed change. */
static int changed_elsewhere_locked(lmdb_watch_t *w)
{
    MDB_envinfo info;
    if (mdb_env_info(w->ls->env, &info)) return 1;
    return (uint64_t)info.me_last_txnid > w->ls->own_txnid || w->ls->foreign_txnid > w->txnid;
}

/* Move past the quiet range if the watch's revision lies in it (and nothing
 * it read is still buffered). ls->mu held. */
static void skip_quiet_locked(lmdb_watch_t *w)
{
    if (w->pos == w->n && w->quiet_lo <= w->rev && w->rev < w->quiet_hi) w->rev = w->quiet_hi;
}

static int lmdb_watch_next(store_watch_t *sw, int timeout_ms, const store_event_t **ev)
{
    lmdb_watch_t *w = (lmdb_watch_t *)sw;
    lmdb_store_t *ls = w->ls;
    int64_t deadline = clock_mono_ns() + (int64_t)timeout_ms * 1000000;

    for (;;) {
        if (w->pos < w->n) {
            *ev = &w->evs[w->pos++];
            w->reported = (*ev)->kv.mod_rev;
            return 0;
        }
        if (w->progress && w->rev > w->reported) { /* read past changes elsewhere */
            w->reported = w->rev;
            w->tick = (store_event_t){.type = STORE_PROGRESS, .kv = {.key = "", .value = ""}};
            w->tick.kv.mod_rev = w->rev;
            *ev = &w->tick;
            return 0;
        }
        pthread_mutex_lock(&ls->mu);
        int stop = w->cancelled || ls->closing;
        int64_t was = w->rev;
        skip_quiet_locked(w);
        pthread_mutex_unlock(&ls->mu);
        if (stop) return KP_ECLOSED;
        if (w->failed) return w->failed;
        if (w->rev > was && w->progress) continue; /* report it first */

        int rc = fill(w);
        if (rc) return rc;
        if (w->n || (w->progress && w->rev > w->reported)) continue;

        /* Nothing new for us: sleep until a commit under the prefix, a
         * progress request, the poll (to read past other commits), the
         * deadline, or a cancel. */
        pthread_mutex_lock(&ls->mu);
        while (!w->kicked && !w->cancelled && !ls->closing) {
            int64_t now = clock_mono_ns();
            if (timeout_ms >= 0 && now >= deadline) {
                pthread_mutex_unlock(&ls->mu);
                return KP_ETIMEDOUT;
            }
            int64_t wait_ms = LMDB__WATCH_POLL_MS;
            if (timeout_ms >= 0 && (deadline - now) / 1000000 + 1 < wait_ms)
                wait_ms = (deadline - now) / 1000000 + 1;
            struct timespec ts = clock_deadline_ms(wait_ms);
            if (pthread_cond_timedwait(&w->cv, &ls->mu, &ts) != ETIMEDOUT) continue;
            skip_quiet_locked(w);
            if ((w->progress && w->rev > w->reported) || ls->notify_rev > w->rev ||
                changed_elsewhere_locked(w))
                break;
        }
        w->kicked = 0; /* commits from here on are read by the next fill() */
        pthread_mutex_unlock(&ls->mu);
    }
}

static int64_t lmdb_watch_revision(const store_watch_t *sw)
{
    /* w->rev is how far fill() read; buffered events not yet handed out lie
     * above what the caller has seen. */
    const lmdb_watch_t *w = (const lmdb_watch_t *)sw;
    if (w->pos < w->n) return w->evs[w->pos].kv.mod_rev - 1;
    return w->rev;
}

static void lmdb_watch_progress(store_watch_t *sw, int on)
{
    lmdb_watch_t *w = (lmdb_watch_t *)sw;
    w->progress = on;
    w->reported = w->rev;
}

static void lmdb_watch_request_progress(store_watch_t *sw)
{
    lmdb_watch_t *w = (lmdb_watch_t *)sw;
    pthread_mutex_lock(&w->ls->mu);
    w->kicked = 1;
    /* A commit under way now may be visible but not yet booked (notify_rev):
     * fill() stops below it, and if it writes nothing under the prefix its
     * bookkeeping would not wake the watch (the quiet range), leaving the
     * requested progress to the poll, LMDB__WATCH_POLL_MS later. */
    w->asked = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->ls->mu);
}

static void lmdb_watch_cancel(store_watch_t *sw)
{
    lmdb_watch_t *w = (lmdb_watch_t *)sw;
    pthread_mutex_lock(&w->ls->mu);
    w->cancelled = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->ls->mu);
}

void lmdb__watch_wake_locked(lmdb_store_t *ls, const char *key, size_t klen)
{
    for (lmdb_watch_t *w = ls->watches; w; w = w->next_w) {
        if (w->touched || klen < w->plen || memcmp(key, w->prefix, w->plen)) continue;
        w->touched = 1;
        if (w->kicked) continue;
        w->kicked = 1;
        pthread_cond_signal(&w->cv);
    }
}

void lmdb__watch_quiet_locked(lmdb_store_t *ls, int64_t first, int64_t last)
{
    for (lmdb_watch_t *w = ls->watches; w; w = w->next_w) {
        if (w->touched) { /* it reads these revisions; its range ends here */
            w->touched = w->asked = 0;
            continue;
        }
        if (w->quiet_hi != first) w->quiet_lo = first;
        w->quiet_hi = last;
        if (w->asked) { /* it may have stopped below this batch: read past it now */
            w->asked = 0;
            w->kicked = 1;
            pthread_cond_signal(&w->cv);
        }
    }
}

void lmdb__own_txn_locked(lmdb_store_t *ls, uint64_t txnid)
{
    /* A gap below txnid was someone else's (or ours, booked out of order:
     * that costs the watches one read each, nothing else). */
    if (txnid != ls->own_txnid + 1 && txnid - 1 > ls->foreign_txnid) ls->foreign_txnid = txnid - 1;
    if (txnid > ls->own_txnid) ls->own_txnid = txnid;
}

void lmdb__watch_wake_all_locked(lmdb_store_t *ls)
{
    for (lmdb_watch_t *w = ls->watches; w; w = w->next_w) pthread_cond_signal(&w->cv);
}

static void lmdb_watch_close(store_watch_t *sw)
{
    lmdb_watch_t *w = (lmdb_watch_t *)sw;
    pthread_mutex_lock(&w->ls->mu);
    *w->prev_w = w->next_w;
    if (w->next_w) w->next_w->prev_w = w->prev_w;
    pthread_mutex_unlock(&w->ls->mu);
    pthread_cond_destroy(&w->cv);
    buf_free(&w->bytes);
    free(w->evs);
    free(w->prefix);
    free(w);
}

int lmdb__watch_open(store_t *s, const char *prefix, int64_t after_rev, store_watch_t **out)
{
    lmdb_store_t *ls = (lmdb_store_t *)s;
    MDB_txn *txn;
    int64_t cur, compact;
    int rc = lmdb__rc(mdb_txn_begin(ls->env, NULL, MDB_RDONLY, &txn));
    if (rc) return rc;
    rc = lmdb__meta_get(txn, ls, "rev", &cur);
    if (!rc) rc = lmdb__meta_get(txn, ls, "compact", &compact);
    mdb_txn_abort(txn);
    if (rc) return rc;
    if (after_rev < 0) after_rev = cur;
    if (after_rev > cur) return KP_EFUTURE;
    if (after_rev < compact) return KP_ECOMPACTED;

    lmdb_watch_t *w = calloc(1, sizeof *w);
    if (!w || !(w->prefix = strdup(prefix)) || clock_cond_init(&w->cv)) {
        if (w) free(w->prefix);
        free(w);
        return KP_ENOMEM;
    }
    w->base.ops = &lmdb_watch_ops;
    w->ls = ls;
    w->plen = strlen(prefix);
    w->rev = after_rev;
    w->reported = after_rev;
    /* One event always fits, even with a maximal value and previous value. */
    buf_init(&w->bytes, LMDB__WATCH_BYTES + 2 * (STORE_VALUE_MAX + STORE_KEY_MAX + 2));
    pthread_mutex_lock(&ls->mu);
    w->next_w = ls->watches;
    if (w->next_w) w->next_w->prev_w = &w->next_w;
    w->prev_w = &ls->watches;
    ls->watches = w;
    pthread_mutex_unlock(&ls->mu);
    *out = &w->base;
    return 0;
}

static const store_watch_ops_t lmdb_watch_ops = {
    .next = lmdb_watch_next,
    .revision = lmdb_watch_revision,
    .progress = lmdb_watch_progress,
    .request_progress = lmdb_watch_request_progress,
    .cancel = lmdb_watch_cancel,
    .close = lmdb_watch_close,
};
