/*
 * lmdb_compact.c -- dropping old history, by hand and automatically.
 *
 * Compaction to C walks the log records in (old compaction point, C]. Each
 * record supersedes its key's previous record, which is dropped with its idx
 * entry; a delete record at or below C is dropped too (the key is gone at C).
 * What remains is invariant 4 of lmdb_int.h. The walk commits every
 * LMDB__COMPACT_STEP revisions, moving meta.compact each time, so readers see a
 * consistent store between steps and writers wait for one step at most.
 *
 * The automatic compactor is a thread that wakes every compact_interval_ms and
 * compacts to the newest revision the retention options allow.
 */
#include <string.h>

#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"
#include "lmdb_int.h"

/* Drop the log record at `rev` (of `key`) and its idx entry. */
static int drop_record(MDB_txn *txn, lmdb_store_t *ls, int64_t rev, const char *key, size_t klen)
{
    unsigned char rk[8];
    lmdb__rev_key(rev, rk);
    MDB_val lk = {8, rk}, ik = {klen, (void *)key}, iv = {8, rk};
    int rc = mdb_del(txn, ls->idx, &ik, &iv);
    if (!rc) rc = mdb_del(txn, ls->log, &lk, NULL);
    return rc;
}

/* One step: compact from the current point up to at most `target`.
 * *done is set when the compaction point reached `target`. */
static int compact_step(lmdb_store_t *ls, int64_t target, int first, int *done)
{
    MDB_txn *txn;
    int64_t cur, compact;
    lmdb__fail_t f = {.phase = LMDB__FAIL_CLEAN};
    int rc = mdb_txn_begin(ls->env, NULL, 0, &txn);
    if (rc) {
        f.mdb_rc = rc;
        if (rc == MDB_PANIC) f.phase = LMDB__FAIL_FATAL;
        rc = lmdb__rc(rc);
        goto failed;
    }
    if ((rc = lmdb__meta_get(txn, ls, "rev", &cur)) ||
        (rc = lmdb__meta_get(txn, ls, "compact", &compact)))
        goto abort;
    if (first && target <= compact) rc = KP_ECOMPACTED;
    else if (target > cur) rc = KP_EFUTURE;
    if (rc) goto abort;

    int64_t end = target - compact > LMDB__COMPACT_STEP ? compact + LMDB__COMPACT_STEP : target;
    for (int64_t r = compact + 1; r <= end; r++) {
        lmdb__logrec_t rec;
        const char *key;
        /* Copy the key: deleting records may move the page it lives on. */
        char kbuf[STORE_KEY_MAX];
        if ((rc = lmdb__log_get(txn, ls, r, &rec, &key, NULL, NULL))) {
            if (rc == KP_ENOTFOUND) rc = KP_ECORRUPT; /* invariant 1 */
            goto abort;
        }
        if (rec.key_len > sizeof kbuf) {
            rc = KP_ECORRUPT;
            goto abort;
        }
        memcpy(kbuf, key, rec.key_len);
        int mrc = 0;
        if (rec.prev_rev) mrc = drop_record(txn, ls, rec.prev_rev, kbuf, rec.key_len);
        if (!mrc && rec.type == LMDB__DEL) mrc = drop_record(txn, ls, r, kbuf, rec.key_len);
        if (mrc) {
            f.mdb_rc = mrc;
            rc = lmdb__rc(mrc);
            if (rc == KP_ENOTFOUND) rc = KP_ECORRUPT;
            goto abort;
        }
    }
    if ((rc = lmdb__meta_put(txn, ls, "compact", end))) goto abort;
    uint64_t id = (uint64_t)mdb_txn_id(txn);
    if ((rc = mdb_txn_commit(txn))) {
        /* No sync of our own follows: the next write's makes it durable. */
        f.mdb_rc = rc;
        rc = lmdb__rc(rc);
        if (lmdb__env_panicked(ls)) f.phase = LMDB__FAIL_FATAL;
        goto failed;
    }
    pthread_mutex_lock(&ls->mu);
    lmdb__own_txn_locked(ls, id);
    pthread_mutex_unlock(&ls->mu);
    *done = end == target;
    return 0;

abort:
    mdb_txn_abort(txn);
    if (rc == KP_ECOMPACTED || rc == KP_EFUTURE || rc == KP_ECORRUPT) return rc;
failed:
    /* An LMDB failure inside a write transaction: same rules as for writes
     * (SPACE in lmdb_int.h). */
    f.rc = rc;
    rc = lmdb__fail_classify(ls, &f, LMDB__RESERVE_MIN);
    pthread_mutex_lock(&ls->mu);
    lmdb__fail_locked(ls, &f);
    pthread_mutex_unlock(&ls->mu);
    return rc;
}

int lmdb__compact(store_t *s, int64_t rev)
{
    lmdb_store_t *ls = (lmdb_store_t *)s;
    int rc = 0, done = 0;
    pthread_mutex_lock(&ls->compact_mu);
    for (int first = 1; !rc && !done; first = 0) {
        pthread_mutex_lock(&ls->mu);
        /* Not while UNSYNCED: a compaction commit does not sync, and the
         * next commit must be one that does (SPACE c). While out of space
         * it may run: it frees pages inside the file for the next trial. */
        rc = ls->poisoned ? KP_EPOISONED : ls->unsynced ? KP_ENOSPC : 0;
        pthread_mutex_unlock(&ls->mu);
        if (!rc) rc = compact_step(ls, rev, first, &done);
    }
    pthread_mutex_unlock(&ls->compact_mu);
    return rc;
}

/* The newest revision in (compact, cur] committed at or before `cutoff_ns`,
 * or `compact` if none. Commit times only grow with revisions (up to wall
 * clock steps), so a binary search finds it. */
static int64_t newest_before(MDB_txn *txn, lmdb_store_t *ls, int64_t compact, int64_t cur,
                             int64_t cutoff_ns)
{
    int64_t lo = compact + 1, hi = cur, found = compact;
    while (lo <= hi) {
        int64_t mid = lo + (hi - lo) / 2;
        lmdb__logrec_t rec;
        if (lmdb__log_get(txn, ls, mid, &rec, NULL, NULL, NULL)) break;
        if (rec.time_ns <= cutoff_ns) {
            found = mid;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    return found;
}

/* The revision automatic compaction may compact to now (0: nothing to do). */
static int64_t auto_target(lmdb_store_t *ls)
{
    MDB_txn *txn;
    int64_t cur, compact, target = 0;
    if (mdb_txn_begin(ls->env, NULL, MDB_RDONLY, &txn)) return 0;
    if (lmdb__meta_get(txn, ls, "rev", &cur) || lmdb__meta_get(txn, ls, "compact", &compact))
        goto out;
    /* Each limit is a promise to keep history; honour both: take the older. */
    target = cur;
    if (ls->opt.keep_revisions && cur - ls->opt.keep_revisions < target)
        target = cur - ls->opt.keep_revisions;
    if (ls->opt.keep_seconds) {
        int64_t t = newest_before(txn, ls, compact, cur,
                                  clock_wall_ns() - ls->opt.keep_seconds * 1000000000);
        if (t < target) target = t;
    }
    if (target <= compact) target = 0;
out:
    mdb_txn_abort(txn);
    return target;
}

static void *compactor_main(void *arg)
{
    lmdb_store_t *ls = arg;
    int interval = ls->opt.compact_interval_ms ? ls->opt.compact_interval_ms : 5000;
    pthread_mutex_lock(&ls->mu);
    while (!ls->closing) {
        struct timespec ts = clock_deadline_ms(interval);
        pthread_cond_timedwait(&ls->compactor_cv, &ls->mu, &ts);
        if (ls->closing || ls->poisoned || ls->unsynced) continue;
        pthread_mutex_unlock(&ls->mu);

        int64_t target = auto_target(ls);
        if (target) {
            int rc = lmdb__compact(&ls->base, target);
            if (rc && rc != KP_ECOMPACTED)
                log_warn("store", "automatic compaction to %lld: %s", (long long)target,
                         err_str(rc));
            else if (!rc)
                log_debug("store", "compacted to revision %lld", (long long)target);
        }
        pthread_mutex_lock(&ls->mu);
    }
    pthread_mutex_unlock(&ls->mu);
    return NULL;
}

int lmdb__compactor_start(lmdb_store_t *ls)
{
    if (!ls->opt.keep_revisions && !ls->opt.keep_seconds) return 0;
    if (pthread_create(&ls->compactor, NULL, compactor_main, ls)) return KP_ENOMEM;
    ls->compactor_started = 1;
    return 0;
}

void lmdb__compactor_stop(lmdb_store_t *ls)
{
    if (!ls->compactor_started) return;
    pthread_mutex_lock(&ls->mu);
    ls->closing = 1;
    pthread_cond_broadcast(&ls->compactor_cv);
    pthread_mutex_unlock(&ls->mu);
    pthread_join(ls->compactor, NULL);
    ls->compactor_started = 0;
}
